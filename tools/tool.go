package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/tools/approval"
)

// Tool is one callable tool. Spec is static data; Call does the work.
//
// Call receives arguments that were already parsed, validated and normalized.
// It reports failures the model should see by returning a *Error (see Errorf);
// any other error is treated as an internal failure of the tool.
type Tool interface {
	Spec() catalog.Spec
	Call(ctx context.Context, inv *Invocation) (*Result, error)
}

// Normalizer is implemented by tools that normalize their arguments beyond the
// schema defaults: resolving relative values against the reference clock,
// clamping, canonical spellings. It runs before authorization and before the
// idempotency digest is taken, so equal intents get equal digests.
type Normalizer interface {
	Normalize(args wire.Object, ref Reference) error
}

// CostProbe is implemented by paid tools that can tell before running that
// a call will cost nothing (its answer is already in their cache). Such a
// call is admitted without reserving a unit against the monthly cap, so a
// key at its cap still gets answers that cost nothing; should the answer be
// gone by the time the call runs, the units it used are metered all the same.
type CostProbe interface {
	Free(inv *Invocation) bool
}

// Reference is what normalization may depend on, recorded with the call so the
// result is reproducible.
type Reference struct {
	Clock    time.Time
	TimeZone *time.Location
	Lang     catalog.Lang
}

// Caller says who is calling and from where. It comes from the runtime (the
// authenticated key, the transport), never from the model's arguments.
type Caller struct {
	// Slot is the role the caller declared for this call (narrator,
	// director, verifier, memory, or what the config allows); "" when none.
	Slot string
	// Face is how the call came in: "mcp", "hosted", "cli" or "console"
	// (the operator console's playground).
	Face      string
	SessionID string // MCP session or the caller's conversation id
	// FloorID is the turn: one /v1 request, the MCP _meta toolhost/floor-id
	// when given, else one MCP tools/call.
	FloorID string
	// PageID is the caller's page of the floor (page.go); "" when the
	// caller named none.
	PageID  string
	RunID   string // one loop run inside a floor
	Round   int    // loop round (hosted)
	TraceID string
	// Identity is the account, key and scopes authentication established
	// ("" account: the executor's own, Options.AccountID).
	identity.Identity
}

// ProgressFunc reports progress of a running call. total is 0 when unknown.
type ProgressFunc func(progress, total float64, message string)

// Proposal is a call as a model or client proposed it: a name and raw bytes.
type Proposal struct {
	Tool           string
	Args           json.RawMessage
	CallID         string // the model's or client's id for this call
	Caller         Caller
	IdempotencyKey string
	Lang           catalog.Lang
	Progress       ProgressFunc
	// Answer, when set, is the user's decision on the approval an earlier
	// request of this call asked for (Confirm returned ErrAskLater), as
	// the client carried it back (answer.go): the call runs only when it
	// names a pending approval of this very invocation and approves it.
	Answer *Answer
	// Timeout overrides the executor's default deadline when positive.
	Timeout time.Duration
	// Visible are the tool names the model was given in this request (a
	// hosted /v1 loop: its hosted tools and the caller's own functions).
	// A name outside them is refused at lookup with unknown_tool even when
	// the executor knows the tool (invariant 6.1.2: the tool must be in
	// this request's set), and the refusal lists them; there is no
	// near-name matching. nil means no restriction (the MCP face).
	Visible []string
	// Confirm, when set, is how this call's face asks its user for an
	// approval the call needs (approve.go); nil ends such a call with
	// approval_required and a pending approval to decide by id.
	Confirm Confirmer
	// RequireApproval is the face's own policy for this call (a /v1
	// request's require_approval): like a session's, it makes the tool's
	// policy stricter, never looser; "" changes nothing.
	RequireApproval approval.Policy
	// Delivery asks for inline or deferred delivery (delivery.go); ""
	// leaves it to the tool's default_delivery_mode.
	Delivery Delivery
}

