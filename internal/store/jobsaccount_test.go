package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// newClockedRig is newJobRig's executor on a test clock, with the
// store's account settings, not working the queue.
func newClockedRig(t *testing.T, db *store.DB, side catalog.SideEffect) (jobRig, *testClock, *journal.Journal) {
	t.Helper()
	jobs, err := db.Jobs(store.JobOptions{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	j := journal.New(db, journal.Options{InstanceID: uuid.NewString(), Clock: clock.now})
	t.Cleanup(j.Close)
	g := newGate(side)
	exec, err := tools.NewExecutor(tools.Options{Journal: j, Jobs: jobs, Settings: db, Sessions: db, Clock: clock.now,
		Policies: map[string]approval.Policy{"gate": approval.Never}}, g)
	if err != nil {
		t.Fatal(err)
	}
	return jobRig{exec: exec, jobs: jobs, gate: g}, clock, j
}

// runTo runs attempt n of the job; stop makes it a process that stops
// mid-call (the record stays running), else the tool answers.
func runTo(t *testing.T, r jobRig, id string, n int, stop bool) error {
	t.Helper()
	run := tools.JobRun{AccountID: tools.LocalAccount, ExecutionID: id, Attempt: n, Cancelled: func() bool { return false }}
	if !stop {
		return r.exec.RunJob(context.Background(), run)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.exec.RunJob(ctx, run) }()
	<-r.gate.started
	cancel()
	return <-errc
}

// A job river ends without its worker (discarded after its rescues,
// cancelled, deleted from its table) leaves its record open; the audit
// closes it once it has been seen lost for the grace, as replay_safety
// says.
func TestAuditClosesTheRecordsOfLostJobs(t *testing.T) {
	cases := []struct {
		name     string
		side     catalog.SideEffect
		started  bool   // an attempt ran and its process stopped mid-call
		queue    string // what happens to river's job: delete, discarded, cancelled
		status   journal.Status
		code     string
		endState journal.State
	}{
		{"queued job deleted", catalog.SideEffectNone, false, "delete", journal.StatusError, tools.CodeJobLost, journal.StateFailedBeforeCommit},
		{"running sandbox job discarded", catalog.SideEffectSandbox, true, "discarded", journal.StatusError, tools.CodeJobLost, journal.StateFailedBeforeCommit},
		{"running irreversible job discarded", catalog.SideEffectIrreversible, true, "discarded", journal.StatusUncertain, tools.CodeOutcomeUnknown, journal.StateOutcomeUnknown},
		{"queued irreversible job cancelled", catalog.SideEffectIrreversible, false, "cancelled", journal.StatusError, tools.CodeCancelled, journal.StateCancelledBeforeCommit},
		{"running sandbox job cancelled", catalog.SideEffectSandbox, true, "cancelled", journal.StatusError, tools.CodeJobLost, journal.StateFailedBeforeCommit},
		{"running irreversible job deleted", catalog.SideEffectIrreversible, true, "delete", journal.StatusUncertain, tools.CodeOutcomeUnknown, journal.StateOutcomeUnknown},
		{"queued job completed without its record", catalog.SideEffectNone, false, "completed", journal.StatusError, tools.CodeJobLost, journal.StateFailedBeforeCommit},
		{"record naming no river job", catalog.SideEffectNone, false, "garbage id", journal.StatusError, tools.CodeJobLost, journal.StateFailedBeforeCommit},
	}
	for name, db := range storetest.Open(t, "jobs_lost") {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				r, clock, _ := newClockedRig(t, db, tc.side)
				out := r.deferCall(t)
				alive := r.deferCall(t) // a job river still has: never closed
				if tc.started {
					if err := runTo(t, r, out.ExecutionID, 1, true); !errors.Is(err, tools.ErrHandedBack) {
						t.Fatalf("attempt: %v", err)
					}
				}
				jobID := out.Receipt.RuntimeJobID
				q := `DELETE FROM river_job WHERE id = ` + jobID
				switch tc.queue {
				case "garbage id":
					jobID = "9223372036854775808\u202e<b>x</b>"
					q = `UPDATE tool_executions SET runtime_job_id = '` + jobID + `' WHERE id = '` + out.ExecutionID + `'`
				case "delete":
				default:
					q = `UPDATE river_job SET state = '` + tc.queue + `', finalized_at = CURRENT_TIMESTAMP WHERE id = ` + jobID
				}
				if _, err := db.SQL().ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
				audit := r.exec.NewJobAudit(time.Minute)
				for i, step := range []struct {
					advance time.Duration
					closed  int
				}{{0, 0}, {30 * time.Second, 0}, {30 * time.Second, 1}, {time.Minute, 0}} {
					clock.add(step.advance)
					n, err := audit.Check(ctx)
					if err != nil || n != step.closed {
						t.Fatalf("check %d: closed %d (%v), want %d", i, n, err, step.closed)
					}
				}
				rec, err := db.Get(ctx, tools.LocalAccount, out.ExecutionID)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Lifecycle != journal.Finished || rec.Status != tc.status || rec.ErrorCode != tc.code || rec.State != tc.endState {
					t.Fatalf("closed %s %s code %s state %s, want %s %s %s", rec.Lifecycle, rec.Status, rec.ErrorCode, rec.State, tc.status, tc.code, tc.endState)
				}
				if !strings.Contains(rec.ErrorMessage, jobID) {
					t.Fatalf("the message names no job: %q", rec.ErrorMessage)
				}
				if other, _ := db.Get(ctx, tools.LocalAccount, alive.ExecutionID); other.Lifecycle != journal.Opened {
					t.Fatalf("a job river still has was closed: %+v", other)
				}
				if n := r.gate.runs.Load(); n > 1 {
					t.Fatalf("the tool ran %d times", n)
				}
			})
		}
	}
}

