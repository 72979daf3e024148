package journal

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestTransitionRules(t *testing.T) {
	allowed := map[[2]State]bool{}
	for from, tos := range transitions {
		for _, to := range tos {
			allowed[[2]State{from, to}] = true
		}
	}
	// Every pair of states is either an edge of §6.2 (plus our idempotency
	// exits) or refused.
	want := [][2]State{
		{StateProposed, StateParsed}, {StateProposed, StateParseRejected},
		{StateProposed, StateAuthorizationRejected}, // rate and concurrency limits come before parsing
		{StateParsed, StateValidated}, {StateParsed, StateValidationRejected},
		{StateValidated, StateAuthorized}, {StateValidated, StateAuthorizationRejected},
		{StateAuthorized, StatePrepared}, {StateAuthorized, StateExecuting},
		{StateAuthorized, StateIdempotencyRejected}, {StateAuthorized, StateDeduplicated},
		{StatePrepared, StateExecuting}, {StatePrepared, StateCancelledBeforeCommit}, {StatePrepared, StateFailedBeforeCommit},
		{StateExecuting, StateCommitted}, {StateExecuting, StateObserved}, {StateExecuting, StateCancelledBeforeCommit},
		{StateExecuting, StateFailedBeforeCommit}, {StateExecuting, StateOutcomeUnknown},
		{StateCommitted, StateObserved}, {StateCommitted, StateFailedAfterCommit}, {StateCommitted, StateOutcomeUnknown},
		// the wait for a user's approval
		{StateValidated, StateAwaitingApproval}, {StateAwaitingApproval, StateAuthorized},
		{StateAwaitingApproval, StateAuthorizationRejected}, {StateAwaitingApproval, StateCancelledBeforeCommit},
	}
	if len(want) != len(allowed) {
		t.Fatalf("transition table has %d edges, the rules list %d", len(allowed), len(want))
	}
	for _, from := range States {
		for _, to := range States {
			ok := slices.Contains(want, [2]State{from, to})
			if CanMove(from, to) != ok {
				t.Errorf("CanMove(%s, %s) = %v, want %v", from, to, !ok, ok)
			}
			tr := ResumeTrail(nil, from, 3)
			err := tr.Move(to, nil)
			var ill *IllegalTransitionError
			switch {
			case ok && err != nil:
				t.Errorf("Move %s → %s: %v", from, to, err)
			case !ok && !errors.As(err, &ill):
				t.Errorf("Move %s → %s = %v, want an IllegalTransitionError", from, to, err)
			case !ok && tr.State() != from:
				t.Errorf("refused move %s → %s changed the state to %s", from, to, tr.State())
			}
		}
	}
}

func TestTerminalStatesHaveNoExit(t *testing.T) {
	terminal := []State{StateObserved, StateParseRejected, StateValidationRejected, StateAuthorizationRejected,
		StateCancelledBeforeCommit, StateFailedBeforeCommit, StateOutcomeUnknown, StateFailedAfterCommit,
		StateIdempotencyRejected, StateDeduplicated}
	for _, s := range States {
		if got, want := s.Terminal(), slices.Contains(terminal, s); got != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, got, want)
		}
	}
}

func TestTrailNumbersEventsAndSkipsNoStep(t *testing.T) {
	clock := func() time.Time { return time.Unix(100, 0) }
	tr := NewTrail(clock, map[string]int{"n": 1})
	for _, s := range []State{StateParsed, StateValidated, StateAuthorized} {
		if err := tr.Move(s, nil); err != nil {
			t.Fatal(err)
		}
	}
	first := tr.Take()
	if err := tr.Move(StateObserved, nil); err == nil {
		t.Fatal("AUTHORIZED → OBSERVED was allowed: a call may not skip EXECUTING")
	}
	if err := tr.Move(StateExecuting, nil); err != nil {
		t.Fatal(err)
	}
	second := tr.Take()
	var states []State
	for i, e := range append(first, second...) {
		if e.Seq != i {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		states = append(states, e.State)
	}
	want := []State{StateProposed, StateParsed, StateValidated, StateAuthorized, StateExecuting}
	if !slices.Equal(states, want) {
		t.Errorf("states %v, want %v", states, want)
	}
	if string(first[0].Detail) != `{"n":1}` {
		t.Errorf("detail %s", first[0].Detail)
	}
}

func TestLegacyStatusProjection(t *testing.T) {
	cases := map[Status]Status{
		StatusSuccess: StatusSuccess, StatusError: StatusError, StatusDenied: StatusDenied,
		StatusQueued: StatusQueued, StatusRunning: StatusRunning, StatusTimeout: StatusError,
		StatusUncertain: StatusError, StatusBlocked: StatusDenied,
	}
	for in, want := range cases {
		if got := in.Legacy(); got != want {
			t.Errorf("%s.Legacy() = %s, want %s", in, got, want)
		}
		if !slices.Contains(LegacyStatuses(want), in) {
			t.Errorf("LegacyStatuses(%s) lacks %s", want, in)
		}
	}
	if LegacyStatuses(StatusTimeout) != nil {
		t.Error("timeout is not a legacy status")
	}
}
