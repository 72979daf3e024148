package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
)

// Round records are read by account and request in the order they were
// made, kept once when written twice, and pruned by age in batches.
func TestRoundRecordsOnBothStores(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *store.DB{"sqlite": OpenSQLite, "postgres": OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			at := time.UnixMilli(1_790_000_000_000)
			ins := func(account, req, run string, round int, at time.Time, rec string) {
				t.Helper()
				if err := db.InsertRound(ctx, account, req, run, round, at, []byte(rec)); err != nil {
					t.Fatal(err)
				}
			}
			ins("a", "req_1", "run_1", 1, at, `{"round":1}`)
			ins("a", "req_1", "run_1", 2, at.Add(time.Second), `{"round":2}`)
			ins("a", "req_1", "run_1", 2, at.Add(time.Second), `{"round":2,"again":true}`)
			ins("b", "req_1", "run_9", 1, at, `{"other":true}`)
			// Hostile ids and text: a NUL and invalid UTF-8 are kept as U+FFFD.
			ins("a\x00", "req_\xff", "run", 1, at, "{\"t\":\"\x00\"}")
			got, err := db.RoundsOfRequest(ctx, "a", "req_1")
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%s", got) != `[{"round":1} {"round":2}]` {
				t.Fatalf("rounds of a/req_1 = %s", got)
			}
			if got, _ := db.RoundsOfRequest(ctx, "a\x00", "req_\xff"); len(got) != 1 {
				t.Fatalf("hostile ids read back %d records", len(got))
			}
			if got, _ := db.RoundsOfRequest(ctx, "c", "req_1"); got == nil || len(got) != 0 {
				t.Fatalf("an unknown account reads %v", got)
			}
			n, err := db.PruneRounds(ctx, at.Add(time.Millisecond), 2)
			if err != nil || n != 2 {
				t.Fatalf("prune = %d %v, want a batch of 2", n, err)
			}
			n, _ = db.PruneRounds(ctx, at.Add(time.Millisecond), 2)
			if n != 1 {
				t.Fatalf("second prune = %d, want the last old record", n)
			}
			if got, _ := db.RoundsOfRequest(ctx, "a", "req_1"); len(got) != 1 || string(got[0]) != `{"round":2}` {
				t.Fatalf("after pruning: %s", got)
			}
		})
	}
}
