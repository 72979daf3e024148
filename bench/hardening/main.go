// Command hardening measures, through `toolhost serve` and real clients on
// loopback, what issue 14's hardening promises: count_tokens time is linear
// in its input; peak RSS with 32 concurrent fetches of a 9.5 MB page;
// peak RSS after 3,000 MCP sessions with a large clientInfo; the latency of
// a fresh client while 5,000 idle sockets are open. Each scenario runs on a
// server process of its own; peak RSS is the process's VmHWM.
//
//	go run ./bench/hardening -toolhost bin/toolhost [-only fetch,sessions,idle,count]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	nFetches   int
	fetchExtra string
	wasmCache  string // a warm <data>/wasm-cache to start servers from
)

func main() {
	bin := flag.String("toolhost", "bin/toolhost", "the toolhost binary")
	only := flag.String("only", "count,fetch,sessions,idle", "scenarios to run")
	flag.IntVar(&nFetches, "fetches", 32, "concurrent fetch_page calls")
	cold := flag.Bool("cold", false, "start each server with an empty runtime cache (it compiles run_code's runtimes)")
	flag.StringVar(&fetchExtra, "fetch-config", "", "extra fields of the fetch section, e.g. '\"body_budget_bytes\":10485760'")
	flag.Parse()
	ctx := context.Background()
	// A server keeps run_code's compiled runtimes in <data>/wasm-cache
	// across restarts; the first start of a fresh data folder compiles
	// them, which alone peaks at about 340 MiB of RSS whatever the
	// requests. Each scenario's server starts from a copy of a warm cache
	// unless -cold.
	if !*cold {
		dir, err := warmCache(ctx, *bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "warm the runtime cache: %v\n", err)
			os.Exit(1)
		}
		defer os.RemoveAll(filepath.Dir(dir))
		wasmCache = dir
	}
	for _, s := range strings.Split(*only, ",") {
		var err error
		switch s {
		case "count":
			err = countTokens(ctx, *bin)
		case "fetch":
			err = fetches(ctx, *bin)
		case "sessions":
			err = sessions(ctx, *bin)
		case "idle":
			err = idle(ctx, *bin)
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s, err)
			os.Exit(1)
		}
	}
}

// serve is one `toolhost serve --dev` process.
type serve struct {
	cmd  *exec.Cmd
	base string
	dir  string
}

func start(ctx context.Context, bin, config string) (*serve, error) {
	dir, err := os.MkdirTemp("", "hardening-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	if wasmCache != "" {
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			return nil, err
		}
		if err := os.CopyFS(filepath.Join(dir, "data", "wasm-cache"), os.DirFS(wasmCache)); err != nil {
			return nil, err
		}
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "serve", "--dev", "--addr", addr, "--data", filepath.Join(dir, "data"), "--config", cfg)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &serve{cmd: cmd, base: "http://" + addr, dir: dir}
	// Serving, and run_code's runtimes loaded (or found missing): they
	// load in the background after the server starts serving.
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			b, _ := os.ReadFile(log.Name())
			if n := strings.Count(string(b), `"msg":"sandbox runtime ready"`) + strings.Count(string(b), `"msg":"sandbox runtime missing"`); n >= 2 {
				return s, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("server did not start; log in %s", log.Name())
}

// warmCache starts a server on a fresh data folder, so that it compiles
// run_code's runtimes, and keeps a copy of its compilation cache.
func warmCache(ctx context.Context, bin string) (string, error) {
	s, err := start(ctx, bin, `{}`)
	if err != nil {
		return "", err
	}
	defer s.stop()
	_, peak := s.rss()
	fmt.Printf("(first start, compiling run_code's runtimes: peak RSS %.0f MiB)\n", peak)
	dir, err := os.MkdirTemp("", "hardening-wasm-cache-")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(filepath.Join(dir, "c"), os.DirFS(filepath.Join(s.dir, "data", "wasm-cache"))); err != nil {
		return "", err
	}
	return filepath.Join(dir, "c"), nil
}

func (s *serve) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.dir)
}

