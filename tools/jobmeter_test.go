package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// paidJob is a deferrable paid tool that bills units per run, as run_code
// bills its seconds.
type paidJob struct{ units float64 }

func (p paidJob) Spec() catalog.Spec {
	return catalog.Spec{Name: "paid_job", Version: "1.0.0", Title: catalog.Text{EN: "Paid job", ZH: "付费作业"},
		Description: catalog.Text{EN: "bills units", ZH: "计费"}, Input: json.RawMessage(`{"type":"object"}`),
		SideEffect: catalog.SideEffectSandbox, Async: catalog.DeferredOK, PaidUnit: "second"}
}

func (p paidJob) MaxUnits(*tools.Invocation) float64 { return p.units }

func (p paidJob) Call(context.Context, *tools.Invocation) (*tools.Result, error) {
	return &tools.Result{Text: "billed", Units: p.units}, nil
}

// meteredJobs is an executor behind a real key service over db with its
// job queue (not yet worked: start runs it), and a key of the limits.
func meteredJobs(t *testing.T, db *store.DB, clock *testClock, limits keys.Limits, tool tools.Tool) (*tools.Executor, *journal.Journal, *keys.Service, *keys.Key, func()) {
	t.Helper()
	return meteredJobsOn(t, db, db, clock, limits, tool)
}

// meteredJobsOn is meteredJobs with the key service's store ks.
func meteredJobsOn(t *testing.T, db *store.DB, ks keys.Store, clock *testClock, limits keys.Limits, tool tools.Tool) (*tools.Executor, *journal.Journal, *keys.Service, *keys.Key, func()) {
	t.Helper()
	jobs, err := db.Jobs(store.JobOptions{PollInterval: 20 * time.Millisecond, RetryDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	j := journal.New(db, journal.Options{InstanceID: uuid.NewString(), PollInterval: 10 * time.Millisecond})
	t.Cleanup(j.Close)
	svc := keys.New(keys.Options{Store: ks, Now: clock.Now})
	t.Cleanup(svc.Close)
	k, _, err := svc.CreateKey(context.Background(), "acme", "ci", []string{keys.ScopeMCP}, limits)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := tools.NewExecutor(tools.Options{Journal: j, Jobs: jobs, Authorizer: tools.KeysAuthorizer(svc), Clock: clock.Now}, tool)
	if err != nil {
		t.Fatal(err)
	}
	start := func() {
		if err := jobs.Start(context.Background(), exec.RunJob); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = jobs.Stop(context.Background()) })
	}
	return exec, j, svc, k, start
}

// A job's run is billed to its caller's key like an inline call, and a job
// that finds the key's monthly cap reached when it runs ends with the
// refusal inline calls get: two jobs of 3 units each are both admitted
// when enqueued under a cap of 3, one runs and bills 3, the other ends
// monthly_cap_reached.
func TestJobsAreMeteredToTheCallersKey(t *testing.T) {
	for name, open := range jobStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := newTestClock(monthEnd.Add(-time.Hour))
			exec, j, svc, k, start := meteredJobs(t, open(t), clock, keys.Limits{MonthlyUnitsCap: 3}, paidJob{units: 3})
			var ids []string
			for range 2 {
				out, err := exec.Execute(ctx, tools.Proposal{Tool: "paid_job", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync, Caller: callerOf(k)})
				if err != nil || out.IsError || out.Receipt == nil || out.Units != 0 {
					t.Fatalf("enqueue: %v %+v", err, out)
				}
				ids = append(ids, out.Receipt.ExecutionID)
			}
			if calls, units := paidUsage(t, svc, k, clock); calls != 0 || units != 0 {
				t.Errorf("usage once enqueued: %d calls, %v units; a job is counted when it runs", calls, units)
			}
			start()
			got := map[string]journal.Record{}
			for _, id := range ids {
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				r, err := j.Wait(wctx, k.AccountID, id)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				got[string(r.Status)+"/"+r.ErrorCode] = r
			}
			ran, okRan := got["success/"]
			refused, okRefused := got["denied/"+keys.CodeMonthlyCapReached]
			if !okRan || !okRefused || ran.Units != 3 {
				t.Fatalf("the two jobs ended %v, want one success of 3 units and one denied monthly_cap_reached", keysOf(got))
			}
			if refused.Lifecycle != journal.Finished || refused.State != journal.StateFailedBeforeCommit {
				t.Errorf("the refused job's record: %s %s", refused.Lifecycle, refused.State)
			}
			if calls, units := paidUsage(t, svc, k, clock); calls != 1 || units != 3 {
				t.Errorf("the key's usage of paid_job: %d calls, %v units, want 1 call of 3 units (the refused run is not a call)", calls, units)
			}
		})
	}
}

// paidUsage is the key's calls and units of paid_job this month.
func paidUsage(t *testing.T, svc *keys.Service, k *keys.Key, clock *testClock) (int64, float64) {
	t.Helper()
	rows, err := svc.Store().Usage(context.Background(), k.AccountID, keys.Month(clock.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var calls int64
	var units float64
	for _, r := range rows {
		if r.KeyID == k.ID && r.Tool == "paid_job" {
			calls, units = calls+r.Calls, units+r.Units
		}
	}
	return calls, units
}

func keysOf(m map[string]journal.Record) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// limitsDown is the key store with its monthly-cap accounting out of
// reach once down is set: the limit service that does not answer.
type limitsDown struct {
	keys.Store
	down atomic.Bool
}

func (l *limitsDown) ReserveCost(ctx context.Context, keyID, month string, cost, limit float64) (bool, float64, error) {
	if l.down.Load() {
		return false, 0, errors.New("limit store unreachable")
	}
	return l.Store.ReserveCost(ctx, keyID, month, cost, limit)
}

// A job whose every attempt fails (here the limit service never answers
// when it runs) is not left open once the queue gives up on it: its last
// attempt ends the record, error job_failed, with the attempts it had.
func TestAJobTheQueueGivesUpOnIsEnded(t *testing.T) {
	for name, open := range jobStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			ks := &limitsDown{Store: db}
			exec, j, _, k, start := meteredJobsOn(t, db, ks, newTestClock(monthEnd.Add(-time.Hour)), keys.Limits{MonthlyUnitsCap: 100}, paidJob{units: 1})
			out, err := exec.Execute(ctx, tools.Proposal{Tool: "paid_job", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync, Caller: callerOf(k)})
			if err != nil || out.Receipt == nil {
				t.Fatalf("enqueue: %v %+v", err, out)
			}
			ks.down.Store(true)
			start()
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			r, err := j.Wait(wctx, k.AccountID, out.Receipt.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != journal.StatusError || r.ErrorCode != tools.CodeJobFailed || r.AttemptNo != 5 || r.Lifecycle != journal.Finished {
				t.Fatalf("given up: %s %s attempt %d %s: %s", r.Status, r.ErrorCode, r.AttemptNo, r.Lifecycle, r.ErrorMessage)
			}
			if !strings.Contains(r.ErrorMessage, "after 5 attempts") || !strings.Contains(r.ErrorMessage, keys.CodeLimitsUnavailable) {
				t.Errorf("message: %s", r.ErrorMessage)
			}
			if _, err := exec.CancelJob(ctx, k.AccountID, r.ID); !errors.Is(err, tools.ErrJobFinished) {
				t.Errorf("cancel after it was given up: %v", err)
			}
		})
	}
}
