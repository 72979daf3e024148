package store

import (
	"context"
	"fmt"
	"time"
)

// InsertRound keeps one round record of a hosted /v1 loop (its JSON, as
// the loop wrote it) where every replica reads it. A record written twice
// (the same run and round) is kept once.
func (d *DB) InsertRound(ctx context.Context, accountID, requestID, runID string, round int, at time.Time, record []byte) error {
	_, err := d.db.ExecContext(ctx, d.q(`INSERT INTO v1_tool_rounds (account_id, request_id, run_id, round, created_at, record)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (account_id, request_id, run_id, round) DO NOTHING`),
		storable([]any{accountID, requestID, runID, round, at.UnixMilli(), string(record)})...)
	if err != nil {
		return fmt.Errorf("insert round %s/%d: %w", requestID, round, err)
	}
	return nil
}

// RoundsOfRequest returns one account's round records of a request, in
// the order they were made.
func (d *DB) RoundsOfRequest(ctx context.Context, accountID, requestID string) ([][]byte, error) {
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT record FROM v1_tool_rounds WHERE account_id = ? AND request_id = ?
		ORDER BY created_at, run_id, round LIMIT 1000`), storable([]any{accountID, requestID})...)
	if err != nil {
		return nil, fmt.Errorf("read rounds of %s: %w", requestID, err)
	}
	defer rows.Close()
	out := [][]byte{}
	for rows.Next() {
		var rec string
		if err := rows.Scan(&rec); err != nil {
			return nil, fmt.Errorf("read rounds of %s: %w", requestID, err)
		}
		out = append(out, []byte(rec))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rounds of %s: %w", requestID, err)
	}
	return out, nil
}

// PruneRounds deletes up to limit round records made before before, and
// says how many went; a caller loops while it deletes a full batch, so no
// delete holds the table for long.
func (d *DB) PruneRounds(ctx context.Context, before time.Time, limit int) (int64, error) {
	res, err := d.db.ExecContext(ctx, d.q(`DELETE FROM v1_tool_rounds WHERE (account_id, request_id, run_id, round) IN
		(SELECT account_id, request_id, run_id, round FROM v1_tool_rounds WHERE created_at < ? LIMIT ?)`), before.UnixMilli(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune rounds: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
