package tools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// BenchmarkExecute measures the pipeline's own work for one fast call
// (get_time): parse, validate, normalize, authorize (none), the journal's
// opened and finished writes into its spool file, the tool, the encoding.
// The store is in memory, so the figure leaves out what the store does with
// the spool later (BenchmarkJournalApply in store measures that).
//
//	go test -run '^$' -bench Execute -benchmem ./tools/
func BenchmarkExecute(b *testing.B) {
	ctx := context.Background()
	j := journal.New(journal.NewMemStore(), journal.Options{InstanceID: uuid.NewString(), SpoolDir: b.TempDir(), ApplyInterval: time.Hour})
	if _, err := j.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(j.Close)
	ex, err := tools.NewExecutor(tools.Options{Journal: j}, builtin.NewGetTime(time.Now))
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"timezone":"Asia/Shanghai"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := ex.Execute(ctx, tools.Proposal{Tool: "get_time", Args: args, CallID: uuid.NewString(),
			Caller: tools.Caller{Face: "mcp", SessionID: "bench-session"}})
		if err != nil || out.IsError {
			b.Fatalf("get_time: %v %+v", err, out)
		}
		if i%1024 == 1023 {
			// Apply the spool now and then, outside the timer: it holds a
			// bounded number of pending writes (appends would wait for
			// room), and applying is not what this benchmark measures.
			b.StopTimer()
			if err := j.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}
