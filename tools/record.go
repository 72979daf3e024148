package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/journal"
)

// LocalAccount is the account of every call until API keys name real ones.
const LocalAccount = "local"

// validatorName is recorded with each validation (§6.4: the dialect and the
// validator that judged the arguments).
const validatorName = "github.com/santhosh-tekuri/jsonschema/v6"

// Error codes of idempotency keys.
const (
	CodeIdempotencyKeyReused     = "idempotency_key_reused"
	CodeIdempotencyKeyInProgress = "idempotency_key_in_progress"
)

// Digest is the idempotency request digest of §6.5/§6.8: SHA-256 over
// account ‖ tool name ‖ tool version ‖ canonical normalized arguments, each
// part length-prefixed so no two different tuples hash the same bytes.
//
// The prefixes are appended with strconv into one stack buffer, not
// written with fmt (an allocation and a format parse per part, on every
// call's path); the bytes hashed are the same (TestDigestBytes).
func Digest(account, tool, version string, canonicalArgs []byte) string {
	h := sha256.New()
	var buf [128]byte
	b := buf[:0]
	for _, part := range [...]string{account, tool, version} {
		b = strconv.AppendInt(b, int64(len(part)), 10)
		b = append(b, ':')
		b = append(b, part...)
	}
	b = strconv.AppendInt(b, int64(len(canonicalArgs)), 10)
	b = append(b, ':')
	h.Write(b)
	h.Write(canonicalArgs)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// JournalTruncatedMark ends a value the journal stored only the start of.
const JournalTruncatedMark = "…[truncated by the journal: %d bytes in all]"

// journalBytes is b as the journal stores it: whole up to limit bytes,
// else its first limit bytes (cut at a UTF-8 boundary) and the mark.
func journalBytes(b []byte, limit int) []byte {
	if len(b) <= limit {
		return append([]byte(nil), b...)
	}
	cut := limit
	for cut > 0 && cut > limit-4 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Appendf(append([]byte(nil), b[:cut]...), JournalTruncatedMark, len(b))
}

// journalText is a result's text as the journal stores it (journalBytes).
// A fenced text over the bound keeps its fence closed: the fenced content
// is cut, so a reader of the journal (the MCP resources, a replay) never
// sees outside text after an opening marker that no closing one ends.
func (e *Executor) journalText(text string) string {
	limit := e.opts.JournalResultBytes
	if len(text) <= limit {
		return text
	}
	over, ok := fenceOverhead(text)
	if !ok || over >= limit/2 {
		return string(journalBytes([]byte(text), limit))
	}
	return e.opts.Fencer.refence(text, func(content string) string {
		return string(journalBytes([]byte(content), limit-over))
	})
}

// callRecord is the journal side of one Execute: the record, its trail of
// state events and the outcome being built.
type callRecord struct {
	e     *Executor
	rec   journal.Record
	tr    *journal.Trail
	out   *Outcome
	start time.Time
	// confirmation is the approval the call runs under (approve.go);
	// opened says its record was written when it began to wait for it.
	confirmation *confirmationDetail
	opened       bool
	// job: the record is a deferred call's (jobs.go), whose outcome is
	// written to the store itself before the queue forgets the job.
	job bool
}

// Account is the account whose journal a caller's calls land in: its own,
// or the executor's default account when it names none. Readers of the
// journal (the MCP resources) use it to see exactly what was written.
func (e *Executor) Account(c Caller) string {
	if c.AccountID != "" {
		return c.AccountID
	}
	return e.opts.AccountID
}

// BuiltinProviderID is the journal's and the runtime catalog's provider
// id of toolhost's own tools.
const BuiltinProviderID = "toolhost"

// isBuiltin reports whether name is one of toolhost's own tools.
func (e *Executor) isBuiltin(name string) bool {
	_, b := e.tools[name]
	_, s := e.sessionTools[name]
	return b || s
}

func (e *Executor) begin(p Proposal) *callRecord {
	start := e.opts.Clock()
	id := uuid.Must(uuid.NewV7()).String()
	account := e.Account(p.Caller)
	// A builtin is known by its name alone; a definition's or a remote
	// tool's provider is set when resolve finds it (pipeline.go), so a
	// call that ends before has no provider: unknown.
	ptype, pid := journal.ProviderUnknown, ""
	if e.isBuiltin(p.Tool) {
		ptype, pid = journal.ProviderBuiltin, BuiltinProviderID
	}
	rec := journal.Record{
		ID: id, AccountID: account, KeyID: p.Caller.KeyID, SessionID: p.Caller.SessionID,
		FloorID: p.Caller.FloorID, PageID: pageOf(p.Caller.PageID), RunID: p.Caller.RunID, Round: p.Caller.Round, CallID: p.CallID,
		CallerSlot: p.Caller.Slot, Face: p.Caller.Face, ProviderID: pid, ProviderType: ptype, ToolName: p.Tool,
		ArgsRaw: journalBytes(p.Args, e.opts.JournalArgsBytes), IdempotencyKey: clip.Runes(p.IdempotencyKey, MaxIdempotencyKeyBytes), TraceID: p.Caller.TraceID,
		Status: journal.StatusRunning, Lifecycle: journal.Opened, Commit: journal.CommitPending,
		StartedAt: start, CreatedAt: start, DeliveryMode: "inline", AttemptNo: 1,
	}
	tr := journal.NewTrail(e.opts.Clock, proposedDetail{CallID: p.CallID, Tool: p.Tool, ArgsBytes: len(p.Args)}.raw())
	return &callRecord{e: e, rec: rec, tr: tr, start: start,
		out: &Outcome{ExecutionID: id, Tool: p.Tool, CallID: p.CallID}}
}

func (c *callRecord) move(to journal.State, detail any) error {
	if err := c.tr.Move(to, detail); err != nil {
		return fmt.Errorf("execution %s: %w", c.rec.ID, err)
	}
	return nil
}

// settle copies the outcome into the record as a finished call.
func (c *callRecord) settle(commit journal.Commit) {
	now := c.e.opts.Clock()
	c.out.Duration = now.Sub(c.start)
	r := &c.rec
	r.Status = journal.Status(c.out.Status)
	r.Lifecycle = journal.Finished
	r.Commit = commit
	r.State = c.tr.State()
	r.Result = c.out.Structured
	if len(r.Result) > c.e.opts.JournalResultBytes {
		r.Result = fmt.Appendf(nil, `{"journal_truncated":true,"bytes":%d}`, len(r.Result))
	}
	r.ResultText = c.e.journalText(c.out.Text)
	if len(r.Args) > c.e.opts.JournalArgsBytes {
		r.Args = nil // the REST shape shows the cut args_raw instead
	}
	r.Summary = c.out.Summary
	r.Units = c.out.Units
	r.Truncated = c.out.Truncated
	r.ErrorCode, r.ErrorMessage = "", ""
	if c.out.IsError {
		r.ErrorCode, r.ErrorMessage = c.out.Code, c.out.Message
	}
	r.Duration = c.out.Duration
	r.FinishedAt = now
	c.e.logCall(r)
}

// logCall writes the call's log line at info level when call logging is on:
// every failed, refused or timed-out call, and the configured fraction of
// successful ones.
func (e *Executor) logCall(r *journal.Record) {
	if !e.opts.LogCalls {
		return
	}
	if r.Status == journal.StatusSuccess && e.opts.LogSample < 1 && (e.opts.LogSample <= 0 || rand.Float64() >= e.opts.LogSample) {
		return
	}
	attrs := []slog.Attr{
		slog.String("tool", r.ToolName), slog.String("status", string(r.Status)),
		slog.Float64("duration_ms", float64(r.Duration.Microseconds())/1000),
		slog.String("session_id", r.SessionID), slog.String("execution_id", r.ID),
		slog.String("caller_slot", r.CallerSlot), slog.String("face", r.Face), slog.String("account_id", r.AccountID),
	}
	if r.ErrorCode != "" {
		attrs = append(attrs, slog.String("code", r.ErrorCode))
	}
	if r.TraceID != "" {
		attrs = append(attrs, slog.String("trace_id", r.TraceID))
	}
	e.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "call", attrs...)
}