// rss returns the process's current and peak resident set, in MiB.
func (s *serve) rss() (cur, peak float64) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	for _, line := range strings.Split(string(b), "\n") {
		var kb float64
		if strings.HasPrefix(line, "VmRSS:") {
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "VmRSS:"), "%f", &kb); err == nil {
				cur = kb / 1024
			}
		}
		if strings.HasPrefix(line, "VmHWM:") {
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, "VmHWM:"), "%f", &kb); err == nil {
				peak = kb / 1024
			}
		}
	}
	return
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// countTokens times POST /v1/messages/count_tokens (the embedded
// estimate) with 1 MB of one repeated character and 1 MB of prose.
func countTokens(ctx context.Context, bin string) error {
	s, err := start(ctx, bin, `{}`)
	if err != nil {
		return err
	}
	defer s.stop()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return err
	}
	const size = 1 << 20
	texts := []struct{ name, text string }{
		{"1 MB of prose (README.md repeated)", strings.Repeat(string(readme), size/len(readme)+1)[:size]},
		{"1 MB of one repeated character", strings.Repeat("x", size)},
	}
	fmt.Println("## count_tokens (POST /v1/messages/count_tokens, embedded estimate), median of 7")
	for _, tc := range texts {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": tc.text}}})
		var times []time.Duration
		var tokens float64
		for i := 0; i < 7; i++ {
			t0 := time.Now()
			resp, err := http.Post(s.base+"/v1/messages/count_tokens", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			times = append(times, time.Since(t0))
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: status %d %v", tc.name, resp.StatusCode, out)
			}
			tokens, _ = out["input_tokens"].(float64)
		}
		fmt.Printf("| %s | %d tokens | %.1f ms |\n", tc.name, int(tokens), float64(median(times).Microseconds())/1000)
	}
	return nil
}

// fetches runs 32 concurrent fetch_page calls of a 9.5 MB HTML page served
// by Go's file server, each from its own MCP session.
func fetches(ctx context.Context, bin string) error {
	dir, err := os.MkdirTemp("", "hardening-page-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var page strings.Builder
	page.WriteString("<!doctype html><html><head><title>Big page</title></head><body><article><h1>Big page</h1>\n")
	for i := 0; page.Len() < 9_500_000; i++ {
		fmt.Fprintf(&page, "<p>Paragraph %d: perovskite encapsulation kept %d%% of its efficiency after %d hours of damp heat, according to test series %x.</p>\n", i, i%100, i*7%5000, i*2654435761)
	}
	page.WriteString("</article></body></html>\n")
	if err := os.WriteFile(filepath.Join(dir, "big.html"), []byte(page.String()), 0o644); err != nil {
		return err
	}
	pages := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = pages.Serve(ln) }() // ends with ErrServerClosed at Close
	defer pages.Close()

	s, err := start(ctx, bin, `{"fetch":{"allow_private":["127.0.0.1"],"ignore_robots":true,"cache_ttl":"-1s","timeout":"300s","per_host_concurrency":64,"queue_timeout":"300s"`+comma(fetchExtra)+`},
		"tools":{"default_timeout":"300s"}}`)
	if err != nil {
		return err
	}
	defer s.stop()
	before, _ := s.rss()
	n := nFetches
	var wg sync.WaitGroup
	errs := make([]string, n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "hardening", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.base + "/mcp"}, nil)
			if err != nil {
				errs[i] = err.Error()
				return
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fetch_page", Arguments: map[string]any{"url": fmt.Sprintf("http://%s/big.html?i=%d", ln.Addr(), i), "max_length": 2000}})
			switch {
			case err != nil:
				errs[i] = err.Error()
			case res.IsError:
				errs[i] = fmt.Sprint(res.Meta["toolhost/error"])
			}
		}()
	}
	wg.Wait()
	_, peak := s.rss()
	failed := 0
	for _, e := range errs {
		if e != "" {
			failed++
			fmt.Println("  error:", e)
		}
	}
	fmt.Printf("## fetch_page: %d concurrent calls of a 9.5 MB HTML page\n", n)
	fmt.Printf("| RSS before | peak RSS (VmHWM) | calls ok | wall |\n|--:|--:|--:|--:|\n| %.0f MiB | %.0f MiB | %d/%d | %.1f s |\n", before, peak, n-failed, n, time.Since(t0).Seconds())
	return nil
}

// initialize opens one MCP session with raw JSON-RPC and a clientInfo of
// infoBytes, and reports the HTTP status.
func initialize(hc *http.Client, base string, infoBytes int) (int, error) {
	info, _ := json.Marshal(map[string]any{"name": "hardening", "version": "1", "title": strings.Repeat("t", infoBytes)})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":` + string(info) + `}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode == 200 && sid != "" {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if r2, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, r2.Body)
			r2.Body.Close()
		}
	}
	return resp.StatusCode, nil
}

