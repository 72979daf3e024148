package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// measure opens n sessions, warms up, then runs the closed-loop load for
// cfg.duration or cfg.maxCalls calls.
func measure(ctx context.Context, cfg config, hc *http.Client, endpoint string, t target, kind string, n, pid int) (result, error) {
	sessions, err := openSessions(ctx, hc, endpoint, t, kind, n)
	defer func() {
		for _, cs := range sessions {
			if cs != nil {
				_ = cs.close()
			}
		}
	}()
	if err != nil {
		return result{}, err
	}
	if cfg.warmup > 0 {
		if _, err := runPhase(ctx, sessions, cfg.warmup, cfg.maxCalls); err != nil {
			return result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	server0, self0, err := cpuTimes(pid)
	if err != nil {
		return result{}, err
	}
	ph, err := runPhase(ctx, sessions, cfg.duration, cfg.maxCalls)
	if err != nil {
		return result{}, err
	}
	server1, self1, err := cpuTimes(pid)
	if err != nil {
		return result{}, err
	}
	merged := slices.Concat(ph.lat...)
	slices.Sort(merged)
	return result{
		server:    t.name,
		tool:      t.tool,
		client:    kind,
		serverCPU: server1 - server0,
		clientCPU: self1 - self0,
		clients:   n,
		calls:     ph.ok,
		errors:    ph.failed,
		firstErr:  ph.firstErr,
		elapsed:   ph.elapsed,
		p50:       percentile(merged, 0.50),
		p99:       percentile(merged, 0.99),
	}, nil
}

// openSessions opens n sessions of the kind of client asked for, each
// calling t's tool. The sessions opened are returned with an error too,
// for the caller to close.
func openSessions(ctx context.Context, hc *http.Client, endpoint string, t target, kind string, n int) ([]caller, error) {
	sessions := make([]caller, n)
	for i := range sessions {
		name := fmt.Sprintf("mcpload-%d", i)
		if kind == "raw" {
			rs, err := connectRaw(ctx, hc, endpoint, name, t.tool, t.args)
			if err != nil {
				return sessions, err
			}
			sessions[i] = rs
			continue
		}
		cs, err := connect(ctx, hc, endpoint, name)
		if err != nil {
			return sessions, err
		}
		sessions[i] = sdkSession{cs: cs, tool: t.tool, args: t.args, check: t.check}
	}
	return sessions, nil
}

// cpuTimes reads the CPU time of the server process pid and of this one.
func cpuTimes(pid int) (server, self time.Duration, err error) {
	if server, err = cpuTime(pid); err != nil {
		return 0, 0, err
	}
	if self, err = cpuTime(os.Getpid()); err != nil {
		return 0, 0, err
	}
	return server, self, nil
}

// phase is what one run of the closed loop measured.
type phase struct {
	lat        [][]time.Duration // per session, of the successful calls
	ok, failed int64
	elapsed    time.Duration
	firstErr   error // the first failure, for the log
}

// runPhase runs every session in a closed loop until d has passed or the
// call budget is spent. It fails when no call succeeded.
func runPhase(ctx context.Context, sessions []caller, d time.Duration, budget int64) (phase, error) {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var issued, failed atomic.Int64
	lat := make([][]time.Duration, len(sessions))
	errs := make([]error, len(sessions))
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
	ph := phase{lat: lat, failed: failed.Load(), elapsed: min(time.Since(start), d)}
	for _, l := range lat {
		ph.ok += int64(len(l))
	}
	if ph.ok == 0 {
		return phase{}, fmt.Errorf("no successful call: %w", errors.Join(errs...))
	}
	for _, e := range errs {
		if e != nil {
			ph.firstErr = e
			break
		}
	}
	return ph, nil
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
