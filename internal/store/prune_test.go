package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
)

// writeRecords inserts n finished records (and one open one) created at
// at, at+1ms, …, with a whole result and an idempotency key for the first.
func writeRecords(t testing.TB, db *store.DB, prefix string, at time.Time, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ws []journal.Write
	var ids []string
	for i := range n {
		c := at.Add(time.Duration(i) * time.Millisecond)
		id := fmt.Sprintf("%s-%05d", prefix, i)
		ids = append(ids, id)
		ws = append(ws, journal.Write{Insert: true, Record: journal.Record{ID: id, AccountID: "acct", ToolName: "get_time", SideEffectLevel: "none",
			Status: journal.StatusSuccess, Lifecycle: journal.Finished, Commit: journal.CommitCommitted, State: journal.StateObserved,
			StartedAt: c, CreatedAt: c, FinishedAt: c}, Events: []journal.Event{{Seq: 0, State: journal.StateObserved, At: c}}})
		if len(ws) == 500 || i == n-1 {
			if err := db.Write(ctx, ws); err != nil {
				t.Fatal(err)
			}
			ws = ws[:0]
		}
	}
	return ids
}

func exists(t *testing.T, db *store.DB, id string) bool {
	t.Helper()
	_, err := db.Get(context.Background(), "acct", id)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// Retention deletes finished records older than the window (with their
// whole results, the idempotency keys naming them and old round records)
// and the oldest beyond the row cap, in batches; newer and open records
// stay. A writer running beside it waits for at most one batch: its
// longest write is logged (the figure of docs/operations.md).
func TestPruneKeepsTheWindowAndTheCap(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *store.DB{"sqlite": OpenSQLite, "postgres": OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			base := time.UnixMilli(1_790_000_000_000).UTC()
			oldIDs := writeRecords(t, db, "old", base, 1200)
			newIDs := writeRecords(t, db, "new", base.Add(time.Hour), 300)
			openRec := journal.Record{ID: "open-old", AccountID: "acct", ToolName: "sleep", SideEffectLevel: "none", Status: journal.StatusRunning,
				Lifecycle: journal.Opened, Commit: journal.CommitPending, State: journal.StateExecuting, StartedAt: base, CreatedAt: base}
			if err := db.Write(ctx, []journal.Write{{Insert: true, Record: openRec}}); err != nil {
				t.Fatal(err)
			}
			if err := db.PutResult(ctx, journal.FullResult{ExecutionID: oldIDs[0], AccountID: "acct", Text: []byte("whole")}); err != nil {
				t.Fatal(err)
			}
			if err := db.InsertRound(ctx, "acct", "req_old", "run", 1, base, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if err := db.InsertRound(ctx, "acct", "req_new", "run", 1, base.Add(time.Hour), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}

			// A writer beside the pruner: its slowest write is what a batch costs it.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var slowest time.Duration
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					t0 := time.Now()
					writeRecords(t, db, fmt.Sprintf("live%d", i), base.Add(2*time.Hour), 1)
					slowest = max(slowest, time.Since(t0))
				}
			})
			res, err := db.Prune(ctx, store.PruneOptions{Before: base.Add(time.Hour), Batch: 100})
			close(stop)
			wg.Wait()
			t.Logf("%s: pruned %d records in batches of 100; the writer's slowest write took %v", name, res.Records, slowest)
			if err != nil || res.Records != 1200 || res.Rounds != 1 || res.Skipped {
				t.Fatalf("prune = %+v, %v; want 1200 records and 1 round", res, err)
			}
			if exists(t, db, oldIDs[0]) || exists(t, db, oldIDs[1199]) || !exists(t, db, newIDs[0]) || !exists(t, db, "open-old") {
				t.Fatal("the window was not kept: old records stay or new or open ones went")
			}
			if _, err := db.GetResult(ctx, "acct", oldIDs[0]); !errors.Is(err, journal.ErrNotFound) {
				t.Fatalf("the whole result of a pruned record: %v", err)
			}
			if got, _ := db.RoundsOfRequest(ctx, "acct", "req_old"); len(got) != 0 {
				t.Fatal("an old round record stayed")
			}
			if got, _ := db.RoundsOfRequest(ctx, "acct", "req_new"); len(got) != 1 {
				t.Fatal("a new round record went")
			}
			// The cap: the oldest finished go until 100 rows are left.
			if _, err := db.Prune(ctx, store.PruneOptions{MaxRows: 100, Batch: 64}); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM tool_executions`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 100 || !exists(t, db, "open-old") || exists(t, db, newIDs[0]) {
				t.Fatalf("after the cap: %d rows, open kept %v, oldest new kept %v", n, exists(t, db, "open-old"), exists(t, db, newIDs[0]))
			}
		})
	}
}
