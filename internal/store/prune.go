package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// PruneOptions say what a journal prune deletes.
type PruneOptions struct {
	// Before: finished records created before it go, with their whole
	// results, the idempotency keys that name them and the /v1 round
	// records made before it. Zero: none by age.
	Before time.Time
	// MaxRows: the oldest finished records beyond this many go. 0: no cap.
	MaxRows int64
	// Batch is the rows of one transaction (default 500): a writer waits
	// for at most one batch.
	Batch int
}

// PruneResult counts what a prune deleted; Skipped is set when another
// replica was pruning (PostgreSQL), which then does the work.
type PruneResult struct {
	Records, Rounds int64
	Skipped         bool
}

// pruneLock is the advisory lock key of the journal's pruner: one replica
// prunes at a time.
const pruneLock = 0x746f6f6c70727531 // "toolpru1"

// Prune deletes what o says, a batch per transaction, oldest first; open
// records are never deleted. On PostgreSQL each batch first takes an
// advisory transaction lock without waiting, so while one replica prunes
// the others skip; concurrent writers wait for at most one batch (they
// insert new rows, which no batch touches).
func (d *DB) Prune(ctx context.Context, o PruneOptions) (PruneResult, error) {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	var res PruneResult
	for !o.Before.IsZero() {
		n, skipped, err := d.pruneBatch(ctx, o.Before, 0, o.Batch)
		res.Records += n
		if err != nil || skipped {
			res.Skipped = skipped
			return res, err
		}
		if n < int64(o.Batch) {
			break
		}
	}
	for o.MaxRows > 0 {
		var count int64
		if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM tool_executions`).Scan(&count); err != nil {
			return res, fmt.Errorf("prune: count records: %w", err)
		}
		if count <= o.MaxRows {
			break
		}
		n, skipped, err := d.pruneBatch(ctx, time.Time{}, count-o.MaxRows, o.Batch)
		res.Records += n
		if err != nil || skipped {
			res.Skipped = skipped
			return res, err
		}
		if n == 0 {
			break // only open records are left over the cap
		}
	}
	if !o.Before.IsZero() {
		for {
			n, err := d.PruneRounds(ctx, o.Before, o.Batch)
			res.Rounds += n
			if err != nil {
				return res, err
			}
			if n < int64(o.Batch) {
				break
			}
		}
	}
	return res, nil
}

// pruneBatch deletes one batch: finished records created before before
// (when set), or else the over oldest (at most batch).
//
// On SQLite a batch holds the journal writer's lock: a journal write then
// waits for the batch and goes right after it. Left to SQLite's busy
// handler, which sleeps up to 100 ms between tries, the writer missed the
// gaps between batches and waited out whole runs of them (0.6 s and more
// measured, bench/prunewrite).
func (d *DB) pruneBatch(ctx context.Context, before time.Time, over int64, batch int) (int64, bool, error) {
	if !d.pg() {
		d.sw.mu.Lock()
		defer d.sw.mu.Unlock()
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, fmt.Errorf("prune: %w", err)
	}
	defer tx.Rollback()
	if d.pg() {
		var got bool
		if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(pruneLock)).Scan(&got); err != nil {
			return 0, false, fmt.Errorf("prune: lock: %w", err)
		}
		if !got {
			return 0, true, nil
		}
	}
	where, args := `lifecycle_state = 'finished'`, []any{}
	limit := int64(batch)
	if !before.IsZero() {
		where += ` AND created_at < ?`
		args = append(args, before.UnixMilli())
	}
	if over > 0 && over < limit {
		limit = over
	}
	ids, err := pruneIDs(ctx, tx, d.q(`SELECT id FROM tool_executions WHERE `+where+` ORDER BY created_at, id LIMIT ?`), append(args, limit)...)
	if err != nil || len(ids) == 0 {
		return 0, false, err
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")"
	for _, table := range []struct{ name, col string }{{"tool_results", "execution_id"}, {"idempotency_keys", "execution_id"}, {"tool_executions", "id"}} {
		if _, err := tx.ExecContext(ctx, d.q(`DELETE FROM `+table.name+` WHERE `+table.col+` IN `+in), ids...); err != nil {
			return 0, false, fmt.Errorf("prune %s: %w", table.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, false, fmt.Errorf("prune: %w", err)
	}
	return int64(len(ids)), false, nil
}

func pruneIDs(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]any, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("prune: select: %w", err)
	}
	defer rows.Close()
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("prune: select: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
