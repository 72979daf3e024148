package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/approval"
)

// pipeline is one call on its way through Execute's steps. Each step either
// lets the call go on (it returns a nil Outcome and a nil error) or ends it
// (the Outcome to answer with, or a failure of the runtime itself).
type pipeline struct {
	e        *Executor
	p        *Proposal
	c        *callRecord
	timeout  time.Duration
	admitted any

	ent    *entry
	custom *customEntry
	remote *Remote
	args   wire.Object
	// sessionPolicy is the session's require_approval ("" when none).
	sessionPolicy approval.Policy
	ref           Reference
	inv           *Invocation
	// async: the call runs as a background job (delivery.go).
	async bool
}

// Execute runs one proposal through the whole pipeline and records every
// transition in the journal (record.go). Tool failures come back as an
// Outcome with IsError; the error result is reserved for failures of the
// runtime itself (the journal could not be written).
//
// The steps, in order: admit (the key's rate and concurrency limits),
// resolve (which tool), parse, validate, normalize, authorize, open (the
// durable record), execute, encode, finish.
func (e *Executor) Execute(ctx context.Context, p Proposal) (*Outcome, error) {
	ctx, span := e.tel.start(ctx, &p)
	pl := pipeline{e: e, p: &p, c: e.begin(p), timeout: e.opts.DefaultTimeout}
	if p.Timeout > 0 {
		pl.timeout = min(p.Timeout, e.opts.MaxTimeout)
	}
	out, err := pl.run(ctx)
	e.tel.end(ctx, span, pl.c, err)
	return out, err
}

// run is Execute's steps, in order.
func (pl *pipeline) run(ctx context.Context) (*Outcome, error) {
	e, p := pl.e, pl.p
	out := pl.c.out

	// Per-key rate and concurrency limits come before any work on the
	// arguments: a key over them must not get parsing and validation of
	// megabytes of arguments for free.
	if g, ok := e.opts.Authorizer.(limitGate); ok {
		adm, done, err := g.gate(ctx, p, pl.c.rec.ID, pl.timeout, pl.c.start)
		if err != nil {
			return pl.c.reject(ctx, journal.StateAuthorizationRejected, refusedStatus(err), asToolError(err, CodeDenied))
		}
		pl.admitted = adm
		defer func() { done(*out) }()
	}
	if o, err := pl.resolve(ctx); o != nil || err != nil {
		return o, err
	}
	if o, err := pl.parse(ctx); o != nil || err != nil {
		return o, err
	}
	if o, err := pl.validate(ctx); o != nil || err != nil {
		return o, err
	}
	if o, err := pl.normalize(ctx); o != nil || err != nil {
		return o, err
	}
	release, o, err := pl.authorize(ctx)
	if release != nil {
		defer func() { release(*out) }()
	}
	if o != nil || err != nil {
		return o, err
	}
	if pl.async {
		return pl.enqueue(ctx)
	}
	if o, err := pl.open(ctx); o != nil || err != nil {
		return o, err
	}
	ran, toolErr := pl.execute(ctx)
	if err := pl.c.finish(ctx, pl.ent.spec, ran, toolErr); err != nil {
		return nil, err
	}
	return out, nil
}

