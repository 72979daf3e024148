package journal

import (
	"context"
	"fmt"
	"time"
)

// Reconcile closes the records that processes which are no longer alive
// left opened: read-only calls become timeout/discarded (nothing can have
// changed), calls with side effects uncertain/uncertain (they may have
// committed). Each gets an event that says why. It returns how many records
// it closed.
func (j *Journal) Reconcile(ctx context.Context) (int, error) {
	open, err := j.store.Opened(ctx)
	if err != nil {
		return 0, fmt.Errorf("journal: list opened records: %w", err)
	}
	alive := map[string]bool{}
	var ws []Write
	for _, r := range open {
		if r.InstanceID == j.opts.InstanceID || r.DeliveryMode == DeliveryAsync {
			// A deferred call belongs to its job queue, which runs it
			// again or ends it when the process that ran it is gone.
			continue
		}
		a, seen := alive[r.InstanceID]
		if !seen {
			if a, err = j.store.Alive(ctx, r.InstanceID); err != nil {
				return 0, fmt.Errorf("journal: liveness of instance %s: %w", r.InstanceID, err)
			}
			alive[r.InstanceID] = a
		}
		if a {
			continue
		}
		last, err := j.store.LastEvent(ctx, r.ID)
		if err != nil {
			return 0, fmt.Errorf("journal: last event of %s: %w", r.ID, err)
		}
		w, err := reconciled(r, last, j.opts.Clock)
		if err != nil {
			return 0, err
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		return 0, nil
	}
	if err := j.store.Write(ctx, ws); err != nil {
		return 0, fmt.Errorf("journal: reconcile: %w", err)
	}
	for _, w := range ws {
		j.opts.Logger.WarnContext(ctx, "reconciled a call left open by a dead process",
			"execution_id", w.Record.ID, "tool", w.Record.ToolName, "status", w.Record.Status, "instance_id", w.Record.InstanceID)
	}
	return len(ws), nil
}

// DeliveryAsync is the delivery mode of a deferred call: its record stays
// open across the death of the process that queued or ran it (the job
// queue owns it), so reconciliation leaves it alone.
const DeliveryAsync = "async_job"

// ReconcileReason is the reason written into reconciliation events.
const ReconcileReason = "reconciled at start-up: the process that ran this call ended before recording its outcome"

func reconciled(r Record, last Event, clock func() time.Time) (Write, error) {
	now := clock()
	tr := ResumeTrail(clock, last.State, last.Seq)
	sideEffects := r.SideEffectLevel != "" && r.SideEffectLevel != "none"
	detail := map[string]any{"reason": ReconcileReason, "reconciled": true, "instance_id": r.InstanceID}
	switch {
	case sideEffects && (last.State == StateExecuting || last.State == StateCommitted):
		if err := tr.Move(StateOutcomeUnknown, detail); err != nil {
			return Write{}, fmt.Errorf("reconcile %s: %w", r.ID, err)
		}
		r.Status, r.Commit = StatusUncertain, CommitUncertain
		r.ErrorCode, r.ErrorMessage = "outcome_unknown", "the server stopped while this call ran; it may or may not have taken effect"
	case last.State == StatePrepared || last.State == StateExecuting:
		if err := tr.Move(StateFailedBeforeCommit, detail); err != nil {
			return Write{}, fmt.Errorf("reconcile %s: %w", r.ID, err)
		}
		r.Status, r.Commit = StatusTimeout, CommitDiscarded
		r.ErrorCode, r.ErrorMessage = "timeout", "the server stopped while this call ran; it did not finish"
	case last.State == StateAwaitingApproval:
		// Nothing ran: the call waited for its user when the process ended.
		if err := tr.Move(StateCancelledBeforeCommit, detail); err != nil {
			return Write{}, fmt.Errorf("reconcile %s: %w", r.ID, err)
		}
		r.Status, r.Commit = StatusError, CommitDiscarded
		r.ErrorCode, r.ErrorMessage = "cancelled", "the server stopped while this call waited for its approval; it did not run"
	default:
		return Write{}, fmt.Errorf("reconcile %s: unexpected open state %s", r.ID, last.State)
	}
	r.State = tr.State()
	r.Lifecycle = Finished
	r.FinishedAt = now
	r.Duration = now.Sub(r.StartedAt)
	r.Result = mustJSON(map[string]any{"error": map[string]any{"code": r.ErrorCode, "message": r.ErrorMessage}})
	r.ResultText = r.ErrorMessage
	r.Summary = r.ErrorCode
	return Write{Record: r, Events: tr.Take()}, nil
}
