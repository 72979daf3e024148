package tools

import "sync"

// Attempt is one try of a call at a remote server, as the tool that made
// it reports it (Invocation.Attempted): the tool-call seed (§6.9) puts
// the retry count, the backoff and its jitter, the total deadline and
// each invocation id in the call's event trail. The pipeline records each
// as an event of kind journal.KindAttempt, in order, and the record's
// attempt_no is the number of the last: the attempt whose outcome the call
// has. The fields are declared in alphabetical order of their JSON names.
type Attempt struct {
	// No counts the attempts of the call from 1.
	No int `json:"attempt_no"`
	// BackoffMS is how long the tool waited before this attempt (0 for the
	// first), JitterMS the random part of it.
	BackoffMS int64 `json:"backoff_ms"`
	// Code is the error code the attempt ended with; empty when it
	// succeeded.
	Code string `json:"code,omitempty"`
	// DeadlineMS is the time the call had left when the attempt began:
	// every attempt and backoff fits in the one deadline of the call.
	DeadlineMS int64 `json:"deadline_ms"`
	// HTTPStatus is the status the server answered with, when it did.
	HTTPStatus int `json:"http_status,omitempty"`
	// InvocationID names this attempt; the tool sends it with the request
	// (a remote server sees it in _meta) so both sides can match them up.
	InvocationID string `json:"invocation_id"`
	JitterMS     int64  `json:"jitter_ms"`
	// Outcome is "ok", "retry" (it failed in a way that is safe to try
	// again, and another attempt followed) or "failed".
	Outcome string `json:"outcome"`
}

// Attempt outcomes.
const (
	AttemptOK     = "ok"
	AttemptRetry  = "retry"
	AttemptFailed = "failed"
)

// attempts are the attempts a tool reported for one invocation.
type attempts struct {
	mu   sync.Mutex
	list []Attempt
}

// Attempted reports one attempt of the call (a tool that retries reports
// every attempt it makes, the first included). Safe from any goroutine
// the tool owns; reports after the tool returned are not recorded.
func (inv *Invocation) Attempted(a Attempt) {
	if inv.attempts == nil {
		return
	}
	inv.attempts.mu.Lock()
	inv.attempts.list = append(inv.attempts.list, a)
	inv.attempts.mu.Unlock()
}

// takeAttempts returns the attempts reported so far and stops recording.
func (inv *Invocation) takeAttempts() []Attempt {
	if inv.attempts == nil {
		return nil
	}
	inv.attempts.mu.Lock()
	defer inv.attempts.mu.Unlock()
	l := inv.attempts.list
	inv.attempts.list = nil
	return l
}
