package journal

import (
	"context"
	"fmt"
	"time"
)

// Wait returns the record id of account once it is finished, or ctx's error.
//
// A record opened by another process whose liveness mark is gone (a
// replica killed mid-call) is reconciled here, as a restart of that process
// would (Reconcile), so a duplicate waiting for it, on any replica, gets an
// outcome within a poll of the holder's death instead of at its deadline:
// a read-only call ends discarded, which frees its idempotency key for the
// duplicate to run; a call with side effects ends uncertain.
func (j *Journal) Wait(ctx context.Context, accountID, id string) (Record, error) {
	j.mu.Lock()
	rn := j.running[id]
	j.mu.Unlock()
	if rn != nil {
		select {
		case <-rn.done:
		case <-ctx.Done():
			return Record{}, ctx.Err()
		}
	}
	t := time.NewTicker(j.opts.PollInterval)
	defer t.Stop()
	for {
		// Through Store: an outcome this process has spooled is applied
		// first.
		r, err := j.Store().Get(ctx, accountID, id)
		if err != nil {
			return Record{}, err
		}
		if r.Lifecycle == Finished {
			return r, nil
		}
		if done, ok, err := j.reconcileDead(ctx, r); err != nil || ok {
			return done, err
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return Record{}, ctx.Err()
		}
	}
}

// ReconcileReasonReplica is the reason of a record reconciled by another
// process while it waited for the record's outcome.
const ReconcileReasonReplica = "reconciled by another replica: the process that ran this call ended before recording its outcome"

// reconcileDead closes r when the process that opened it is gone, and
// returns the closed record (ok) as the store then holds it.
func (j *Journal) reconcileDead(ctx context.Context, r Record) (Record, bool, error) {
	if r.InstanceID == "" || r.InstanceID == j.opts.InstanceID || r.DeliveryMode == DeliveryAsync {
		return Record{}, false, nil
	}
	alive, err := j.store.Alive(ctx, r.InstanceID)
	if err != nil || alive {
		return Record{}, false, nil // asked again at the next poll
	}
	last, err := j.store.LastEvent(ctx, r.ID)
	if err != nil {
		return Record{}, false, fmt.Errorf("journal: last event of %s: %w", r.ID, err)
	}
	w, err := reconciled(r, last, j.opts.Clock)
	if err != nil {
		return Record{}, false, err
	}
	detail := map[string]any{"reason": ReconcileReasonReplica, "reconciled": true, "instance_id": r.InstanceID, "by": j.opts.InstanceID}
	w.Events[len(w.Events)-1].Detail = mustJSON(detail)
	// Applied to the store itself, so every replica's duplicate reads it,
	// and only while the record is opened: another replica's reconciliation
	// or the dead process's spool applied later leaves the first outcome.
	if _, err := j.store.Apply(ctx, []Write{w}); err != nil {
		return Record{}, false, fmt.Errorf("journal: reconcile %s: %w", r.ID, err)
	}
	j.opts.Logger.WarnContext(ctx, "reconciled a call left open by a dead replica",
		"execution_id", r.ID, "tool", r.ToolName, "status", w.Record.Status, "instance_id", r.InstanceID)
	done, err := j.store.Get(ctx, r.AccountID, r.ID)
	if err != nil {
		return Record{}, false, err
	}
	return done, done.Lifecycle == Finished, nil
}
