package runcode

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// The benchmarks run run_code through the Executor, the pipeline `toolhost
// call` and the MCP face use:
//
//	go test -run '^$' -bench . -benchtime 30x ./tools/runcode/
//
// BenchmarkLatency reports p50/p99 per call; "warm" waits for a full pool
// before each call (an idle server), "cold" has no pool.
// BenchmarkThroughput reports sustained runs/s at concurrency 1, 2 and 8 with
// the pool refilling in the background.

var benchPrograms = map[sandbox.Language]string{
	sandbox.Python:     `{"language":"python","code":"print(1)"}`,
	sandbox.JavaScript: `{"language":"javascript","code":"1+2"}`,
}

func benchCall(ex *tools.Executor, args string) error {
	out, err := ex.Execute(context.Background(), tools.Proposal{Tool: "run_code", Args: json.RawMessage(args)})
	if err != nil {
		return err
	}
	if out.IsError {
		return fmt.Errorf("%s: %s", out.Code, out.Message)
	}
	return nil
}

func percentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

func BenchmarkLatency(b *testing.B) {
	for _, lang := range []sandbox.Language{sandbox.Python, sandbox.JavaScript} {
		for _, mode := range []string{"warm", "cold"} {
			b.Run(fmt.Sprintf("%s/%s", lang, mode), func(b *testing.B) {
				cfg := sandbox.Config{}
				if mode == "cold" {
					cfg.PythonPool, cfg.JavaScriptPool = -1, -1
				}
				sb := newSandbox(b, cfg)
				defer sb.Close()
				ex := newExecutor(b, sb)
				lat := make([]time.Duration, 0, b.N)
				ctx := context.Background()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if err := sb.Ready(ctx, lang); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					if err := benchCall(ex, benchPrograms[lang]); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				percentiles(b, lat)
			})
		}
	}
}

func BenchmarkThroughput(b *testing.B) {
	for _, lang := range []sandbox.Language{sandbox.Python, sandbox.JavaScript} {
		for _, conc := range []int{1, 2, 8} {
			b.Run(fmt.Sprintf("%s/c%d", lang, conc), func(b *testing.B) {
				sb := newSandbox(b, sandbox.Config{Concurrency: conc, QueueLength: 64})
				defer sb.Close()
				ex := newExecutor(b, sb)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if err := benchCall(ex, benchPrograms[lang]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
			})
		}
	}
}