// Two audits (two replicas) close a lost job's record once.
func TestTwoAuditsCloseALostJobOnce(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_lost_twice") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r, clock, _ := newClockedRig(t, db, catalog.SideEffectNone)
			out := r.deferCall(t)
			if _, err := db.SQL().ExecContext(ctx, `DELETE FROM river_job WHERE id = `+out.Receipt.RuntimeJobID); err != nil {
				t.Fatal(err)
			}
			a, b := r.exec.NewJobAudit(time.Second), r.exec.NewJobAudit(time.Second)
			for _, au := range []*tools.JobAudit{a, b} {
				if _, err := au.Check(ctx); err != nil {
					t.Fatal(err)
				}
			}
			clock.add(time.Second)
			na, erra := a.Check(ctx)
			nb, errb := b.Check(ctx)
			if erra != nil || errb != nil || na+nb != 1 {
				t.Fatalf("closed %d and %d (%v, %v), want once in all", na, nb, erra, errb)
			}
			evs, err := db.Events(ctx, tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			ends := 0
			for _, e := range evs {
				if e.State == journal.StateFailedBeforeCommit {
					ends++
				}
			}
			if ends != 1 {
				t.Fatalf("%d end events, want 1", ends)
			}
		})
	}
}

// A finished job's result goes when its account's retention passes: the
// record stays and says so; reading the result is result_expired. Another
// account's, without a retention, stays.
func TestJobResultsExpireWithTheAccountsRetention(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_retention") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r, clock, _ := newClockedRig(t, db, catalog.SideEffectNone)
			if err := db.SetJobLimits(ctx, tools.LocalAccount, tools.JobLimits{ResultRetention: time.Hour, UpdatedAt: clock.now()}); err != nil {
				t.Fatal(err)
			}
			out := r.deferCall(t)
			close(r.gate.release)
			if err := runTo(t, r, out.ExecutionID, 1, false); err != nil {
				t.Fatal(err)
			}
			for i, step := range []struct {
				at      time.Duration
				expired int64
			}{{59 * time.Minute, 0}, {2 * time.Minute, 1}, {time.Hour, 0}} {
				clock.add(step.at)
				n, err := db.ExpireJobResults(ctx, clock.now())
				if err != nil || n != step.expired {
					t.Fatalf("pass %d: expired %d (%v), want %d", i, n, err, step.expired)
				}
			}
			rec, err := db.Get(ctx, tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.ResultExpiredAt.IsZero() || rec.Result != nil || rec.ResultText != "" || rec.Status != journal.StatusSuccess {
				t.Fatalf("expired record: expired_at %v result %s text %q status %s", rec.ResultExpiredAt, rec.Result, rec.ResultText, rec.Status)
			}
			if v := admin.Execution(rec); v.ResultExpiredAt == nil || v.Result != nil {
				t.Fatalf("view: %+v", v)
			}
			_, err = r.exec.ReadResult(ctx, tools.Caller{}, tools.ReadResultInput{ExecutionID: out.ExecutionID})
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tools.CodeResultExpired {
				t.Fatalf("read: %v, want result_expired", err)
			}
			limits, err := db.JobLimits(ctx, "another")
			if err != nil || limits != (tools.JobLimits{}) {
				t.Fatalf("another account's limits: %+v %v", limits, err)
			}
		})
	}
}