// resolve finds the tool the proposal names: a builtin, a session builtin,
// one of the account's custom definitions or a tool of one of its remote
// MCP servers, in that order.
func (pl *pipeline) resolve(ctx context.Context) (*Outcome, error) {
	e, p, c := pl.e, pl.p, pl.c
	if len(p.IdempotencyKey) > MaxIdempotencyKeyBytes {
		return c.reject(ctx, journal.StateParseRejected, StatusError, Errorf(CodeInvalidIdempotencyKey,
			"the idempotency key is %d bytes; at most %d are allowed", len(p.IdempotencyKey), MaxIdempotencyKeyBytes))
	}
	if i := badKeyByte(p.IdempotencyKey); i >= 0 {
		return c.reject(ctx, journal.StateParseRejected, StatusError, Errorf(CodeInvalidIdempotencyKey,
			"the idempotency key has a control character or invalid UTF-8 at byte %d; a key is printable text", i))
	}
	if te := e.checkSlot(p.Caller.Slot); te != nil {
		return c.reject(ctx, journal.StateParseRejected, StatusError, te)
	}
	if p.Caller.PageID != "" {
		if te := CheckPageID("page id", p.Caller.PageID); te != nil {
			return c.reject(ctx, journal.StateParseRejected, StatusError, te)
		}
	}
	if p.Visible != nil && !slices.Contains(p.Visible, p.Tool) {
		return c.reject(ctx, journal.StateParseRejected, StatusError, pl.unknownTool())
	}
	ent, ok := e.tools[p.Tool]
	if !ok {
		ent, ok = e.sessionTools[p.Tool]
	}
	if !ok {
		var err error
		if pl.custom, err = e.customTool(ctx, c.rec.AccountID, p.Caller.SessionID, p.Tool); err != nil {
			e.opts.Logger.ErrorContext(ctx, "tool definition lookup failed", "tool", p.Tool, "execution_id", c.rec.ID, "err", err)
			return c.reject(ctx, journal.StateParseRejected, StatusError, Errorf(CodeInternal, "the tool definitions could not be read; the error was logged with execution id %s", c.rec.ID))
		}
		if pl.custom == nil {
			var rent *entry
			if pl.remote, rent, err = e.remoteEntry(ctx, c.rec.AccountID, p.Tool); pl.remote != nil {
				c.rec.ProviderType, c.rec.ProviderID = journal.ProviderMCP, pl.remote.ProviderID
			}
			if err != nil {
				e.opts.Logger.WarnContext(ctx, "remote tool lookup failed", "tool", p.Tool, "execution_id", c.rec.ID, "err", err)
				return c.reject(ctx, journal.StateParseRejected, StatusError, asToolError(err, CodeUpstreamUnavailable))
			}
			ent = rent
		}
		if pl.custom == nil && pl.remote == nil {
			return c.reject(ctx, journal.StateParseRejected, StatusError, pl.unknownTool())
		}
		if pl.custom != nil {
			ent = &pl.custom.entry
			c.rec.ProviderType, c.rec.ProviderID = providerOf(pl.custom.def)
		}
	}
	pl.ent = ent
	c.out.Version = ent.spec.Version
	c.rec.ToolVersion = ent.spec.Version
	c.rec.SideEffectLevel = string(ent.spec.SideEffect)
	if te := pl.checkDelivery(ctx); te != nil {
		return c.reject(ctx, journal.StateParseRejected, StatusError, te)
	}
	return nil, nil
}

