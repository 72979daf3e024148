package loop

import (
	"encoding/json"
	"time"
)

// EventKind says what happened. Events are format-neutral: each wire format
// renders the ones it has a shape for and ignores the rest.
type EventKind int

const (
	// EventRoundStart: an upstream call is about to be made. Final is true
	// for the call with tool choice none after MaxToolRounds.
	EventRoundStart EventKind = iota + 1
	// EventUpstreamMeta: the first chunk (or the response) of a round
	// arrived; ID/Created/Model are the upstream's. Renderers that reuse the
	// first upstream id take it from the first of these.
	EventUpstreamMeta
	// EventTextDelta: text of the assistant, streamed as it comes, in every
	// round (middle-round text flows too).
	EventTextDelta
	// EventDeltaExtra: other fields of a streamed delta (reasoning text,
	// refusal) in Dialect, passed on verbatim by a renderer of that dialect.
	EventDeltaExtra
	// EventCallerCallDelta: a piece of a call to one of the caller's
	// functions. CallerIndex numbers the caller's calls of the round from 0
	// (hosted calls are not counted); the first delta of a call carries ID
	// and Name, the others argument bytes. A call to an invented name is
	// held back while the loop may still run it; in a round that ends the
	// loop it is sent as a caller call (what arrived so far in its first
	// delta) before the caller call that follows it, or when the upstream
	// answer is complete, so the model's order is kept.
	EventCallerCallDelta
	// EventHostedCallsProposed: the round's upstream response is complete and
	// its hosted calls will run. Calls holds them in the model's order, with
	// full arguments. Sent before any EventHostedCallStarted of the round.
	EventHostedCallsProposed
	// EventHostedCallStarted: one hosted call started executing (status is
	// empty, ms 0).
	EventHostedCallStarted
	// EventHostedCallFinished: one hosted call finished; Call has its status,
	// summary, ms and result. Finished events come in completion order.
	EventHostedCallFinished
	// EventHostedCallsDone: every hosted call of the round finished; Calls
	// holds them in the model's order with results (what is appended to the
	// conversation).
	EventHostedCallsDone
	// EventRoundEnd: the upstream call of the round and its hosted calls are
	// done. Usage and Cost are the round's; Round.Skipped lists calls that
	// were not executed.
	EventRoundEnd
)

// Event is one step of a run, for streaming renderers.
type Event struct {
	Kind  EventKind
	Round int
	Final bool

	// EventUpstreamMeta.
	ID      string
	Created int64
	Model   string

	// EventTextDelta.
	Text string

	// EventDeltaExtra.
	Extra   map[string]json.RawMessage
	Dialect Dialect

	// EventCallerCallDelta.
	CallerIndex int
	CallID      string
	Name        string
	ArgsDelta   string

	// EventHostedCall*.
	Call  *Call
	Calls []Call

	// EventRoundEnd.
	Usage Usage
	Cost  int64
}

// Sink receives events in order. An error (the caller went away) stops the
// run with that error.
type Sink func(Event) error

// Status of a hosted call as the extension field reports it.
type Status string

const (
	StatusDone    Status = "done"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
	// StatusRunning is the empty status of a start notice.
	StatusRunning Status = ""
)

// Call is one hosted call of a run.
type Call struct {
	Round int
	// Index is the call's position among all calls of its round, in the
	// model's order.
	Index   int
	ID      string
	Name    string
	Args    []byte
	Status  Status
	Summary string
	// Result is the text given back to the model (the error message when
	// the call failed).
	Result string
	// Structured is the tool's structured content (nil on failure).
	Structured  []byte
	IsError     bool
	Code        string
	ExecutionID string
	Duration    time.Duration
	Units       float64
	// Continued says the result was cut and its rest is kept: read_result
	// reads it (and is offered to the model from the next round).
	Continued bool
	// Deferred says the call went to the background: its result is a
	// receipt, and wait_job and cancel_job are offered to the model from
	// the next round.
	Deferred bool
	// Withheld says the result went over the run's result-byte budget: the
	// model read a note instead (the caller still gets Result).
	Withheld bool
	// ApprovalID is the approval a call runs under (one of
	// Request.Approvals) or, with StatusApprovalRequired, waits for; Args
	// are then the normalized arguments the approval is bound to.
	ApprovalID string
}

// MS is the call's duration in whole milliseconds.
func (c Call) MS() int64 { return c.Duration.Milliseconds() }
