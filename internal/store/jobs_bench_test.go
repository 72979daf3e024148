package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// stampTool notes when each of its calls starts, by the execution id.
type stampTool struct {
	mu      sync.Mutex
	started map[string]time.Time
	all     chan struct{}
	want    int
}

func (s *stampTool) Spec() catalog.Spec {
	return catalog.Spec{Name: "stamp", Version: "1.0.0", Title: catalog.Text{EN: "Stamp", ZH: "戳"},
		Description: catalog.Text{EN: "notes its start", ZH: "记下开始"},
		Input:       json.RawMessage(`{"type":"object"}`), SideEffect: catalog.SideEffectNone, Async: catalog.DeferredOK}
}

func (s *stampTool) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	s.mu.Lock()
	s.started[inv.ID] = time.Now()
	if len(s.started) == s.want {
		close(s.all)
	}
	s.mu.Unlock()
	return &tools.Result{Structured: map[string]any{}, Summary: "ok"}, nil
}

// BenchmarkJobEnqueueToStart: b.N deferred calls enqueued by 8 goroutines
// on one process that also works the queue; reports the enqueue-to-start
// latency (p50, p99) and the jobs started per second.
func BenchmarkJobEnqueueToStart(b *testing.B) {
	for name, db := range storetest.Open(b, "jobs_bench") {
		b.Run(name, func(b *testing.B) {
			jobs, err := db.Jobs(store.JobOptions{Workers: 8})
			if err != nil {
				b.Fatal(err)
			}
			j := journal.New(db, journal.Options{InstanceID: uuid.NewString()})
			defer j.Close()
			st := &stampTool{started: map[string]time.Time{}, all: make(chan struct{}), want: b.N}
			exec, err := tools.NewExecutor(tools.Options{Journal: j, Jobs: jobs, MaxJobsPerAccount: 1 << 30}, st)
			if err != nil {
				b.Fatal(err)
			}
			if err := jobs.Start(context.Background(), exec.RunJob); err != nil {
				b.Fatal(err)
			}
			defer jobs.Stop(context.Background())
			var mu sync.Mutex
			enqueued := map[string]time.Time{}
			next := make(chan struct{})
			go func() {
				for range b.N {
					next <- struct{}{}
				}
				close(next)
			}()
			b.ResetTimer()
			begin := time.Now()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range next {
						at := time.Now()
						out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "stamp", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync})
						if err != nil || out.Receipt == nil {
							b.Errorf("enqueue: %v %+v", err, out)
							return
						}
						mu.Lock()
						enqueued[out.ExecutionID] = at
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			<-st.all
			took := time.Since(begin)
			b.StopTimer()
			var lat []float64
			st.mu.Lock()
			for id, at := range enqueued {
				lat = append(lat, float64(st.started[id].Sub(at).Microseconds())/1000)
			}
			st.mu.Unlock()
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)/2], "p50-ms")
			b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
			b.ReportMetric(float64(b.N)/took.Seconds(), "jobs/s")
		})
	}
}