// An account's own limits: max_jobs refuses one more job; max_running
// makes a job wait queued (snoozed) while another runs.
func TestAccountJobLimits(t *testing.T) {
	for name, db := range storetest.Open(t, "jobs_account_limits") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r, _, j := newClockedRig(t, db, catalog.SideEffectSandbox)
			if err := db.SetJobLimits(ctx, tools.LocalAccount, tools.JobLimits{MaxJobs: 2, MaxRunning: 1}); err != nil {
				t.Fatal(err)
			}
			first, second := r.deferCall(t), r.deferCall(t)
			out, err := r.exec.Execute(ctx, tools.Proposal{Tool: "gate", Args: json.RawMessage(`{}`), Delivery: tools.DeliveryAsync})
			if err != nil || out.Code != tools.CodeJobLimit {
				t.Fatalf("third job: %+v %v, want job_limit", out, err)
			}
			errc := make(chan error, 1)
			go func() {
				errc <- r.exec.RunJob(ctx, tools.JobRun{AccountID: tools.LocalAccount, ExecutionID: first.ExecutionID, Attempt: 1, Cancelled: func() bool { return false }})
			}()
			<-r.gate.started
			err = r.exec.RunJob(ctx, tools.JobRun{AccountID: tools.LocalAccount, ExecutionID: second.ExecutionID, Attempt: 1, Last: true})
			var snooze *tools.SnoozeError
			if !errors.As(err, &snooze) {
				t.Fatalf("second job: %v, want a snooze", err)
			}
			if rec, _ := db.Get(ctx, tools.LocalAccount, second.ExecutionID); rec.Status != journal.StatusQueued || rec.Lifecycle != journal.Opened {
				t.Fatalf("the snoozed job: %s %s", rec.Status, rec.Lifecycle)
			}
			close(r.gate.release)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if err := runTo(t, r, second.ExecutionID, 2, false); err != nil {
				t.Fatal(err)
			}
			evs, err := db.Events(ctx, tools.LocalAccount, second.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if got := admin.RunnerInstance(evs); got != j.InstanceID() {
				t.Fatalf("runner %q, want this process %q", got, j.InstanceID())
			}
		})
	}
}

