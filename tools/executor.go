package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// Status is the journal status of a finished call.
type Status string

const (
	StatusSuccess   Status = "success"
	StatusError     Status = "error"
	StatusDenied    Status = "denied"
	StatusTimeout   Status = "timeout"
	StatusUncertain Status = "uncertain"
	StatusBlocked   Status = "blocked"
)

// Outcome is everything the pipeline knows about one finished call, in the
// form both faces render: MCP as a CallToolResult, /v1 as a tool message.
type Outcome struct {
	ExecutionID string
	Tool        string
	Version     string
	CallID      string
	Status      Status
	IsError     bool
	Code        string // machine code when IsError
	Message     string // message when IsError
	RetryAfter  time.Duration
	// Structured is the structured content (JSON); on errors the error
	// body, {"error": {...}} (see ErrorObject).
	Structured json.RawMessage
	// Text is the rendering for the model (already fenced when untrusted,
	// already capped).
	Text string
	// Truncated says the result was cut to MaxResultBytes: the text (its
	// note says how to read the rest) or the structured content.
	Truncated bool
	// Continuation says where the rest of a cut result is read: nil when
	// nothing was cut, or the whole result could not be kept.
	Continuation *Continuation
	Summary      string
	Units        float64
	Duration     time.Duration
	// ReplayOf is set when the outcome was not executed but replayed from
	// the stored result of an earlier call with the same idempotency key
	// and arguments: it names that call's execution id.
	ReplayOf string
	// Receipt is set when the call was deferred (delivery.go): the outcome
	// is then a success whose Structured and Text carry the receipt, and
	// the tool's result comes later, in the journal.
	Receipt *Receipt
}

// ErrorObject is the error object a failed outcome carries in Structured,
// as the executor wrote it or the journal kept it; false when it carries
// none (the journal kept only the start of a long one).
func (o *Outcome) ErrorObject() (wire.ErrorObject, bool) {
	var body struct {
		Error *wire.ErrorObject `json:"error"`
	}
	if json.Unmarshal(o.Structured, &body) != nil || body.Error == nil {
		return wire.ErrorObject{}, false
	}
	return *body.Error, true
}

// Authorizer decides whether an invocation may run. It returns nil to allow,
// or a *Error whose code says why not (the call is then recorded as denied or
// blocked and never executed). The release function, when non-nil, is called
// once the call finishes (concurrency slots, reservations).
type Authorizer interface {
	Authorize(ctx context.Context, inv *Invocation) (release func(Outcome), err error)
}

// Options configure an Executor.
type Options struct {
	// DefaultTimeout bounds a call whose proposal sets none. Default 60 s.
	DefaultTimeout time.Duration
	// MaxTimeout caps any requested timeout. Default 5 min.
	MaxTimeout time.Duration
	// MaxResultBytes caps the text and structured content of one result.
	// Default 256 KiB. A result over it is cut and kept whole in the
	// journal, for read_result.
	MaxResultBytes int
	// MaxStoredResultBytes caps what the journal keeps of a cut result
	// (its text and its structured content, each): more is cut there too,
	// and read_result says so. Default 16 MiB.
	MaxStoredResultBytes int
	// JournalArgsBytes and JournalResultBytes bound what one record keeps
	// of the raw and normalized arguments (64 KiB) and of the result and
	// its text (256 KiB); more is cut and marked (JournalTruncatedMark).
	JournalArgsBytes   int
	JournalResultBytes int
	// Authorizer runs after normalization; nil allows every call.
	Authorizer Authorizer
	// Clock is the executor's clock (nil means time.Now): the reference
	// clock of normalization, the times and durations of the records it
	// journals, the sessions it touches, the turns it counts and the month
	// a call is billed in (KeysAuthorizer). A call's deadline is a context
	// deadline, on the runtime's clock.
	Clock func() time.Time
	// TimeZone for normalization; nil means UTC.
	TimeZone *time.Location
	Logger   *slog.Logger
	// Journal records every call. Nil means an in-memory journal that lives
	// as long as the process (tests, stdio without a data directory).
	Journal *journal.Journal
	// AccountID is the account of calls whose Caller names none: the single
	// local account until API keys exist. Default "local".
	AccountID string
	// LogCalls writes one info line per finished call to Logger (tool,
	// status, duration, session, execution id): every call that did not
	// succeed, and the fraction LogSample (0–1) of those that did.
	LogCalls  bool
	LogSample float64
	// Slots are the caller slots a call may declare (Caller.Slot);
	// default session.DefaultSlots.
	Slots []string
	// Sessions, when set, makes sessions entities: a call naming a session
	// creates it when new, and its tool permissions are enforced in the
	// authorize step (sessions.go).
	Sessions session.Store
	// Definitions, when set, makes an account's enabled custom tool
	// definitions callable (custom.go); Scripts runs their script
	// handlers, which only run when ScriptsEnabled.
	Definitions    tooldef.Store
	Scripts        ScriptRunner
	ScriptsEnabled bool
	// Variables keeps session variables for get_variable and set_variable
	// (sessiontools.go); they exist only with Sessions and Variables set.
	Variables session.VariableStore
	// Remote, when set, makes the account's tools on its remote MCP
	// servers callable (remote.go).
	Remote RemoteTools
	// Fencer fences the text of untrusted results (fence.go); the zero
	// value draws its boundaries from crypto/rand.
	Fencer Fencer
	// Approvals keeps the confirmation records of calls whose approval
	// policy asks (approve.go); nil means an in-memory store.
	// ApprovalTTL is how long one lives (DefaultApprovalTTL).
	Approvals   approval.Store
	ApprovalTTL time.Duration
	// Policies are the operator's approval policies of tools by name (the
	// config file's tools.require_approval): builtins and tools no account
	// governs. An account's own override of a remote tool wins.
	Policies map[string]approval.Policy
	// Tracer and Meter instrument every call (telemetry.go): an
	// execute_tool span and the call metrics. nil: OpenTelemetry's no-op
	// providers.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// Jobs is the durable queue deferred calls run from (delivery.go); nil
	// refuses async_job with delivery_unsupported. MaxJobsPerAccount
	// bounds an account's queued and running jobs
	// (DefaultMaxJobsPerAccount); JobTimeout is the deadline of one
	// attempt of a deferred call (DefaultJobTimeout).
	Jobs              JobQueue
	MaxJobsPerAccount int
	JobTimeout        time.Duration
	// Settings, when set, are the accounts' own settings of background
	// jobs (accountsettings.go): default delivery modes of builtin tools
	// and job limits. nil: every account has the server's.
	Settings AccountSettings
}