// sessions opens 3,000 sessions with a 60 KB clientInfo (refused at the
// cap), then, on a fresh server with the per-key cap raised so all stay
// open, 3,000 with a clientInfo just under the 8 KiB cap.
func sessions(ctx context.Context, bin string) error {
	fmt.Println("## MCP sessions: 3,000 initialize calls (one go, 8 at a time)")
	fmt.Println("| clientInfo | config | HTTP statuses | sessions open | RSS after | peak RSS |\n|---|---|---|--:|--:|--:|")
	for _, tc := range []struct {
		info   int
		config string
		label  string
	}{
		{0, `{"sandbox":{"python_pool":-1,"javascript_pool":-1}}`, "no sessions (baseline)"},
		{60 << 10, `{"sandbox":{"python_pool":-1,"javascript_pool":-1}}`, "defaults"},
		{60 << 10, `{"sandbox":{"python_pool":-1,"javascript_pool":-1},"mcp":{"sessions_per_key":4096,"max_client_info_bytes":65536,"max_body_bytes":4194304}}`, "clientInfo cap lifted to 64 KiB"},
		{8000, `{"sandbox":{"python_pool":-1,"javascript_pool":-1},"mcp":{"sessions_per_key":4096}}`, "sessions_per_key 4096"},
	} {
		s, err := start(ctx, bin, tc.config)
		if err != nil {
			return err
		}
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
		statuses := map[int]int{}
		var mu sync.Mutex
		jobs := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					code, err := initialize(hc, s.base, tc.info)
					mu.Lock()
					if err != nil {
						code = -1
					}
					statuses[code]++
					mu.Unlock()
				}
			}()
		}
		for i := 0; i < 3000 && tc.info > 0; i++ {
			jobs <- struct{}{}
		}
		close(jobs)
		wg.Wait()
		cur, peak := s.rss()
		open := 0
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
		}
		open = statuses[200]
		if open > 4096 {
			open = 4096
		}
		fmt.Printf("| %d KB | %s | %v | ≤ %d | %.0f MiB | %.0f MiB |\n", tc.info/1000, tc.label, statuses, min(open, capFor(tc.config)), cur, peak)
		s.stop()
	}
	return nil
}

func capFor(config string) int {
	if strings.Contains(config, "sessions_per_key") {
		return 4096
	}
	return 256
}

// idle opens 5,000 idle keep-alive sockets (after one GET /healthz each),
// from 20 loopback addresses, then times a fresh client's /healthz.
func idle(ctx context.Context, bin string) error {
	fmt.Println("## 5,000 idle keep-alive sockets, then a fresh client (GET /healthz, median of 20)")
	fmt.Println("| config | sockets served / refused at once | fresh client p50 | fresh client max | open after idle timeout |\n|---|--:|--:|--:|--:|")
	for _, tc := range []struct{ label, config string }{
		{"defaults (4096 in all, 256 per address)", `{"server":{"idle_timeout":"5s"}}`},
		{"max_connections 8192", `{"server":{"idle_timeout":"5s","max_connections":8192}}`},
	} {
		s, err := start(ctx, bin, tc.config)
		if err != nil {
			return err
		}
		addr := strings.TrimPrefix(s.base, "http://")
		var conns []net.Conn
		served, refused := 0, 0
		for i := 0; i < 5000; i++ {
			src := fmt.Sprintf("127.0.%d.2", 1+i/250)
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return err
			}
			fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					served++
				} else {
					refused++
				}
			} else {
				refused++
			}
			conns = append(conns, c)
		}
		var lat []time.Duration
		for i := 0; i < 20; i++ {
			t0 := time.Now()
			resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}).Get(s.base + "/healthz")
			if err != nil {
				return fmt.Errorf("fresh client: %w", err)
			}
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
		}
		time.Sleep(7 * time.Second)
		stillOpen := 0
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					stillOpen++
				}
			}
			c.Close()
		}
		fmt.Printf("| %s | %d / %d | %.2f ms | %.2f ms | %d |\n", tc.label, served, refused,
			float64(median(lat).Microseconds())/1000, float64(slices.Max(lat).Microseconds())/1000, stillOpen)
		s.stop()
	}
	return nil
}

func comma(s string) string {
	if s == "" {
		return ""
	}
	return "," + s
}
