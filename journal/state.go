package journal

import (
	"encoding/json"
	"fmt"
	"time"
)

// State is a state of the call state machine (§6.2), written lower case.
type State string

const (
	StateProposed   State = "proposed"
	StateParsed     State = "parsed"
	StateValidated  State = "validated"
	StateAuthorized State = "authorized"
	StatePrepared   State = "prepared"
	StateExecuting  State = "executing"
	StateCommitted  State = "committed"
	StateObserved   State = "observed"

	StateParseRejected         State = "parse_rejected"
	StateValidationRejected    State = "validation_rejected"
	StateAuthorizationRejected State = "authorization_rejected"
	StateCancelledBeforeCommit State = "cancelled_before_commit"
	StateFailedBeforeCommit    State = "failed_before_commit"
	StateOutcomeUnknown        State = "outcome_unknown"
	StateFailedAfterCommit     State = "failed_after_commit"

	// Ours, for idempotency keys (§6.8): the key was already used with
	// other arguments, or the stored result of the same call was returned
	// without executing again.
	StateIdempotencyRejected State = "idempotency_rejected"
	StateDeduplicated        State = "deduplicated"

	// Ours, for approvals (§6.6, §6.11): the call waits for its user's
	// confirmation of its exact invocation digest. It leaves for
	// authorized (approved), authorization_rejected (declined) or
	// cancelled_before_commit (the caller went away while it waited).
	StateAwaitingApproval State = "awaiting_approval"
)

// transitions are the allowed edges. A state without an entry is terminal.
var transitions = map[State][]State{
	// A call over its key's rate or concurrency limit is refused before
	// its arguments are parsed.
	StateProposed:         {StateParsed, StateParseRejected, StateAuthorizationRejected},
	StateParsed:           {StateValidated, StateValidationRejected},
	StateValidated:        {StateAuthorized, StateAuthorizationRejected, StateAwaitingApproval},
	StateAwaitingApproval: {StateAuthorized, StateAuthorizationRejected, StateCancelledBeforeCommit},
	StateAuthorized:       {StatePrepared, StateExecuting, StateIdempotencyRejected, StateDeduplicated},
	StatePrepared:         {StateExecuting, StateCancelledBeforeCommit, StateFailedBeforeCommit},
	StateExecuting: {StateCommitted, StateObserved, StateCancelledBeforeCommit,
		StateFailedBeforeCommit, StateOutcomeUnknown},
	StateCommitted: {StateObserved, StateFailedAfterCommit, StateOutcomeUnknown},
}

// States lists every state in the order of the happy path, then the side
// exits.
var States = []State{StateProposed, StateParsed, StateValidated, StateAuthorized, StatePrepared,
	StateExecuting, StateCommitted, StateObserved, StateParseRejected, StateValidationRejected,
	StateAuthorizationRejected, StateCancelledBeforeCommit, StateFailedBeforeCommit,
	StateOutcomeUnknown, StateFailedAfterCommit, StateIdempotencyRejected, StateDeduplicated,
	StateAwaitingApproval}

// CanMove reports whether a call may move from one state to the other.
func CanMove(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool { return len(transitions[s]) == 0 }

// IllegalTransitionError is returned for a move the state machine forbids.
type IllegalTransitionError struct{ From, To State }

func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("illegal call state transition %s → %s", e.From, e.To)
}

// Trail builds the ordered events of one call and enforces the transition
// rules. It is owned by one goroutine.
type Trail struct {
	clock   func() time.Time
	state   State
	next    int
	pending []Event
}

// NewTrail starts a call in PROPOSED.
func NewTrail(clock func() time.Time, detail any) *Trail {
	if clock == nil {
		clock = time.Now
	}
	t := &Trail{clock: clock, state: StateProposed}
	t.pending = append(t.pending, Event{Seq: 0, State: StateProposed, At: clock(), Detail: encodeDetail(detail)})
	t.next = 1
	return t
}

// ResumeTrail continues the trail of a stored record whose last event had
// sequence number lastSeq (reconciliation).
func ResumeTrail(clock func() time.Time, state State, lastSeq int) *Trail {
	if clock == nil {
		clock = time.Now
	}
	return &Trail{clock: clock, state: state, next: lastSeq + 1}
}

// State is the current state.
func (t *Trail) State() State { return t.state }

// Move records a transition; detail (any JSON-encodable value or nil) says
// what the step produced. An illegal move changes nothing.
func (t *Trail) Move(to State, detail any) error {
	if !CanMove(t.state, to) {
		return &IllegalTransitionError{From: t.state, To: to}
	}
	t.state = to
	t.pending = append(t.pending, Event{Seq: t.next, State: to, At: t.clock(), Detail: encodeDetail(detail)})
	t.next++
	return nil
}

// Note records an event of kind (not a transition: the state stays) with
// detail, such as one attempt of a remote call (KindAttempt).
func (t *Trail) Note(kind string, detail any) {
	t.pending = append(t.pending, Event{Seq: t.next, State: t.state, Kind: kind, At: t.clock(), Detail: encodeDetail(detail)})
	t.next++
}

// Take returns the events recorded since the last Take.
func (t *Trail) Take() []Event {
	p := t.pending
	t.pending = nil
	return p
}

func encodeDetail(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"detail_error": err.Error()})
	}
	return b
}

// Fork returns an independent copy of the trail, for a branch that may be
// abandoned (an idempotency claim that does not win).
func (t *Trail) Fork() *Trail {
	c := *t
	c.pending = append([]Event(nil), t.pending...)
	return &c
}