type entry struct {
	tool   Tool
	spec   catalog.Spec
	schema *jsonschema.Schema
	props  map[string]any
}

// Executor runs the pipeline for a fixed set of tools.
type Executor struct {
	opts    Options
	catalog *catalog.Registry
	tools   map[string]*entry
	// sessionTools are the builtins that need a session (sessiontools.go).
	sessionTools map[string]*entry
	journal      *journal.Journal
	turns        turns
	schemas      compiled
	tel          instruments
}

// Defaults of Options (and of the config file's tools section).
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxResultBytes = 256 << 10
	// DefaultMaxStoredResultBytes is Options.MaxStoredResultBytes'
	// default.
	DefaultMaxStoredResultBytes = 16 << 20
	// DefaultMaxTimeout is Options.MaxTimeout's default, the longest
	// deadline a call may have; the config file's default_timeout is at
	// most this.
	DefaultMaxTimeout = 5 * time.Minute
)

// NewExecutor builds an executor and its catalog from tool constructors'
// values. Every spec is checked and every schema compiled here, so a broken
// tool fails at start-up, not at its first call.
func NewExecutor(opts Options, ts ...Tool) (*Executor, error) {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.Approvals == nil {
		opts.Approvals = approval.NewMemory()
	}
	if opts.ApprovalTTL <= 0 {
		opts.ApprovalTTL = DefaultApprovalTTL
	}
	if opts.MaxJobsPerAccount <= 0 {
		opts.MaxJobsPerAccount = DefaultMaxJobsPerAccount
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = DefaultJobTimeout
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.MaxStoredResultBytes <= 0 {
		opts.MaxStoredResultBytes = DefaultMaxStoredResultBytes
	}
	if opts.JournalArgsBytes <= 0 {
		opts.JournalArgsBytes = 64 << 10
	}
	if opts.JournalResultBytes <= 0 {
		opts.JournalResultBytes = 256 << 10
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.TimeZone == nil {
		opts.TimeZone = time.UTC
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AccountID == "" {
		opts.AccountID = LocalAccount
	}
	if len(opts.Slots) == 0 {
		opts.Slots = session.DefaultSlots
	}
	e := &Executor{opts: opts, catalog: catalog.NewRegistry(), tools: map[string]*entry{}, journal: opts.Journal, tel: newInstruments(opts.Tracer, opts.Meter)}
	if e.journal == nil {
		e.journal = journal.New(journal.NewMemStore(), journal.Options{InstanceID: uuid.NewString(), Logger: opts.Logger})
	}
	for _, t := range ts {
		if err := e.catalog.Add(t.Spec()); err != nil {
			return nil, err
		}
		ent, err := newEntry(t)
		if err != nil {
			return nil, err
		}
		e.tools[ent.spec.Name] = ent
	}
	if err := e.addReadResult(); err != nil {
		return nil, err
	}
	if err := e.addWaitJob(); err != nil {
		return nil, err
	}
	if err := e.addCancelJob(); err != nil {
		return nil, err
	}
	if err := e.addSessionTools(); err != nil {
		return nil, err
	}
	return e, nil
}

// newEntry compiles a tool's input schema.
func newEntry(t Tool) (*entry, error) {
	// Prepared: its Chinese schemas are rendered once, here.
	spec, err := catalog.Prepare(t.Spec())
	if err != nil {
		return nil, err
	}
	sch, err := compileSchema(spec.Name, spec.Input)
	if err != nil {
		return nil, err
	}
	schemaDoc, err := ParseArgs(spec.Input)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", spec.Name, err)
	}
	props, _ := schemaDoc["properties"].(map[string]any)
	return &entry{tool: t, spec: spec, schema: sch, props: props}, nil
}

// Journal returns the journal the executor records into.
func (e *Executor) Journal() *journal.Journal { return e.journal }

// Catalog returns the registry of the executor's tool specs.
func (e *Executor) Catalog() *catalog.Registry { return e.catalog }

// refusedStatus is the journal status of a refused call: blocked when
// waiting helps, denied otherwise.
func refusedStatus(err error) Status {
	if asToolError(err, CodeDenied).RetryAfter > 0 {
		return StatusBlocked
	}
	return StatusDenied
}

func (e *Executor) fail(out *Outcome, status Status, te *Error) {
	// A message may quote the input (an unknown key, a bad value): it is
	// bounded so a huge input is not sent back, nor journaled, in full.
	msg := e.clipMessage(te.Message)
	out.Status = status
	out.IsError = true
	out.Code = te.Code
	out.Message = msg
	out.RetryAfter = te.RetryAfter
	out.Units = te.Units
	out.Summary = te.Code
	out.Text = msg
	if te.RetryAfter > 0 && !strings.Contains(msg, "retry after") {
		out.Text += fmt.Sprintf(" (retry after %d ms)", te.RetryAfter.Milliseconds())
	}
	body := wire.ErrorObject{Code: te.Code, Message: msg, RetryAfterMS: te.RetryAfter.Milliseconds()}
	if err := body.SetDetails(te.Details); err != nil {
		// A tool's mistake: the call still fails with its code and message.
		e.opts.Logger.Error("a tool error's details are not a JSON object; they are left out", "code", te.Code, "err", err)
	}
	out.Structured, _ = json.Marshal(wire.ErrorBody{Error: body})
}

// clipMessage bounds an error message to clip.MessageRunes. A message that
// quotes outside text in a fence keeps the fence closed: the quote is cut,
// not the message's end.
func (e *Executor) clipMessage(msg string) string {
	if utf8.RuneCountInString(msg) <= clip.MessageRunes {
		return msg
	}
	over, ok := fenceOverhead(msg)
	if !ok {
		return clip.Message(msg)
	}
	room := max(clip.MessageRunes-over, clip.EchoRunes)
	return e.opts.Fencer.refence(msg, func(quote string) string { return clip.Runes(quote, room) })
}

// encode turns a tool's result into the outcome. A result over
// MaxResultBytes is cut (resultcut.go): the text with a note that says
// how to read the rest, the structured content where a cut still matches
// the output schema; the whole result is then kept in the journal
// (keepResult) for read_result and the MCP resource to page through.
func (e *Executor) encode(ctx context.Context, out *Outcome, inv *Invocation, res *Result) {
	spec := inv.Spec
	out.Status = StatusSuccess
	out.Summary = res.Summary
	out.Units = res.Units
	var full []byte
	if res.Structured != nil {
		b, err := json.Marshal(res.Structured)
		if err != nil {
			e.fail(out, StatusError, Errorf(CodeInternal, "%s produced a result that cannot be encoded: %v", spec.Name, err))
			return
		}
		full = b
		out.Structured = b
	}
	text := res.Text
	if text == "" && out.Structured != nil {
		text = string(out.Structured)
	}
	c := e.cutResult(spec, full, text)
	if c.any() || len(text) > e.opts.JournalResultBytes || len(full) > e.opts.JournalResultBytes {
		c.kept = e.keepResult(ctx, out.ExecutionID, inv, res, full)
	}
	if c.structuredCut {
		if c.structured == nil {
			e.fail(out, StatusError, Errorf(CodeResultTooLarge, "%s", c.tooLargeMessage(spec.Name, out.ExecutionID, len(full), e.opts.MaxResultBytes, inv.Ref.Lang)))
			out.Continuation = c.continuation(out.ExecutionID, PartStructured, 0, full)
			return
		}
		out.Structured = c.structured
		out.Truncated = true
	}
	var note string
	if c.textCut >= 0 {
		note = c.textNote(out.ExecutionID, text, inv.Ref.Lang)
		out.Continuation = c.continuation(out.ExecutionID, PartText, c.textCut, []byte(text))
		text = text[:c.textCut]
		out.Truncated = true
	} else if c.structuredCut {
		note = c.structuredNote(out.ExecutionID, full, inv.Ref.Lang)
		out.Continuation = c.continuation(out.ExecutionID, PartStructured, 0, full)
	}
	if res.Untrusted {
		text = e.opts.Fencer.Fence(text)
	}
	out.Text = text + note + res.Note
}

func (e *Executor) names() []string {
	n := make([]string, 0, len(e.tools))
	for k := range e.tools {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func isToolError(err error) bool {
	var te *Error
	return errors.As(err, &te)
}

func asToolError(err error, fallback string) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Code: fallback, Message: err.Error()}
}