// Invocation is a call the runtime has parsed, validated, normalized and is
// about to execute.
type Invocation struct {
	ID       string
	Spec     catalog.Spec
	CallID   string
	Raw      json.RawMessage // the bytes as received
	Args     json.RawMessage // canonical normalized arguments
	Caller   Caller
	Ref      Reference
	Deadline time.Time
	// MaxUnits is the most paid units the call can use, from the tool's
	// UnitBounder (1 when it has none); the monthly cap holds that much
	// while the call runs.
	MaxUnits float64
	// UnitBudget, when positive, is how many paid units the call may use:
	// less than MaxUnits when the monthly cap has less left. A tool that
	// bills by work done (run_code seconds, PDF pages) stops there.
	UnitBudget float64
	// Free says the tool expects the call to cost nothing (CostProbe).
	Free bool
	// Deferred says the call runs as a background job (RunJob): a tool
	// may then allow it the longer limits of deferred runs.
	Deferred bool
	progress ProgressFunc
	// queued writes the call's journal status while it waits for a run
	// slot (Queued); nil outside the executor.
	queued   func(waiting bool)
	admitted any // what the limit gate admitted (authorize.go)
	// attempts are those the tool reports (attempt.go); nil records none.
	attempts *attempts
}

// UnitBounder is implemented by paid tools whose units per call have an
// upper bound known from the arguments (run_code: its timeout in seconds).
type UnitBounder interface {
	MaxUnits(inv *Invocation) float64
}

// Decode unmarshals the normalized arguments into v, refusing fields v does
// not declare (the schema already refused them; this guards drift).
func (inv *Invocation) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(inv.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %s arguments: %w", inv.Spec.Name, err)
	}
	return nil
}

// WantsProgress says whether the caller asked for progress: a tool that
// would ask someone else for it (a remote MCP server) asks only then.
func (inv *Invocation) WantsProgress() bool { return inv.progress != nil }

// Progress reports progress to the caller if it asked for it; otherwise it
// does nothing. Safe to call from any goroutine the tool owns.
func (inv *Invocation) Progress(progress, total float64, message string) {
	if inv.progress != nil {
		inv.progress(progress, total, message)
	}
}

// Queued tells the journal that the call waits for a resource it needs
// before it can run, a run slot (waiting true: its record says queued), or
// that it has it now (false: running again). Call it from the goroutine
// that runs Call, before Call returns; it returns once the journal has the
// change.
func (inv *Invocation) Queued(waiting bool) {
	if inv.queued != nil {
		inv.queued(waiting)
	}
}

// Result is what a tool returns on success.
type Result struct {
	// Structured is the value that must match the tool's output schema.
	Structured any
	// Text is the readable rendering a model sees.
	Text string
	// Summary is a short line for the journal and the /v1 extension field
	// ("web: 8 results").
	Summary string
	// Units is the number of paid units the call consumed.
	Units float64
	// Untrusted marks Text as data from outside (a web page, a search
	// engine): the encoder fences it so a model treats it as data.
	Untrusted bool
	// Note is toolhost's own line after Text (where a page of a longer
	// whole ends, how to read on): outside the fence, so nothing in Text
	// can pass for it.
	Note string
}

// Error is a tool failure the model should see: a stable machine code and a
// message that says what to do about it.
type Error struct {
	Code       string
	Message    string
	RetryAfter time.Duration
	// Units consumed before the failure (a provider call that was made).
	Units float64
	// Details are the failure's own machine-readable fields, a value that
	// encodes as a JSON object (a struct: an http_error's status, a
	// permission_denied's rule); the error object carries its members
	// beside code and message (wire.ErrorObject.SetDetails).
	Details any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns a tool failure with a stable code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error codes the pipeline itself produces. Tools add their own.
const (
	CodeUnknownTool    = "unknown_tool"
	CodeInvalidJSON    = "invalid_arguments_json"
	CodeInvalidArgs    = "invalid_arguments"
	CodeDenied         = "denied"
	CodeTimeout        = "timeout"
	CodeCancelled      = "cancelled"
	CodeInternal       = "internal_error"
	CodeResultTooLarge = "result_too_large"
	// CodeInvalidIdempotencyKey: an idempotency key over
	// MaxIdempotencyKeyBytes, or with a control character or invalid UTF-8.
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
)

// badKeyByte is the offset of the first byte of an idempotency key that is
// a control character (NUL included, which PostgreSQL cannot store) or
// not UTF-8, or -1. Such a key is refused, not stored mended: two keys
// mended to the same text would claim one call.
func badKeyByte(k string) int {
	for i, r := range k {
		if r < 0x20 || r == 0x7f || (r == utf8.RuneError && !strings.HasPrefix(k[i:], "\uFFFD")) {
			return i
		}
	}
	return -1
}

// MaxIdempotencyKeyBytes bounds an idempotency key (as /v1's header).
const MaxIdempotencyKeyBytes = 255
