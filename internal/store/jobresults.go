package store

import (
	"context"
	"fmt"
	"time"
)

// expireBatch bounds the results one transaction of ExpireJobResults
// drops.
const expireBatch = 200

// ExpireJobResults drops the results of the deferred calls that finished
// longer ago than their account's result retention
// (tools.JobLimits.ResultRetention) before now: the record stays, its
// result and result text emptied and result_expired_at set, and the
// full copy of a cut result (tool_results) goes with it. It returns how
// many results it dropped. Each record changes once, whichever replica
// gets to it first.
func (d *DB) ExpireJobResults(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for {
		n, seen, err := d.expireBatch(ctx, now)
		total += n
		if err != nil || seen < expireBatch {
			return total, err
		}
	}
}

// expireBatch drops one batch of results: how many it dropped, and how
// many records it found to drop (another replica may have been first).
func (d *DB) expireBatch(ctx context.Context, now time.Time) (int64, int, error) {
	at := now.UnixMilli()
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT e.id FROM tool_executions e
		JOIN account_job_limits l ON l.account_id = e.account_id
		WHERE l.result_retention_ms > 0 AND e.delivery_mode = 'async_job' AND e.result_expired_at IS NULL
		AND e.lifecycle_state = 'finished' AND e.finished_at < ? - l.result_retention_ms
		ORDER BY e.finished_at LIMIT ?`), at, expireBatch)
	if err != nil {
		return 0, 0, fmt.Errorf("expired job results: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("expired job results: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("expired job results: %w", err)
	}
	if len(ids) == 0 {
		return 0, 0, nil
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("expire job results: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	upd := d.q(`UPDATE tool_executions SET result = NULL, result_text = '', result_expired_at = ?
		WHERE id = ? AND result_expired_at IS NULL`)
	del := d.q(`DELETE FROM tool_results WHERE execution_id = ?`)
	var n int64
	for _, id := range ids {
		res, err := tx.ExecContext(ctx, upd, at, id)
		if err != nil {
			return 0, 0, fmt.Errorf("expire the result of %s: %w", id, err)
		}
		if k, err := res.RowsAffected(); err == nil {
			n += k
		}
		if _, err := tx.ExecContext(ctx, del, id); err != nil {
			return 0, 0, fmt.Errorf("expire the result of %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("expire job results: %w", err)
	}
	return n, len(ids), nil
}