// unknownTool is the lookup refusal: the name as proposed (no near-name
// matching) and the names the caller may use, the proposal's Visible
// names when it has them, else the executor's tools.
func (pl *pipeline) unknownTool() *Error {
	names := pl.e.names()
	if pl.p.Visible != nil {
		names = slices.Clone(pl.p.Visible)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	if len(names) == 0 {
		return Errorf(CodeUnknownTool, "unknown tool %q; no tools are available", clip.Echo(pl.p.Tool))
	}
	return Errorf(CodeUnknownTool, "unknown tool %q; available tools: %s", clip.Echo(pl.p.Tool), strings.Join(names, ", "))
}

// parse reads the arguments strictly, keeping the raw bytes.
func (pl *pipeline) parse(ctx context.Context) (*Outcome, error) {
	args, err := ParseArgs(pl.p.Args)
	if err != nil {
		return pl.c.reject(ctx, journal.StateParseRejected, StatusError, Errorf(CodeInvalidJSON, "%s arguments: %s", pl.p.Tool, strings.TrimPrefix(err.Error(), ErrArgsSyntax.Error()+": ")))
	}
	pl.args = args
	return nil, pl.c.move(journal.StateParsed, parsedDetail{Parser: "strict-json", Bytes: len(pl.p.Args)}.raw())
}

// validate checks the arguments against the tool's schema. The schema's
// defaults are filled in first (the first part of normalization) so the
// schema sees the values that will run.
func (pl *pipeline) validate(ctx context.Context) (*Outcome, error) {
	applyDefaults(pl.args, pl.ent.props)
	if err := pl.ent.schema.Validate(any(pl.args)); err != nil {
		return pl.c.reject(ctx, journal.StateValidationRejected, StatusError, Errorf(CodeInvalidArgs, "%s arguments do not match its schema: %s", pl.p.Tool, describeValidation(err)))
	}
	return nil, nil
}

// normalize runs the tool's own normalization against the reference clock
// and time zone, makes the arguments canonical and builds the invocation.
func (pl *pipeline) normalize(ctx context.Context) (*Outcome, error) {
	e, p, c, ent := pl.e, pl.p, pl.c, pl.ent
	pl.ref = Reference{Clock: e.opts.Clock(), TimeZone: e.opts.TimeZone, Lang: p.Lang}
	if n, ok := ent.tool.(Normalizer); ok {
		if err := n.Normalize(pl.args, pl.ref); err != nil {
			return c.reject(ctx, journal.StateValidationRejected, StatusError, asToolError(err, CodeInvalidArgs))
		}
	}
	canon, err := CanonicalJSON(pl.args)
	if err != nil {
		return nil, fmt.Errorf("canonical arguments of %s: %w", p.Tool, err)
	}
	c.rec.Args = canon
	c.rec.ArgsDigest = Digest(c.rec.AccountID, ent.spec.Name, ent.spec.Version, canon)
	if err := c.move(journal.StateValidated, validatedDetail{
		Dialect: catalog.SchemaDialect, Validator: validatorName, FormatAssertion: true,
		ReferenceClock: pl.ref.Clock.Format(time.RFC3339Nano), TimeZone: pl.ref.TimeZone.String(),
		ArgsDigest: c.rec.ArgsDigest,
	}.raw()); err != nil {
		return nil, err
	}
	inv := &Invocation{
		ID:       c.rec.ID,
		Spec:     ent.spec,
		CallID:   p.CallID,
		Raw:      append(json.RawMessage(nil), p.Args...),
		Args:     canon,
		Caller:   p.Caller,
		Ref:      pl.ref,
		Deadline: time.Now().Add(pl.timeout),
		MaxUnits: 1,
		progress: p.Progress,
		admitted: pl.admitted,
		attempts: &attempts{},
	}
	if b, ok := ent.tool.(UnitBounder); ok {
		inv.MaxUnits = b.MaxUnits(inv)
	}
	if cp, ok := ent.tool.(CostProbe); ok && ent.spec.PaidUnit != "" {
		inv.Free = cp.Free(inv)
	}
	pl.inv = inv
	return nil, nil
}

// authorize checks the session's permissions, then the key's limits (a
// call the session refuses reserves nothing), then whether the call needs
// its user's approval and has it (confirm, approve.go). The release function, when
// non-nil, must be called with the final outcome once the call ends.
func (pl *pipeline) authorize(ctx context.Context) (release func(Outcome), _ *Outcome, _ error) {
	e, p, c := pl.e, pl.p, pl.c
	if pl.custom != nil {
		if te := e.definitionDenial(pl.custom.def); te != nil {
			return pl.deny(ctx, te)
		}
		if d := slotDenial(p.Tool, p.Caller.Slot, pl.custom.def.AllowedSlots); d != nil {
			return pl.deny(ctx, denial(d))
		}
	}
	if pl.remote != nil {
		if d := slotDenial(p.Tool, p.Caller.Slot, pl.remote.AllowedSlots); d != nil {
			return pl.deny(ctx, denial(d))
		}
	}
	te, err := e.checkSession(ctx, c.rec.AccountID, pl.inv, &pl.sessionPolicy)
	if err != nil {
		e.opts.Logger.ErrorContext(ctx, "session check failed", "tool", p.Tool, "execution_id", c.rec.ID, "err", err)
		o, err := c.reject(ctx, journal.StateAuthorizationRejected, StatusError, Errorf(CodeSessionUnavailable,
			"the session store did not answer, so the session's tool permissions could not be checked; retry shortly"))
		return nil, o, err
	}
	if te != nil {
		return pl.deny(ctx, te)
	}
	if e.opts.Authorizer != nil {
		rel, err := e.opts.Authorizer.Authorize(ctx, pl.inv)
		if err != nil {
			o, err := c.reject(ctx, journal.StateAuthorizationRejected, refusedStatus(err), asToolError(err, CodeDenied))
			return nil, o, err
		}
		release = rel
	}
	if o, err := pl.confirm(ctx); o != nil || err != nil {
		return release, o, err
	}
	return release, nil, c.move(journal.StateAuthorized, authorizedDetail{
		AccountID: c.rec.AccountID, KeyID: p.Caller.KeyID, Scopes: p.Caller.Scopes,
	}.raw())
}

// deny ends a call its permissions refuse.
func (pl *pipeline) deny(ctx context.Context, te *Error) (func(Outcome), *Outcome, error) {
	o, err := pl.c.reject(ctx, journal.StateAuthorizationRejected, StatusDenied, te)
	return nil, o, err
}

// open makes the record durable before a tool with side effects runs; a
// read-only call's opened record may wait for its outcome (journal.Open).
// With an idempotency key the record is written together with the key's
// claim, or the call is answered from the call that holds the key.
func (pl *pipeline) open(ctx context.Context) (*Outcome, error) {
	if pl.p.IdempotencyKey != "" {
		if done, err := pl.e.claim(ctx, pl.c, pl.ent.spec, pl.timeout); done || err != nil {
			return pl.c.out, err
		}
		return nil, nil
	}
	evs, err := pl.c.openEvents(pl.ent.spec, pl.inv.Deadline, pl.timeout)
	if err != nil {
		return nil, err
	}
	if pl.c.opened {
		// Written when it began to wait for its approval (approve.go).
		if err := pl.e.journal.Progress(context.WithoutCancel(ctx), pl.c.rec, evs); err != nil {
			return nil, fmt.Errorf("record the start of %s: %w", pl.p.Tool, err)
		}
		return nil, nil
	}
	// A caller that has just gone away must not turn the call into a
	// runtime failure with no record: the open record is written
	// regardless, and the cancelled context then ends the tool at once,
	// so the journal says "cancelled", not nothing.
	if err := pl.e.tel.write(ctx, "open", func(ctx context.Context) error { return pl.e.journal.Open(ctx, pl.c.rec, evs) }); err != nil {
		return nil, fmt.Errorf("record the start of %s: %w", pl.p.Tool, err)
	}
	return nil, nil
}

// execute runs the tool under the deadline and encodes its result, or its
// failure, into the outcome. It reports whether the tool ran to a result
// and whether it failed with a tool error.
func (pl *pipeline) execute(ctx context.Context) (ran, toolErr bool) {
	e, p, out := pl.e, pl.p, pl.c.out
	pl.inv.queued = func(waiting bool) { pl.c.queued(ctx, waiting) }
	callCtx, cancel := context.WithDeadline(ctx, pl.inv.Deadline)
	res, callErr := e.call(callCtx, pl.ent.tool, pl.inv)
	deadlineHit := errors.Is(callCtx.Err(), context.DeadlineExceeded)
	cancelled := ctx.Err() != nil
	cancel()

	switch {
	case callErr == nil && res != nil:
		e.encode(ctx, out, pl.inv, res)
	case deadlineHit && !isToolError(callErr):
		e.fail(out, StatusTimeout, Errorf(CodeTimeout, "%s did not finish within %s", p.Tool, pl.timeout.Round(time.Millisecond)))
	case cancelled && !isToolError(callErr):
		e.fail(out, StatusError, Errorf(CodeCancelled, "%s was cancelled by the caller", p.Tool))
	case callErr == nil:
		e.fail(out, StatusError, Errorf(CodeInternal, "%s returned no result", p.Tool))
	default:
		te := asToolError(callErr, CodeInternal)
		if te.Code == CodeInternal && !isToolError(callErr) {
			e.opts.Logger.ErrorContext(ctx, "tool failed", "tool", p.Tool, "execution_id", pl.c.rec.ID, "call_id", p.CallID, "trace_id", p.Caller.TraceID, "err", callErr)
			te = Errorf(CodeInternal, "%s failed inside the runtime; the error was logged with execution id %s", p.Tool, pl.c.rec.ID)
		}
		status := StatusError
		if te.Code == CodeTimeout {
			status = StatusTimeout
		}
		e.fail(out, status, te)
	}
	pl.c.attempted(pl.inv.takeAttempts())
	return callErr == nil && res != nil, isToolError(callErr)
}

// call runs the tool, turning a panic into an internal error.
func (e *Executor) call(ctx context.Context, t Tool, inv *Invocation) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			e.opts.Logger.Error("tool panicked", "tool", inv.Spec.Name, "execution_id", inv.ID, "panic", r, "stack", string(debug.Stack()))
			res, err = nil, Errorf(CodeInternal, "%s crashed; the error was logged with execution id %s", inv.Spec.Name, inv.ID)
		}
	}()
	return t.Call(ctx, inv)
}
