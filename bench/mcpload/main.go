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
// The telemetry targets (otel.go) measure toolhost with its OpenTelemetry
// off, at its default and exporting traces:
//
//	go run ./bench/mcpload -toolhost bin/toolhost -e2e e2e
//	go run ./bench/mcpload -targets toolhost-otel-off,toolhost,toolhost-otel-100,toolhost-otel-1 -client raw
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	// postgres and redis are what the replica targets share.
	postgres, redis string
}

func main() {
	var (
		cfg        config
		clients    = flag.String("clients", "1,8", "comma-separated numbers of concurrent clients")
		targets    = flag.String("targets", "toolhost,everything,go-sdk", "servers to measure, in this order")
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
	flag.StringVar(&cfg.postgres, "postgres", os.Getenv("TOOLHOST_TEST_POSTGRES"), "with the replicas-1 and replicas-2 targets: the PostgreSQL they share")
	flag.StringVar(&cfg.redis, "redis", os.Getenv("TOOLHOST_TEST_REDIS"), "with the replicas-1 and replicas-2 targets: the Redis they share")
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
		"go-sdk":     floorTarget(),
		"replicas-1": replicasTarget(cfg, 1),
		"replicas-2": replicasTarget(cfg, 2),
	}
	sink, err := startSink()
	if err != nil {
		return err
	}
	defer sink.close()
	for key := range otelEnvs {
		all[key] = otelTarget(cfg, key, sink.url)
	}
	var results []result
	for _, name := range cfg.targets {
		t, ok := all[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("unknown target %q (want toolhost, everything, go-sdk, replicas-1, replicas-2, toolhost-otel-off, toolhost-otel-100, toolhost-otel-1)", name)
		}
		rs, err := measureTarget(ctx, cfg, t)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		results = append(results, rs...)
	}
	report(out, cfg, results)
	if n := sink.bytes.Load(); n > 0 {
		fmt.Fprintf(out, "\nOTLP trace exports received: %d bytes\n", n)
	}
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
