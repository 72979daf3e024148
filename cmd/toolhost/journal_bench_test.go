package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// BenchmarkJournalOverhead measures tools/call get_time over the real MCP
// HTTP server in-process, 1 and 8 client sessions at once, with the journal on an
// in-memory store (the baseline: nothing durable), and on SQLite and
// PostgreSQL (when TOOLHOST_TEST_POSTGRES is set) as serve runs them, with
// the spool; the "-direct" rows write every record to the store and wait
// for it (journal.spool false, with serve's journal.commit_delay or
// BENCH_COMMIT_DELAY). It reports calls/s, the p50/p99 latency of one call
// as the client sees it and the CPU per call:
//
//	go test -run '^$' -bench JournalOverhead -benchtime 3000x -count 3 ./cmd/toolhost/
func BenchmarkJournalOverhead(b *testing.B) {
	type backend struct {
		name  string
		spool bool
		open  func(b *testing.B) journal.Store
	}
	sqlite := func(b *testing.B) journal.Store {
		db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "toolhost.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	backends := []backend{
		{"memory", false, func(*testing.B) journal.Store { return journal.NewMemStore() }},
		{"sqlite", true, sqlite},
		{"sqlite-direct", false, sqlite},
	}
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		postgres := func(b *testing.B) journal.Store {
			schema := "th_bench_" + uuid.NewString()[:8]
			sep := "?"
			if slices.Contains([]byte(base), '?') {
				sep = "&"
			}
			db, err := store.Open(context.Background(), base+sep+"search_path="+schema, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				db.SQL().Exec("DROP SCHEMA " + schema + " CASCADE")
				db.Close()
			})
			return db
		}
		backends = append(backends, backend{"postgres", true, postgres}, backend{"postgres-direct", false, postgres})
	}
	for _, be := range backends {
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/clients=%d", be.name, clients), func(b *testing.B) {
				benchJournal(b, be.open(b), be.spool, clients)
			})
		}
	}
}

func benchJournal(b *testing.B, st journal.Store, spool bool, clients int) {
	// serve's default unless BENCH_COMMIT_DELAY says otherwise
	delay := config.DefaultCommitDelay
	if v := os.Getenv("BENCH_COMMIT_DELAY"); v != "" {
		delay, _ = time.ParseDuration(v)
	}
	opts := journal.Options{InstanceID: uuid.NewString(), CommitDelay: delay}
	if spool {
		opts.SpoolDir = b.TempDir()
	}
	j := journal.New(st, opts)
	b.Cleanup(j.Close)
	if _, err := j.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	exec, err := tools.NewExecutor(tools.Options{Journal: j}, builtin.All()...)
	if err != nil {
		b.Fatal(err)
	}
	mcpSrv := mcpface.New(exec, mcpface.Options{})
	srv := httptest.NewServer(server.New(server.Options{MCP: mcpSrv.Handler()}).Handler())
	b.Cleanup(srv.Close)
	sessions := make([]*sdk.ClientSession, clients)
	for i := range sessions {
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		sessions[i] = cs
	}
	call := func(cs *sdk.ClientSession) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatalf("get_time: %v %+v", err, res)
		}
		return time.Since(t0)
	}
	for _, cs := range sessions { // warm up connections and caches
		for range 20 {
			call(cs)
		}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				lat[i] = append(lat[i], call(cs))
			}
		}()
	}
	wg.Wait()
	// Everything spooled is in the store before the clock stops.
	if err := j.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	// CPU per call (server and client together) does not depend on
	// how busy the machine is, unlike the two figures above.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/call")
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
