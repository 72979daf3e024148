package journal

import (
	"encoding/json"
	"time"
)

// Status is the journal status of a call (seed: /tool-executions status).
type Status string

const (
	StatusRunning   Status = "running"
	StatusQueued    Status = "queued"
	StatusSuccess   Status = "success"
	StatusError     Status = "error"
	StatusDenied    Status = "denied"
	StatusTimeout   Status = "timeout"
	StatusUncertain Status = "uncertain"
	StatusBlocked   Status = "blocked"
)

// Statuses lists every valid status, for validating filters.
var Statuses = []Status{StatusRunning, StatusQueued, StatusSuccess, StatusError, StatusDenied, StatusTimeout, StatusUncertain, StatusBlocked}

// Legacy compresses a status to the five of the call-records projection:
// timeout, uncertain → error; blocked → denied.
func (s Status) Legacy() Status {
	switch s {
	case StatusTimeout, StatusUncertain:
		return StatusError
	case StatusBlocked:
		return StatusDenied
	}
	return s
}

// LegacyStatuses returns the journal statuses that project to the legacy
// status s (the inverse of Legacy), or nil when s is not a legacy status.
func LegacyStatuses(s Status) []Status {
	switch s {
	case StatusSuccess, StatusQueued, StatusRunning:
		return []Status{s}
	case StatusError:
		return []Status{StatusError, StatusTimeout, StatusUncertain}
	case StatusDenied:
		return []Status{StatusDenied, StatusBlocked}
	}
	return nil
}

// Lifecycle says whether a call is still open.
type Lifecycle string

const (
	Opened   Lifecycle = "opened"
	Finished Lifecycle = "finished"
)

// Commit is the commit outcome of a call (§6.7).
type Commit string

const (
	CommitPending       Commit = "pending"
	CommitCommitted     Commit = "committed"
	CommitDiscarded     Commit = "discarded"
	CommitReplayBlocked Commit = "replay_blocked"
	CommitUncertain     Commit = "uncertain"
)

// Provider types of the seed: the kind of provider that answers to a
// tool's name.
const (
	// ProviderBuiltin: a tool of toolhost's code (provider id "toolhost"),
	// the session builtins included.
	ProviderBuiltin = "builtin"
	// ProviderPreset: a tool made from a tool definition, the config's
	// presets ("preset:NAME") and an account's own custom and character
	// definitions ("tooldef:ID") alike.
	ProviderPreset = "preset"
	// ProviderMCP: a tool of one of the account's remote MCP servers
	// ("mcp:ID").
	ProviderMCP = "mcp"
	// ProviderUnknown: no tool was found for the call (an unknown name,
	// or a call refused before its name was looked up).
	ProviderUnknown = "unknown"
)

// ProviderTypes are the values of Record.ProviderType, the seed's enum.
var ProviderTypes = []string{ProviderBuiltin, ProviderPreset, ProviderMCP, ProviderUnknown}

// providerCustom is what definitions were journaled as before they took
// the seed's value; a spooled write from then reads back as preset.
const providerCustom = "custom"

// Record is one call in the journal. Field names follow the seed's
// /tool-executions shape plus our own (account, key, round, call id, digest,
// idempotency key, trace id, state, text result).
type Record struct {
	ID        string
	AccountID string
	KeyID     string
	SessionID string
	FloorID   string
	RunID     string
	// PageID is the caller's page: the one version of a floor's answer
	// (of the caller's regenerations) the call's result went into. Only a
	// caller names it; empty when none did.
	PageID string
	Round  int
	CallID string
	// CallerSlot is the slot the caller declared (narrator, director, …),
	// empty when none.
	CallerSlot string
	// Face is how the call came in: mcp, hosted or cli.
	Face string

	ProviderID string
	// ProviderType is one of ProviderTypes: which kind of provider
	// answered to the tool's name.
	ProviderType    string
	ToolName        string
	ToolVersion     string
	SideEffectLevel string

	// ArgsRaw is the argument bytes exactly as received (may be invalid
	// JSON when the call was rejected by the parser).
	ArgsRaw []byte
	// Args is the canonical normalized arguments; nil when the call was
	// rejected before normalization.
	Args           json.RawMessage
	ArgsDigest     string
	IdempotencyKey string
	TraceID        string

	Status    Status
	Lifecycle Lifecycle
	Commit    Commit
	// State is the last state of the state machine.
	State State

	// Result is the structured result: the tool's structured content on
	// success, {"error":{...}} on failure; nil while open.
	Result     json.RawMessage
	ResultText string // the text the caller saw
	ErrorCode  string
	// ErrorMessage is empty when the call did not fail.
	ErrorMessage string
	Summary      string
	Units        float64
	Truncated    bool

	Duration     time.Duration
	StartedAt    time.Time
	FinishedAt   time.Time // zero while open
	DeliveryMode string
	AttemptNo    int
	RuntimeJobID string
	// ReplayParentID is the execution whose stored result this record
	// replayed (idempotent duplicates).
	ReplayParentID string
	// InstanceID is the process that opened the record; reconciliation uses
	// it to tell a live process's calls from a dead one's.
	InstanceID string
	CreatedAt  time.Time
	// ResultExpiredAt is when the account's result retention of jobs
	// dropped the result of this finished deferred call (Result and
	// ResultText are empty since); zero while it is kept.
	ResultExpiredAt time.Time
	// Seq is the position of the call inside its floor (0-based, by
	// creation), filled by List for the legacy call-records projection.
	Seq int
}

// Event is one entry of a call's trail: a state transition, or (Kind set)
// a note of what happened inside a state without leaving it.
type Event struct {
	Seq   int
	State State
	// Kind is empty for a transition into State. KindAttempt notes one
	// attempt of the tool at a remote server while the call is in State
	// (executing): the gateway's retries (§6.9).
	Kind string
	At   time.Time
	// Detail is a small JSON object saying what the step produced (dialect
	// and validator, reference clock, reason of a rejection, ...).
	Detail json.RawMessage
}

// Event kinds besides a transition (the empty kind).
const (
	// KindAttempt: one try of the call at a remote server; its detail is
	// the attempt's number, invocation id, the backoff and jitter waited
	// before it, the deadline left and how it ended.
	KindAttempt = "attempt"
)

// takeOutcome copies the outcome fields of o, those an update of a record
// carries (status, states, result, error, units, timing), into r; the
// identity fields of r stay as they are.
func (r *Record) takeOutcome(o Record) {
	r.Status, r.Lifecycle, r.Commit, r.State = o.Status, o.Lifecycle, o.Commit, o.State
	r.Result, r.ResultText, r.ErrorCode, r.ErrorMessage = o.Result, o.ResultText, o.ErrorCode, o.ErrorMessage
	r.Summary, r.Units, r.Truncated = o.Summary, o.Units, o.Truncated
	r.Duration, r.FinishedAt = o.Duration, o.FinishedAt
	r.AttemptNo = o.AttemptNo
}