// An account overrides a builtin's default delivery mode: a call without
// a delivery of its own then runs as a job; async_job of an inline_only
// tool, an unknown or look-alike name and an invalid mode are refused.
func TestAccountOverridesABuiltinsDeliveryMode(t *testing.T) {
	refusals := []struct {
		name, tool string
		mode       tools.Delivery
		want       string // a tools.Error code, or "no_such_builtin"
	}{
		{"inline_only tool made async", "read_result", tools.DeliveryAsync, tools.CodeDeliveryUnsupported},
		{"unknown tool", "nope", tools.DeliveryAsync, "no_such_builtin"},
		{"huge name", strings.Repeat("g", 1<<16), tools.DeliveryInline, "no_such_builtin"},
		{"zero-width space", "gate\u200b", tools.DeliveryAsync, "no_such_builtin"},
		{"cyrillic a", "g\u0430te", tools.DeliveryAsync, "no_such_builtin"},
		{"upper case", "GATE", tools.DeliveryAsync, "no_such_builtin"},
		{"NUL", "gate\x00", tools.DeliveryAsync, "no_such_builtin"},
		{"upper-case mode", "gate", "ASYNC_JOB", tools.CodeInvalidArgs},
		{"markup mode", "gate", "<b>async_job</b>", tools.CodeInvalidArgs},
		{"mode with NUL", "gate", "async_job\x00", tools.CodeInvalidArgs},
	}
	for name, db := range storetest.Open(t, "jobs_builtin_settings") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r, _, _ := newClockedRig(t, db, catalog.SideEffectNone)
			for _, tc := range refusals {
				_, err := r.exec.SetBuiltinSetting(ctx, tools.LocalAccount, tc.tool, tc.mode)
				var te *tools.Error
				switch {
				case tc.want == "no_such_builtin" && errors.Is(err, tools.ErrNoSuchBuiltin):
				case errors.As(err, &te) && te.Code == tc.want:
				default:
					t.Fatalf("%s: %v, want %s", tc.name, err, tc.want)
				}
			}
			st, err := r.exec.BuiltinSetting(ctx, tools.LocalAccount, "gate")
			if err != nil || st.DefaultDeliveryMode != "inline" || st.DefaultDeliveryModeBasis != "tool_declared" || st.Override != nil {
				t.Fatalf("before: %+v %v", st, err)
			}
			st, err = r.exec.SetBuiltinSetting(ctx, tools.LocalAccount, "gate", tools.DeliveryAsync)
			if err != nil || st.DefaultDeliveryMode != "async_job" || st.DefaultDeliveryModeBasis != tools.BasisAccountOverride {
				t.Fatalf("set: %+v %v", st, err)
			}
			out, err := r.exec.Execute(ctx, tools.Proposal{Tool: "gate", Args: json.RawMessage(`{}`)})
			if err != nil || out.Receipt == nil {
				t.Fatalf("a call without a delivery: %+v %v, want a receipt", out, err)
			}
			if err := db.CreateSession(ctx, session.Session{ID: "sess_settings", AccountID: tools.LocalAccount, Metadata: json.RawMessage(`{}`),
				CreatedAt: time.Unix(1, 0), UpdatedAt: time.Unix(1, 0)}); err != nil {
				t.Fatal(err)
			}
			cat, err := r.exec.Runtime(ctx, tools.LocalAccount, "sess_settings", "")
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range cat.Tools {
				want, basis := "inline", "tool_declared"
				if tool.Name == "gate" {
					want, basis = "async_job", tools.BasisAccountOverride
				}
				if tool.DefaultDeliveryMode != want || tool.MetadataBasisDetail["default_delivery_mode"].Basis != basis {
					t.Fatalf("runtime catalog: %s is %s (%+v), want %s (%s)", tool.Name, tool.DefaultDeliveryMode, tool.MetadataBasisDetail["default_delivery_mode"], want, basis)
				}
			}
			// Another account keeps the tool's own default; inline still forces inline.
			if st, _ := r.exec.BuiltinSetting(ctx, "another", "gate"); st.DefaultDeliveryMode != "inline" {
				t.Fatalf("another account: %+v", st)
			}
			if _, err := r.exec.SetBuiltinSetting(ctx, tools.LocalAccount, "gate", tools.DeliveryDefault); err != nil {
				t.Fatal(err)
			}
			if ds, err := db.BuiltinDeliveries(ctx, tools.LocalAccount); err != nil || len(ds) != 0 {
				t.Fatalf("after the removal: %v %v", ds, err)
			}
		})
	}
}
