package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

func jobsOf(t *testing.T, db *store.DB) *store.Jobs {
	t.Helper()
	jobs, err := db.Jobs(store.JobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// The account's job-start lock: in one process a second taker of the same
// account waits (a cancelled wait ends with its context) and another
// account's does not; on PostgreSQL another process finds it busy at once
// and takes it once it is released (the advisory lock went with the
// release, not with the connection back to the pool); at most two
// connections are held for starts at once.
func TestJobStartLock(t *testing.T) {
	for name, dbs := range storetest.Replicas(t, "jobs_start_lock") {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a, b := jobsOf(t, dbs[0]), jobsOf(t, dbs[1])
			release, busy, err := a.HoldStart(ctx, "acme")
			if err != nil || busy {
				t.Fatalf("first hold: busy %t, %v", busy, err)
			}
			gone, stop := context.WithCancel(ctx)
			stop()
			if _, _, err := a.HoldStart(gone, "acme"); !errors.Is(err, context.Canceled) {
				t.Fatalf("a second hold in this process: %v, want it to wait until its context ends", err)
			}
			other, busy, err := a.HoldStart(ctx, "globex")
			if err != nil || busy {
				t.Fatalf("another account: busy %t, %v", busy, err)
			}
			other()
			if name == "postgres" {
				if _, busy, err := b.HoldStart(ctx, "acme"); err != nil || !busy {
					t.Fatalf("another process: busy %t, %v; want busy", busy, err)
				}
				// Two connections held for starts at once: a third
				// account's start waits for one of them.
				second, busy, err := a.HoldStart(ctx, "initech")
				if err != nil || busy {
					t.Fatalf("a second account's hold: busy %t, %v", busy, err)
				}
				if _, _, err := a.HoldStart(gone, "umbrella"); !errors.Is(err, context.Canceled) {
					t.Fatalf("a third connection: %v, want a wait until its context ends", err)
				}
				second()
			}
			release()
			for i, j := range []*store.Jobs{b, a} {
				again, busy, err := j.HoldStart(ctx, "acme")
				if err != nil || busy {
					t.Fatalf("hold %d after the release: busy %t, %v", i, busy, err)
				}
				again()
			}
		})
	}
}

// A job of an account under max_running does not start while another
// process is starting one of the account's jobs: it is snoozed, its
// record still queued and the tool not run; once that start is over it
// runs.
func TestJobWaitsForAnotherProcesssStart(t *testing.T) {
	dbs, ok := storetest.Replicas(t, "jobs_start_turns")["postgres"]
	if !ok {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _, _ := newClockedRig(t, dbs[0], catalog.SideEffectSandbox)
	if err := dbs[0].SetJobLimits(ctx, tools.LocalAccount, tools.JobLimits{MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	out := r.deferCall(t)
	release, busy, err := jobsOf(t, dbs[1]).HoldStart(ctx, tools.LocalAccount)
	if err != nil || busy {
		t.Fatalf("the other process's hold: busy %t, %v", busy, err)
	}
	run := tools.JobRun{AccountID: tools.LocalAccount, ExecutionID: out.ExecutionID, Attempt: 1, Cancelled: func() bool { return false }}
	err = r.exec.RunJob(ctx, run)
	var snooze *tools.SnoozeError
	if !errors.As(err, &snooze) || snooze.After != time.Second {
		t.Fatalf("a job while another process starts one: %v, want a 1 s snooze", err)
	}
	if rec, _ := dbs[0].Get(ctx, tools.LocalAccount, out.ExecutionID); rec.Status != journal.StatusQueued || r.gate.runs.Load() != 0 {
		t.Fatalf("the snoozed job: %s, %d runs", rec.Status, r.gate.runs.Load())
	}
	release()
	close(r.gate.release)
	if err := r.exec.RunJob(ctx, run); err != nil {
		t.Fatal(err)
	}
	if rec, _ := dbs[0].Get(ctx, tools.LocalAccount, out.ExecutionID); rec.Status != journal.StatusSuccess || r.gate.runs.Load() != 1 {
		t.Fatalf("after the other start: %s, %d runs", rec.Status, r.gate.runs.Load())
	}
}