// reject ends a call that never runs: the record is written once, finished,
// with its rejection state.
func (c *callRecord) reject(ctx context.Context, state journal.State, status Status, te *Error) (*Outcome, error) {
	c.e.fail(c.out, status, te)
	c.e.tel.refused(ctx, state, te.Code)
	if err := c.move(state, rejectedDetail{Code: te.Code, Message: te.Message}); err != nil {
		return nil, err
	}
	c.settle(journal.CommitDiscarded)
	if err := c.e.tel.write(ctx, "add", func(ctx context.Context) error { return c.e.journal.Add(ctx, c.rec, c.tr.Take()) }); err != nil {
		return nil, fmt.Errorf("record the rejection of %s: %w", c.rec.ToolName, err)
	}
	return c.out, nil
}

// openEvents moves the trail to EXECUTING (through PREPARED for tools with
// side effects) and returns the events not yet written.
func (c *callRecord) openEvents(spec catalog.Spec, deadline time.Time, timeout time.Duration) ([]journal.Event, error) {
	if spec.SideEffect != catalog.SideEffectNone || c.confirmation != nil {
		var detail any = preparedDetail{SideEffectLevel: string(spec.SideEffect), ArgsDigest: c.rec.ArgsDigest}.raw()
		if c.confirmation != nil {
			detail = confirmedDetail{ArgsDigest: c.rec.ArgsDigest, Confirmation: c.confirmation, SideEffectLevel: string(spec.SideEffect)}
		}
		if err := c.move(journal.StatePrepared, detail); err != nil {
			return nil, err
		}
	}
	if err := c.move(journal.StateExecuting, executingDetail{Attempt: 1, Deadline: deadline.UTC().Format(time.RFC3339Nano), TimeoutMS: timeout.Milliseconds()}.raw()); err != nil {
		return nil, err
	}
	return c.tr.Take(), nil
}

