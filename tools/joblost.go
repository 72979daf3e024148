package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
)

// CodeJobLost: the job queue will never run the job again, and no
// attempt ended its record (river discarded or cancelled it without its
// worker, or it is no longer in river's table).
const CodeJobLost = "job_lost"

// DefaultLostJobGrace is how long a job must be seen lost before its
// record is closed (JobAudit): longer than a cancel or a last attempt
// takes between river ending the job and the caller ending the record.
const DefaultLostJobGrace = time.Minute

// LostJob is a deferred call whose record is still open though the queue
// will never run its job again.
type LostJob struct {
	AccountID   string
	ExecutionID string
	JobID       string
	// QueueState is the job's state in the queue (cancelled, discarded,
	// completed); empty when the job is gone.
	QueueState string
}

// LostJobFinder finds lost jobs: the queue (store.Jobs) implements it.
type LostJobFinder interface {
	Lost(ctx context.Context, limit int) ([]LostJob, error)
}

// JobAudit closes the records of deferred calls their queue will never
// run again: a process that died on every attempt until the queue's
// rescue gave up, a job deleted from the queue's table. A job is closed
// once it has been seen lost for Grace (two checks at least Grace apart),
// so a cancel or a last attempt that is ending the record itself is not
// raced. Closing is idempotent (only an open record changes), so every
// replica may run its own audit.
type JobAudit struct {
	e     *Executor
	find  LostJobFinder
	grace time.Duration
	seen  map[string]time.Time
}

// NewJobAudit is the audit of the executor's job queue; nil when the
// queue cannot tell lost jobs.
func (e *Executor) NewJobAudit(grace time.Duration) *JobAudit {
	find, ok := e.opts.Jobs.(LostJobFinder)
	if !ok {
		return nil
	}
	if grace <= 0 {
		grace = DefaultLostJobGrace
	}
	return &JobAudit{e: e, find: find, grace: grace, seen: map[string]time.Time{}}
}

// lostBatch bounds the lost jobs one Check looks at.
const lostBatch = 500

// Check looks for lost jobs once and closes those seen lost for the
// grace: how many it closed. Not safe for concurrent use.
func (a *JobAudit) Check(ctx context.Context) (int, error) {
	lost, err := a.find.Lost(ctx, lostBatch)
	if err != nil {
		return 0, fmt.Errorf("lost jobs: %w", err)
	}
	now := a.e.opts.Clock()
	still := make(map[string]time.Time, len(lost))
	closed := 0
	var errs []error
	for _, l := range lost {
		first, ok := a.seen[l.ExecutionID]
		if !ok {
			still[l.ExecutionID] = now
			continue
		}
		if now.Sub(first) < a.grace {
			still[l.ExecutionID] = first
			continue
		}
		done, err := a.e.closeLost(ctx, l)
		if err != nil {
			still[l.ExecutionID] = first
			errs = append(errs, err)
			continue
		}
		if done {
			closed++
		}
	}
	a.seen = still
	return closed, errors.Join(errs...)
}

// closeLost ends the record of a lost job as its replay_safety says: an
// irreversible call an attempt may have sent is uncertain, anything else
// error job_lost. It reports whether it ended it (false: it had ended).
func (e *Executor) closeLost(ctx context.Context, l LostJob) (bool, error) {
	st := e.journal.Store()
	rec, err := st.Get(ctx, l.AccountID, l.ExecutionID)
	if errors.Is(err, journal.ErrNotFound) || (err == nil && rec.Lifecycle == journal.Finished) {
		return false, nil
	}
	var last journal.Event
	if err == nil {
		last, err = st.LastEvent(ctx, rec.ID)
	}
	if err != nil {
		return false, fmt.Errorf("lost job %s: %w", l.ExecutionID, err)
	}
	c := &callRecord{e: e, rec: rec, tr: journal.ResumeTrail(e.opts.Clock, last.State, last.Seq), start: rec.StartedAt,
		out: &Outcome{ExecutionID: rec.ID, Tool: rec.ToolName, Version: rec.ToolVersion, CallID: rec.CallID}, job: true}
	why := "the job queue no longer has job " + l.JobID
	if l.QueueState != "" {
		why = fmt.Sprintf("the job queue %s job %s without running it to its end", l.QueueState, l.JobID)
	}
	switch {
	case last.State == journal.StateExecuting && rec.SideEffectLevel == string(catalog.SideEffectIrreversible):
		e.fail(c.out, StatusUncertain, Errorf(CodeOutcomeUnknown, "%s; an attempt may have sent the call, which is never sent again", why))
		err = c.move(journal.StateOutcomeUnknown, endDetail{Status: StatusUncertain, Code: CodeOutcomeUnknown})
		c.settle(journal.CommitUncertain)
	case last.State != journal.StateExecuting && l.QueueState == "cancelled":
		// Cancelled before it ran, and the canceller did not get to end
		// the record (CancelJob ends it right after river's cancel).
		e.fail(c.out, StatusError, Errorf(CodeCancelled, "%s; %s was cancelled before it ran", why, rec.ToolName))
		err = c.move(journal.StateCancelledBeforeCommit, endDetail{Status: StatusError, Code: CodeCancelled})
		c.settle(journal.CommitDiscarded)
	default:
		e.fail(c.out, StatusError, Errorf(CodeJobLost, "%s; %s does not run again", why, rec.ToolName))
		err = c.move(journal.StateFailedBeforeCommit, endDetail{Status: StatusError, Code: CodeJobLost})
		c.settle(journal.CommitDiscarded)
	}
	if err != nil {
		return false, err
	}
	unchanged, err := st.Apply(ctx, []journal.Write{{Record: c.rec, Events: c.tr.Take()}})
	if err != nil {
		return false, fmt.Errorf("lost job %s: %w", l.ExecutionID, err)
	}
	if len(unchanged) > 0 {
		return false, nil
	}
	e.opts.Logger.WarnContext(ctx, "closed the record of a job the queue will not run again", "execution_id", rec.ID,
		"runtime_job_id", l.JobID, "queue_state", l.QueueState, "status", c.rec.Status)
	return true, nil
}
