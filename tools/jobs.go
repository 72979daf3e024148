package tools

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/journal"
)

// ErrHandedBack is what RunJob returns when the process stopped the
// attempt (a shutdown): the queue runs the job again, here or elsewhere.
var ErrHandedBack = errors.New("the job was handed back to the queue")

// jobDetail is the event a job attempt notes when it starts.
type jobDetail struct {
	Attempt int    `json:"attempt"`
	JobID   string `json:"runtime_job_id"`
	// InstanceID names the process that runs the attempt (the record's
	// own instance id names the one that opened it).
	InstanceID string `json:"instance_id"`
	Rerun      bool   `json:"rerun,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// RunJob runs one attempt of a deferred call: the queue's worker calls it
// with the job's execution. The record moves from queued to running and
// ends as any call's does. An attempt after one that did not end the
// record (its process died or handed it back) runs the tool again when its
// side effects are none or sandbox; an irreversible call is never sent
// again: it ends uncertain (§6.7, §6.9). A nil error means the job is done
// (whatever the call's outcome); ErrHandedBack and other errors make the
// queue try again. When the attempt is the queue's last (JobRun.Last) and
// fails so, the record is ended (giveUp) rather than left open forever.
func (e *Executor) RunJob(ctx context.Context, run JobRun) error {
	err := e.runJob(ctx, run)
	var snooze *SnoozeError
	if err == nil || !run.Last || errors.As(err, &snooze) {
		return err
	}
	return e.giveUp(context.WithoutCancel(ctx), run, err)
}

// giveUp ends the record of a job whose last attempt failed (cause): the
// queue will not run it again. The record ends error, code job_failed,
// or uncertain for an irreversible call an attempt may have sent. cause
// is returned, so the queue keeps the job as failed (discarded); a record
// that cannot be ended either (the store is down) stays open and is
// logged.
func (e *Executor) giveUp(ctx context.Context, run JobRun, cause error) error {
	rec, err := e.journal.Store().Get(ctx, run.AccountID, run.ExecutionID)
	if err == nil && rec.Lifecycle == journal.Finished {
		return cause
	}
	var last journal.Event
	if err == nil {
		last, err = e.journal.Store().LastEvent(ctx, rec.ID)
	}
	if err == nil {
		c := &callRecord{e: e, rec: rec, tr: journal.ResumeTrail(e.opts.Clock, last.State, last.Seq), start: e.opts.Clock(),
			out: &Outcome{ExecutionID: rec.ID, Tool: rec.ToolName, Version: rec.ToolVersion, CallID: rec.CallID}, job: true}
		c.rec.AttemptNo = max(c.rec.AttemptNo, run.Attempt)
		if last.State == journal.StateExecuting && rec.SideEffectLevel == string(catalog.SideEffectIrreversible) {
			err = c.endUnsent(ctx, fmt.Sprintf("the job queue gave up after %d attempts, the last of which may have sent the call", run.Attempt))
		} else {
			e.fail(c.out, StatusError, Errorf(CodeJobFailed, "the job queue gave up on %s after %d attempts (the last: %v); it does not run again", rec.ToolName, run.Attempt, cause))
			err = c.finish(ctx, catalog.Spec{SideEffect: catalog.SideEffectNone}, false, true)
		}
	}
	if err != nil {
		e.opts.Logger.ErrorContext(ctx, "the job queue gave up on a job whose record could not be ended; it stays open", "execution_id", run.ExecutionID, "err", err, "cause", cause)
	}
	return cause
}

// runJob is one attempt of RunJob.
func (e *Executor) runJob(ctx context.Context, run JobRun) error {
	rec, err := e.journal.Store().Get(ctx, run.AccountID, run.ExecutionID)
	if errors.Is(err, journal.ErrNotFound) {
		e.opts.Logger.WarnContext(ctx, "a job names no execution; it is dropped", "execution_id", run.ExecutionID, "account_id", run.AccountID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("job of %s: %w", run.ExecutionID, err)
	}
	if rec.Lifecycle == journal.Finished {
		return nil
	}
	last, err := e.journal.Store().LastEvent(ctx, rec.ID)
	if err != nil {
		return fmt.Errorf("job of %s: last event: %w", rec.ID, err)
	}
	c := &callRecord{e: e, rec: rec, tr: journal.ResumeTrail(e.opts.Clock, last.State, last.Seq), start: e.opts.Clock(),
		out: &Outcome{ExecutionID: rec.ID, Tool: rec.ToolName, Version: rec.ToolVersion, CallID: rec.CallID}, job: true}
	rerun := last.State == journal.StateExecuting
	if rerun && rec.SideEffectLevel == string(catalog.SideEffectIrreversible) {
		return c.endUnsent(ctx, "an earlier attempt of this job stopped while the call was in flight; it is never sent again on its own")
	}
	// A job starting under its account's running limit holds the start
	// lock until its record says running (or it ends without running).
	startDone := func() {}
	if !rerun {
		release, err := e.runningSlot(ctx, rec.AccountID)
		if err != nil {
			return err
		}
		startDone = sync.OnceFunc(release)
		defer startDone()
	}
	pl, te := e.jobPipeline(ctx, c)
	if te != nil {
		e.fail(c.out, StatusError, te)
		if !rerun {
			if err := c.move(journal.StateExecuting, nil); err != nil {
				return err
			}
		}
		return c.finish(ctx, catalog.Spec{SideEffect: catalog.SideEffectNone}, false, true)
	}
	release, te, err := e.meterJob(ctx, pl)
	if err != nil {
		return fmt.Errorf("job of %s: %w", rec.ID, err)
	}
	if te != nil {
		e.fail(c.out, refusedStatus(te), te)
		return c.finish(ctx, catalog.Spec{SideEffect: catalog.SideEffectNone}, false, true)
	}
	// The units are billed before the record ends, so whoever sees the job
	// finished sees its usage too; a run handed back bills what it used.
	settle := func() {
		if release != nil {
			release(*c.out)
			release = nil
		}
	}
	defer settle()
	detail := jobDetail{Attempt: run.Attempt, JobID: rec.RuntimeJobID, InstanceID: e.journal.InstanceID(), Rerun: rerun}
	if rerun {
		detail.Reason = "the process that ran the previous attempt stopped before it ended; the call is replay safe (side effect " + rec.SideEffectLevel + ")"
		c.tr.Note(journal.KindAttempt, detail)
	} else if err := c.move(journal.StateExecuting, detail); err != nil {
		return err
	}
	c.rec.Status, c.rec.AttemptNo = journal.StatusRunning, run.Attempt
	c.rec.State = c.tr.State()
	if err := e.journal.Progress(ctx, c.rec, c.tr.Take()); err != nil {
		return fmt.Errorf("job of %s: record the start: %w", rec.ID, err)
	}
	startDone()
	ran, toolErr := pl.execute(ctx)
	if ctx.Err() != nil && (run.Cancelled == nil || !run.Cancelled()) {
		// The process is stopping: the record stays running and the
		// queue runs the job again.
		return ErrHandedBack
	}
	settle()
	return c.finish(context.WithoutCancel(ctx), pl.ent.spec, ran, toolErr)
}

// SnoozeError is what RunJob returns when the job may not start yet (its
// account runs as many jobs as JobLimits.MaxRunning allows, or another
// process is starting one of them at that instant): the queue
// starts it again After later, without counting an attempt, and its
// record stays queued.
type SnoozeError struct{ After time.Duration }

func (s *SnoozeError) Error() string {
	return fmt.Sprintf("the job waits %s for a running slot of its account", s.After)
}

// runningLimitWait is how long a job over its account's running limit
// waits before it looks again.
const runningLimitWait = 5 * time.Second

// startBusyWait is how long a job waits when another process is starting
// a job of its account at that instant.
const startBusyWait = time.Second

// runningSlot lets a job start when its account runs fewer jobs than
// JobLimits.MaxRunning: it returns the release of the account's start
// lock (JobQueue.HoldStart), which the job keeps until its record says
// running, so that no other worker or process counts the account's running
// jobs meanwhile. Else a *SnoozeError: the limit is reached, or another
// process is starting one of the account's jobs right now.
func (e *Executor) runningSlot(ctx context.Context, account string) (func(), error) {
	lim, err := e.jobLimits(ctx, account)
	if err != nil || lim.MaxRunning <= 0 {
		return func() {}, err
	}
	release, busy, err := e.opts.Jobs.HoldStart(ctx, account)
	switch {
	case err != nil:
		return nil, fmt.Errorf("start a job of %s: %w", account, err)
	case busy:
		return nil, &SnoozeError{After: startBusyWait}
	}
	n, err := e.opts.Jobs.Running(ctx, account)
	if err != nil {
		release()
		return nil, fmt.Errorf("running jobs of %s: %w", account, err)
	}
	if n >= lim.MaxRunning {
		release()
		return nil, &SnoozeError{After: runningLimitWait}
	}
	return release, nil
}

// meterJob admits a job's attempt under its caller's key (jobMeter): the
// release to call with the outcome, or the refusal that ends the job (a
// revoked key, the monthly cap reached), or an error when the limits
// could not be read: the queue tries again later.
func (e *Executor) meterJob(ctx context.Context, pl *pipeline) (func(Outcome), *Error, error) {
	m, ok := e.opts.Authorizer.(jobMeter)
	if !ok || pl.inv.Caller.KeyID == "" {
		return nil, nil, nil
	}
	release, err := m.meterJob(ctx, pl.inv, pl.c.start)
	if err == nil {
		return release, nil, nil
	}
	te := asToolError(err, CodeDenied)
	if te.Code == keys.CodeLimitsUnavailable {
		return nil, nil, err
	}
	return nil, te, nil
}

// jobPipeline rebuilds the pipeline of a deferred call from its record:
// the tool (a builtin or a remote tool of the account) and the
// invocation, under the job deadline.
func (e *Executor) jobPipeline(ctx context.Context, c *callRecord) (*pipeline, *Error) {
	r := c.rec
	ent, ok := e.tools[r.ToolName]
	if !ok {
		rem, rent, err := e.remoteEntry(ctx, r.AccountID, r.ToolName)
		switch {
		case err != nil:
			return nil, asToolError(err, CodeUpstreamUnavailable)
		case rem == nil:
			return nil, Errorf(CodeUnknownTool, "the tool %q of this job is no longer available", r.ToolName)
		}
		ent = rent
	}
	if ent.spec.Version != r.ToolVersion {
		return nil, Errorf(CodeUnknownTool, "%s is now version %s; the job was queued for version %s and does not run", r.ToolName, ent.spec.Version, r.ToolVersion)
	}
	caller := Caller{Slot: r.CallerSlot, Face: r.Face, SessionID: r.SessionID, FloorID: r.FloorID, RunID: r.RunID,
		Round: r.Round, TraceID: r.TraceID}
	caller.AccountID, caller.KeyID = r.AccountID, r.KeyID
	if r.PageID != "" {
		caller.PageID = r.PageID
	}
	p := &Proposal{Tool: r.ToolName, CallID: r.CallID, Caller: caller}
	inv := &Invocation{
		ID: r.ID, Spec: ent.spec, CallID: r.CallID, Raw: r.ArgsRaw, Args: r.Args, Caller: caller,
		Ref:      Reference{Clock: e.opts.Clock(), TimeZone: e.opts.TimeZone, Lang: catalog.English},
		Deadline: time.Now().Add(e.opts.JobTimeout), MaxUnits: 1, Deferred: true, attempts: &attempts{},
	}
	if b, ok := ent.tool.(UnitBounder); ok {
		inv.MaxUnits = b.MaxUnits(inv)
	}
	if cp, ok := ent.tool.(CostProbe); ok && ent.spec.PaidUnit != "" {
		inv.Free = cp.Free(inv)
	}
	return &pipeline{e: e, p: p, c: c, timeout: e.opts.JobTimeout, ent: ent, inv: inv}, nil
}

// endUnsent ends an irreversible call whose earlier attempt may have sent
// it: uncertain, and never sent again.
func (c *callRecord) endUnsent(ctx context.Context, why string) error {
	c.e.fail(c.out, StatusUncertain, Errorf(CodeOutcomeUnknown, "%s", why))
	if err := c.move(journal.StateOutcomeUnknown, endDetail{Status: StatusUncertain, Code: CodeOutcomeUnknown}); err != nil {
		return err
	}
	c.settle(journal.CommitUncertain)
	return c.e.journal.Progress(ctx, c.rec, c.tr.Take())
}

// CancelJob cancels the deferred call id of the account: a queued one
// ends at once without running (cancelled), a running one has its context
// cancelled wherever it runs and ends as a cancelled call does (its
// record, returned as it stands, is still running until then).
func (e *Executor) CancelJob(ctx context.Context, accountID, id string) (journal.Record, error) {
	if e.opts.Jobs == nil {
		return journal.Record{}, ErrJobNotFound
	}
	rec, err := e.journal.Store().Get(ctx, accountID, id)
	if errors.Is(err, journal.ErrNotFound) || (err == nil && (rec.DeliveryMode != string(DeliveryAsync) || rec.RuntimeJobID == "")) {
		return journal.Record{}, ErrJobNotFound
	}
	if err != nil {
		return journal.Record{}, err
	}
	if rec.Lifecycle == journal.Finished {
		return rec, ErrJobFinished
	}
	queued, finished, err := e.opts.Jobs.Cancel(ctx, rec.RuntimeJobID)
	if err != nil {
		return rec, fmt.Errorf("cancel job %s: %w", rec.RuntimeJobID, err)
	}
	if finished {
		return rec, ErrJobFinished
	}
	if !queued {
		return rec, nil
	}
	last, err := e.journal.Store().LastEvent(ctx, rec.ID)
	if err != nil {
		return rec, fmt.Errorf("cancel job %s: %w", rec.RuntimeJobID, err)
	}
	c := &callRecord{e: e, rec: rec, tr: journal.ResumeTrail(e.opts.Clock, last.State, last.Seq), start: rec.StartedAt,
		out: &Outcome{ExecutionID: rec.ID, Tool: rec.ToolName, Version: rec.ToolVersion, CallID: rec.CallID}, job: true}
	if last.State == journal.StateExecuting && rec.SideEffectLevel == string(catalog.SideEffectIrreversible) {
		// Waiting for a retry after an attempt that may have sent it.
		err = c.endUnsent(ctx, "the job was cancelled after an attempt that may have sent the call")
	} else {
		e.fail(c.out, StatusError, Errorf(CodeCancelled, "%s was cancelled before it ran", rec.ToolName))
		if err = c.move(journal.StateCancelledBeforeCommit, endDetail{Status: StatusError, Code: CodeCancelled}); err == nil {
			c.settle(journal.CommitDiscarded)
			err = e.journal.Progress(ctx, c.rec, c.tr.Take())
		}
	}
	if err != nil {
		return rec, fmt.Errorf("cancel job %s: %w", rec.RuntimeJobID, err)
	}
	return c.rec, nil
}