// queued writes the running call's status while it waits for a run slot
// (Invocation.Queued): queued, then running again. An inline call's
// change follows its opened record through the journal's write path
// (Journal.Advance: the spool, where that record may still be); a job's
// record, which its queue wrote, is updated in the store (Progress). A
// write that fails is logged and the call goes on: its outcome, written
// when it ends, sets the status anyway.
func (c *callRecord) queued(ctx context.Context, waiting bool) {
	st := journal.StatusRunning
	if waiting {
		st = journal.StatusQueued
	}
	if c.rec.Status == st {
		return
	}
	c.rec.Status, c.rec.State = st, c.tr.State()
	write := c.e.journal.Advance
	if c.job {
		write = c.e.journal.Progress
	}
	if err := write(context.WithoutCancel(ctx), c.rec, c.tr.Take()); err != nil {
		c.e.opts.Logger.WarnContext(ctx, "journal: the status of a call waiting for a run slot was not written", "execution_id", c.rec.ID, "status", st, "err", err)
	}
}

// attempted records the attempts the tool reported, each an event of the
// trail in the state the call is in (executing); the record's attempt_no
// becomes the number of the last one, the attempt whose outcome the call
// has. A job's record keeps the job's attempt instead: a rerun after a
// process died restarts the tool's own count at 1, and the record must
// still show the rerun.
func (c *callRecord) attempted(as []Attempt) {
	for _, a := range as {
		c.tr.Note(journal.KindAttempt, a)
		if a.No > 0 && !c.job {
			c.rec.AttemptNo = a.No
		}
	}
}

// finish records how an executed call ended. ran says the tool returned a
// result; toolErr that it reported a failure of its own (before any
// effect). Other failures of a tool with irreversible effects (deadline,
// cancellation, crash) leave its outcome unknown (§6.7).
func (c *callRecord) finish(ctx context.Context, spec catalog.Spec, ran, toolErr bool) error {
	out := c.out
	effects := spec.SideEffect != catalog.SideEffectNone
	commit := journal.CommitDiscarded
	detail := endDetail{Status: out.Status, Code: out.Code}
	var err error
	switch {
	case ran && !out.IsError:
		if effects {
			err = c.move(journal.StateCommitted, nil)
		}
		if err == nil {
			err = c.move(journal.StateObserved, observedDetail{Status: out.Status, ResultBytes: len(out.Text), Truncated: out.Truncated}.raw())
		}
		commit = journal.CommitCommitted
	case ran && effects:
		// The tool finished its work but the result could not be encoded.
		err = c.move(journal.StateCommitted, nil)
		if err == nil {
			err = c.move(journal.StateFailedAfterCommit, detail)
		}
		commit = journal.CommitCommitted
	case !ran && !toolErr && spec.SideEffect == catalog.SideEffectIrreversible:
		out.Status = StatusUncertain
		err = c.move(journal.StateOutcomeUnknown, detail)
		commit = journal.CommitUncertain
	case out.Code == CodeOutcomeUnknown:
		out.Status = StatusUncertain
		err = c.move(journal.StateOutcomeUnknown, detail)
		commit = journal.CommitUncertain
	case out.Code == CodeCancelled:
		err = c.move(journal.StateCancelledBeforeCommit, detail)
	default:
		err = c.move(journal.StateFailedBeforeCommit, detail)
	}
	if err != nil {
		return err
	}
	c.settle(commit)
	write := c.e.journal.Finish
	if c.job {
		write = c.e.journal.Progress
	}
	if err := c.e.tel.write(ctx, "finish", func(ctx context.Context) error { return write(ctx, c.rec, c.tr.Take()) }); err != nil {
		return fmt.Errorf("record the outcome of %s: %w", c.rec.ToolName, err)
	}
	return nil
}

