package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// gateTool is a deferrable tool that counts its runs and, when gated,
// waits until released or cancelled.
type gateTool struct {
	side    catalog.SideEffect
	runs    atomic.Int64
	started chan struct{}
	release chan struct{}
}

func newGate(side catalog.SideEffect) *gateTool {
	return &gateTool{side: side, started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gateTool) Spec() catalog.Spec {
	return catalog.Spec{Name: "gate", Version: "1.0.0", Title: catalog.Text{EN: "Gate", ZH: "闸"},
		Description: catalog.Text{EN: "waits for the test", ZH: "等待测试"},
		Input:       json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		SideEffect:  g.side, Async: catalog.DeferredOK}
}

func (g *gateTool) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	g.runs.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.release:
		return &tools.Result{Structured: map[string]any{"ok": true, "deferred": inv.Deferred}, Summary: "done"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type jobRig struct {
	exec *tools.Executor
	jobs *store.Jobs
	gate *gateTool
}

// newJobRig is an executor over db with its job queue; started says
// whether this process works the queue.
func newJobRig(t *testing.T, db *store.DB, side catalog.SideEffect, started bool) jobRig {
	t.Helper()
	jobs, err := db.Jobs(store.JobOptions{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	j := journal.New(db, journal.Options{InstanceID: uuid.NewString()})
	t.Cleanup(j.Close)
	g := newGate(side)
	exec, err := tools.NewExecutor(tools.Options{Journal: j, Jobs: jobs,
		Policies: map[string]approval.Policy{"gate": approval.Never}}, g)
	if err != nil {
		t.Fatal(err)
	}
	if started {
		if err := jobs.Start(context.Background(), exec.RunJob); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { jobs.Stop(context.Background()) })
	}
	return jobRig{exec: exec, jobs: jobs, gate: g}
}

func (r jobRig) deferCall(t *testing.T) *tools.Outcome {
	t.Helper()
	out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "gate", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync})
	if err != nil {
		t.Fatal(err)
	}
	if out.IsError || out.Receipt == nil {
		t.Fatalf("want a receipt, got %+v", out)
	}
	return out
}

func TestDeferredCallRunsAsAJobAndEndsInTheJournal(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_run") {
		t.Run(name, func(t *testing.T) {
			r := newJobRig(t, db, catalog.SideEffectSandbox, true)
			out := r.deferCall(t)
			rec, err := db.Get(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.DeliveryMode != "async_job" || rec.RuntimeJobID != out.Receipt.RuntimeJobID || rec.Lifecycle != journal.Opened {
				t.Fatalf("queued record: %+v", rec)
			}
			<-r.gate.started
			close(r.gate.release)
			done, err := r.exec.Journal().Wait(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if done.Status != journal.StatusSuccess || string(done.Result) != `{"deferred":true,"ok":true}` {
				t.Fatalf("finished record: status %s result %s", done.Status, done.Result)
			}
			if n := r.gate.runs.Load(); n != 1 {
				t.Fatalf("the tool ran %d times", n)
			}
		})
	}
}

func TestCancelledQueuedJobNeverRuns(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_cancel_queued") {
		t.Run(name, func(t *testing.T) {
			r := newJobRig(t, db, catalog.SideEffectNone, false)
			out := r.deferCall(t)
			rec, err := r.exec.CancelJob(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Lifecycle != journal.Finished || rec.ErrorCode != tools.CodeCancelled || rec.State != journal.StateCancelledBeforeCommit {
				t.Fatalf("cancelled record: %+v", rec)
			}
			if _, err := r.exec.CancelJob(context.Background(), tools.LocalAccount, out.ExecutionID); !errors.Is(err, tools.ErrJobFinished) {
				t.Fatalf("second cancel: %v, want ErrJobFinished", err)
			}
			if _, err := r.exec.CancelJob(context.Background(), "another", out.ExecutionID); !errors.Is(err, tools.ErrJobNotFound) {
				t.Fatalf("another account's cancel: %v, want ErrJobNotFound", err)
			}
			// A process that works the queue now finds nothing to run.
			w := newJobRig(t, db, catalog.SideEffectNone, true)
			probe := w.deferCall(t)
			<-w.gate.started
			close(w.gate.release)
			if _, err := w.exec.Journal().Wait(context.Background(), tools.LocalAccount, probe.ExecutionID); err != nil {
				t.Fatal(err)
			}
			if n := w.gate.runs.Load() + r.gate.runs.Load(); n != 1 {
				t.Fatalf("%d runs, want only the probe's", n)
			}
		})
	}
}

func TestCancelledRunningJobEndsCancelled(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_cancel_running") {
		t.Run(name, func(t *testing.T) {
			r := newJobRig(t, db, catalog.SideEffectSandbox, true)
			out := r.deferCall(t)
			<-r.gate.started
			rec, err := r.exec.CancelJob(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Lifecycle != journal.Opened {
				t.Fatalf("a running job's record ends when its run does, not at the cancel: %+v", rec)
			}
			done, err := r.exec.Journal().Wait(context.Background(), tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if done.ErrorCode != tools.CodeCancelled || done.State != journal.StateCancelledBeforeCommit {
				t.Fatalf("record: code %s state %s", done.ErrorCode, done.State)
			}
		})
	}
}

func TestAsyncOfAnInlineOnlyToolIsRefused(t *testing.T) {
	db := storetest.Open(t, "jobs_inline")["sqlite"]
	r := newJobRig(t, db, catalog.SideEffectNone, false)
	out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "read_result", Args: json.RawMessage(`{"execution_id":"x"}`), Delivery: tools.DeliveryAsync})
	if err != nil {
		t.Fatal(err)
	}
	if !out.IsError || out.Code != tools.CodeDeliveryUnsupported {
		t.Fatalf("want delivery_unsupported, got %+v", out)
	}
}

// An attempt that stops mid-call (its process stopping, or dying: the
// record stays running either way) is followed by one that runs a
// sandbox call again and ends an irreversible one uncertain, unsent.
func TestAttemptAfterAStoppedOneFollowsReplaySafety(t *testing.T) {
	cases := []struct {
		side     catalog.SideEffect
		runs     int64
		status   journal.Status
		endState journal.State
	}{
		{catalog.SideEffectSandbox, 2, journal.StatusSuccess, journal.StateObserved},
		{catalog.SideEffectIrreversible, 1, journal.StatusUncertain, journal.StateOutcomeUnknown},
	}
	for name, db := range storetest.Open(t, "jobs_replay") {
		for _, tc := range cases {
			t.Run(name+"/"+string(tc.side), func(t *testing.T) {
				r := newJobRig(t, db, tc.side, false)
				out := r.deferCall(t)
				run := tools.JobRun{AccountID: tools.LocalAccount, ExecutionID: out.ExecutionID, Attempt: 1, Cancelled: func() bool { return false }}
				ctx, stop := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() { errc <- r.exec.RunJob(ctx, run) }()
				<-r.gate.started
				stop() // the process stops: the attempt is handed back
				if err := <-errc; !errors.Is(err, tools.ErrHandedBack) {
					t.Fatalf("first attempt: %v, want ErrHandedBack", err)
				}
				rec, _ := db.Get(context.Background(), tools.LocalAccount, out.ExecutionID)
				if rec.Status != journal.StatusRunning || rec.Lifecycle != journal.Opened {
					t.Fatalf("after the stopped attempt: %s %s", rec.Status, rec.Lifecycle)
				}
				close(r.gate.release)
				run.Attempt = 2
				if err := r.exec.RunJob(context.Background(), run); err != nil {
					t.Fatal(err)
				}
				done, _ := db.Get(context.Background(), tools.LocalAccount, out.ExecutionID)
				if done.Status != tc.status || done.State != tc.endState || done.Lifecycle != journal.Finished {
					t.Fatalf("ended %s in %s (%s), want %s in %s", done.Status, done.State, done.Lifecycle, tc.status, tc.endState)
				}
				if n := r.gate.runs.Load(); n != tc.runs {
					t.Fatalf("the tool ran %d times, want %d", n, tc.runs)
				}
			})
		}
	}
}

func TestJobStatsCountTheQueue(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_stats") {
		t.Run(name, func(t *testing.T) {
			r := newJobRig(t, db, catalog.SideEffectNone, false)
			for range 3 {
				r.deferCall(t)
			}
			s, err := r.jobs.Stats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s.Queued != 3 || s.Running != 0 || s.OldestQueuedAge < 0 {
				t.Fatalf("stats %+v, want 3 queued", s)
			}
		})
	}
}
