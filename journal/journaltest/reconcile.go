package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/journal"
)

func testLiveness(t *testing.T, s journal.Store) {
	c := ctx(t)
	me := uuid.NewString()
	if alive, err := s.Alive(c, uuid.NewString()); err != nil || alive {
		t.Errorf("unknown instance alive=%v err=%v", alive, err)
	}
	if err := s.Hold(c, me); err != nil {
		t.Fatal(err)
	}
	if alive, err := s.Alive(c, me); err != nil || !alive {
		t.Errorf("held instance alive=%v err=%v", alive, err)
	}
	// Probing must not steal or drop the mark.
	if alive, err := s.Alive(c, me); err != nil || !alive {
		t.Errorf("held instance, second probe: alive=%v err=%v", alive, err)
	}
}

func testReconcile(t *testing.T, s journal.Store) {
	c := ctx(t)
	live := uuid.NewString()
	if err := s.Hold(c, live); err != nil {
		t.Fatal(err)
	}
	dead := uuid.NewString()
	mk := func(id, inst, effect string, states ...journal.State) journal.Write {
		r := rec(id, base)
		r.InstanceID, r.SideEffectLevel, r.State = inst, effect, states[len(states)-1]
		return journal.Write{Insert: true, Record: r, Events: evs(states...)}
	}
	pre := []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorized}
	mustWrite(t, s,
		mk("ro", dead, "none", append(pre, journal.StateExecuting)...),
		mk("sb", dead, "sandbox", append(pre, journal.StatePrepared, journal.StateExecuting)...),
		mk("ir", dead, "irreversible", append(pre, journal.StatePrepared, journal.StateExecuting)...),
		mk("alive", live, "none", append(pre, journal.StateExecuting)...),
		mk("wait", dead, "irreversible", journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAwaitingApproval),
	)
	j := journal.New(s, journal.Options{InstanceID: uuid.NewString(), Clock: func() time.Time { return base.Add(time.Minute) }})
	defer j.Close()
	n, err := j.Start(c)
	if err != nil || n != 4 {
		t.Fatalf("Start reconciled %d, %v; want 4", n, err)
	}
	want := map[string]struct {
		status journal.Status
		commit journal.Commit
		state  journal.State
	}{
		"ro":    {journal.StatusTimeout, journal.CommitDiscarded, journal.StateFailedBeforeCommit},
		"sb":    {journal.StatusUncertain, journal.CommitUncertain, journal.StateOutcomeUnknown},
		"ir":    {journal.StatusUncertain, journal.CommitUncertain, journal.StateOutcomeUnknown},
		"alive": {journal.StatusRunning, journal.CommitPending, journal.StateExecuting},
		// waiting for its user's approval: nothing ran
		"wait": {journal.StatusError, journal.CommitDiscarded, journal.StateCancelledBeforeCommit},
	}
	for id, w := range want {
		r, err := s.Get(c, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != w.status || r.Commit != w.commit || r.State != w.state {
			t.Errorf("%s: %s/%s/%s, want %s/%s/%s", id, r.Status, r.Commit, r.State, w.status, w.commit, w.state)
		}
		events, err := s.Events(c, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		last := events[len(events)-1]
		if id == "alive" {
			if r.Lifecycle != journal.Opened {
				t.Errorf("a live instance's call was closed")
			}
			continue
		}
		var detail struct {
			Reason     string `json:"reason"`
			Reconciled bool   `json:"reconciled"`
		}
		if err := json.Unmarshal(last.Detail, &detail); err != nil || !detail.Reconciled || detail.Reason != journal.ReconcileReason {
			t.Errorf("%s: last event %+v does not say it was reconciled", id, last)
		}
		if r.Lifecycle != journal.Finished || !r.FinishedAt.Equal(base.Add(time.Minute)) || r.Duration != time.Minute {
			t.Errorf("%s: lifecycle %s finished %v duration %v", id, r.Lifecycle, r.FinishedAt, r.Duration)
		}
	}
	if n, err := j.Reconcile(c); err != nil || n != 0 {
		t.Errorf("second reconcile closed %d, %v", n, err)
	}
}

// A duplicate waiting for a call whose process died (its liveness mark
// gone) gets the call reconciled at once, by whichever waiter sees it
// first: read-only discarded (its key free again), side effects uncertain;
// a live holder's call is waited for.
func testWaitReconcilesADeadHolder(t *testing.T, s journal.Store) {
	c := ctx(t)
	live := uuid.NewString()
	if err := s.Hold(c, live); err != nil {
		t.Fatal(err)
	}
	dead := uuid.NewString()
	pre := []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorized}
	mk := func(id, inst, effect string, states ...journal.State) journal.Write {
		r := rec(id, base)
		r.InstanceID, r.SideEffectLevel, r.State = inst, effect, states[len(states)-1]
		return journal.Write{Insert: true, Record: r, Events: evs(states...)}
	}
	mustWrite(t, s,
		mk("ro", dead, "none", append(pre, journal.StateExecuting)...),
		mk("sb", dead, "sandbox", append(pre, journal.StatePrepared, journal.StateExecuting)...),
		mk("alive", live, "none", append(pre, journal.StateExecuting)...),
	)
	clock := func() time.Time { return base.Add(time.Minute) }
	a := journal.New(s, journal.Options{InstanceID: uuid.NewString(), Clock: clock, PollInterval: time.Millisecond})
	b := journal.New(s, journal.Options{InstanceID: uuid.NewString(), Clock: clock, PollInterval: time.Millisecond})
	defer a.Close()
	defer b.Close()
	for id, want := range map[string]journal.Commit{"ro": journal.CommitDiscarded, "sb": journal.CommitUncertain} {
		r, err := a.Wait(c, "acct", id)
		if err != nil || r.Lifecycle != journal.Finished || r.Commit != want {
			t.Fatalf("%s: wait = %+v %v, want finished %s", id, r.Commit, err, want)
		}
		// The second waiter finds it finished; nothing is written twice.
		if r2, err := b.Wait(c, "acct", id); err != nil || r2.Commit != want {
			t.Fatalf("%s: second waiter = %s %v", id, r2.Commit, err)
		}
		evs, err := s.Events(c, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		var detail struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(last.Detail, &detail); err != nil || detail.Reason != journal.ReconcileReasonReplica || evs[len(evs)-2].State == last.State {
			t.Fatalf("%s: events end %+v", id, evs[len(evs)-2:])
		}
	}
	wctx, cancel := context.WithTimeout(c, 50*time.Millisecond)
	defer cancel()
	if _, err := a.Wait(wctx, "acct", "alive"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a live holder's call: %v, want waiting until the deadline", err)
	}
}
