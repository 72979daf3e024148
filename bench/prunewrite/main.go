// Command prunewrite measures what the journal's pruner costs a writer:
// on each store (SQLite in a temporary directory; PostgreSQL in a schema
// of its own, dropped at the end, when -postgres is given) it writes
// -old finished records, then measures one writer — single-record
// journal writes in a closed loop, as the journal applies its spool —
// first alone for -baseline, then while store.Prune deletes those
// records in batches of -batch (serve's job), and prints a Markdown
// table of the write latencies of both phases (count, p50, p99, max)
// with the prune's duration.
//
//	go run ./bench/prunewrite -postgres "$TOOLHOST_TEST_POSTGRES"
//
// It reads the wall clock: it measures, it asserts nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/toolhost/toolhost/bench/benchstore"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
)

func main() {
	pg := flag.String("postgres", "", "PostgreSQL URL (a schema of its own is created and dropped); empty: SQLite only")
	old := flag.Int("old", 50000, "records to prune")
	batch := flag.Int("batch", 500, "records per prune batch (serve's job: 500)")
	baseline := flag.Duration("baseline", 5*time.Second, "how long the writer runs alone")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fmt.Println("| store | writer | writes | p50 ms | p99 ms | max ms |")
	fmt.Println("|---|---|--:|--:|--:|--:|")
	dir, err := os.MkdirTemp("", "prunewrite")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	targets, err := benchstore.Targets(dir, *pg, "prunewrite")
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range targets {
		if err := run(ctx, t, *old, *batch, *baseline); err != nil {
			log.Fatalf("%s: %v", t.Name, err)
		}
	}
}

func run(ctx context.Context, t benchstore.Target, old, batch int, baseline time.Duration) error {
	db, closeStore, err := benchstore.Open(ctx, t)
	if err != nil {
		return err
	}
	defer closeStore()
	base := time.UnixMilli(1_790_000_000_000).UTC()
	for i := 0; i < old; i += 500 {
		if err := db.Write(ctx, records("old", base, i, min(500, old-i))); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	live := base.Add(2 * time.Hour)
	alone, err := writeUntil(ctx, db, "alone", live, func() bool { return false }, time.Now().Add(baseline))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	var res store.PruneResult
	t0 := time.Now()
	go func() {
		var err error
		res, err = db.Prune(ctx, store.PruneOptions{Before: base.Add(time.Hour), Batch: batch})
		done <- err
	}()
	var perr error
	finished := func() bool {
		select {
		case perr = <-done:
			return true
		default:
			return false
		}
	}
	beside, err := writeUntil(ctx, db, "beside", live, finished, time.Time{})
	if err != nil {
		return err
	}
	if perr != nil {
		return fmt.Errorf("prune: %w", perr)
	}
	took := time.Since(t0)
	row(t.Name, "alone", alone)
	row(t.Name, fmt.Sprintf("beside the pruner (%d records in batches of %d, %.1f s)", res.Records, batch, took.Seconds()), beside)
	return nil
}

// writeUntil writes one record at a time until stop says so or the
// deadline (when set) passes, and returns each write's latency.
func writeUntil(ctx context.Context, db *store.DB, prefix string, at time.Time, stop func() bool, deadline time.Time) ([]time.Duration, error) {
	var lat []time.Duration
	for i := 0; !stop() && (deadline.IsZero() || time.Now().Before(deadline)); i++ {
		w := records(prefix, at, i, 1)
		t0 := time.Now()
		if err := db.Write(ctx, w); err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// records are n finished records created 1 ms apart from at+from ms.
func records(prefix string, at time.Time, from, n int) []journal.Write {
	ws := make([]journal.Write, 0, n)
	for i := from; i < from+n; i++ {
		c := at.Add(time.Duration(i) * time.Millisecond)
		ws = append(ws, journal.Write{Insert: true, Record: journal.Record{ID: fmt.Sprintf("%s-%07d", prefix, i), AccountID: "acct",
			ToolName: "get_time", SideEffectLevel: "none", Status: journal.StatusSuccess, Lifecycle: journal.Finished,
			Commit: journal.CommitCommitted, State: journal.StateObserved, StartedAt: c, CreatedAt: c, FinishedAt: c},
			Events: []journal.Event{{Seq: 0, State: journal.StateObserved, At: c}}})
	}
	return ws
}

func row(name, writer string, lat []time.Duration) {
	if len(lat) == 0 {
		fmt.Printf("| %s | %s | 0 | | | |\n", name, writer)
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	fmt.Printf("| %s | %s | %d | %s | %s | %s |\n", name, writer, len(lat),
		ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1]))
}