// claim handles a call with an idempotency key, in state AUTHORIZED. It
// returns done=false when the key was claimed and the opened record written
// (the caller executes the tool), or done=true with c.out set from the call
// that holds the key (replayed, rejected as key reuse, or still running).
func (e *Executor) claim(ctx context.Context, c *callRecord, spec catalog.Spec, timeout time.Duration) (bool, error) {
	key := c.rec.IdempotencyKey
	// A holder that ended before any effect frees the key, so a second
	// attempt can claim it; more than that means churn, not a bug.
	for attempt := 0; attempt < 3; attempt++ {
		fork := c.tr.Fork()
		open := &callRecord{e: e, rec: c.rec, tr: fork, out: c.out, start: c.start, confirmation: c.confirmation}
		deadline := time.Now().Add(timeout)
		evs, err := open.openEvents(spec, deadline, timeout)
		if err != nil {
			return true, err
		}
		res, err := e.journal.Claim(ctx, key, c.rec.ArgsDigest, c.rec, evs)
		if err != nil {
			return true, fmt.Errorf("record the start of %s: %w", c.rec.ToolName, err)
		}
		if res.Claimed {
			c.tr = fork
			return false, nil
		}
		if res.Reused {
			_, err := c.reject(ctx, journal.StateIdempotencyRejected, StatusError, Errorf(CodeIdempotencyKeyReused,
				"idempotency key %q was already used with other arguments or another tool (execution %s); use a new key for a new call",
				key, res.Existing.ID))
			return true, err
		}
		held := res.Existing
		if held.Lifecycle != journal.Finished {
			wctx, cancel := context.WithTimeout(ctx, timeout)
			held, err = e.journal.Wait(wctx, c.rec.AccountID, held.ID)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				te := Errorf(CodeIdempotencyKeyInProgress, "a call with idempotency key %q is still running (execution %s); ask again later for its result", key, res.Existing.ID)
				te.RetryAfter = time.Second
				_, err := c.reject(ctx, journal.StateIdempotencyRejected, StatusError, te)
				return true, err
			}
			if err != nil {
				return true, fmt.Errorf("wait for execution %s: %w", res.Existing.ID, err)
			}
		}
		if held.Commit == journal.CommitDiscarded {
			continue
		}
		return true, c.replay(ctx, held)
	}
	_, err := c.reject(ctx, journal.StateIdempotencyRejected, StatusError, Errorf(CodeIdempotencyKeyInProgress,
		"idempotency key %q is contended by other calls that keep failing; try again", key))
	return true, err
}

// replay answers a duplicate with the stored outcome of the call that holds
// its key, without executing, and records the duplicate as deduplicated with
// commit outcome replay_blocked.
func (c *callRecord) replay(ctx context.Context, held journal.Record) error {
	out := c.out
	out.Status = Status(held.Status)
	out.IsError = held.Status != journal.StatusSuccess
	out.Code, out.Message = held.ErrorCode, held.ErrorMessage
	out.Structured = held.Result
	out.Text = held.ResultText
	out.Truncated = held.Truncated
	if bytes.HasPrefix(held.Result, []byte(`{"journal_truncated":`)) {
		out.Structured, out.Truncated = nil, true // the journal kept only the start
	}
	out.Summary = held.Summary
	out.Units = 0 // nothing ran, nothing to bill
	out.ReplayOf = held.ID
	if err := c.move(journal.StateDeduplicated, deduplicatedDetail{ReplayOf: held.ID, IdempotencyKey: c.rec.IdempotencyKey}); err != nil {
		return err
	}
	c.rec.ReplayParentID = held.ID
	c.settle(journal.CommitReplayBlocked)
	if err := c.e.journal.Add(context.WithoutCancel(ctx), c.rec, c.tr.Take()); err != nil {
		return fmt.Errorf("record the replay of %s: %w", held.ID, err)
	}
	return nil
}
