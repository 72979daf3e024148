package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/toolhost/toolhost/journal"
)

// PutResult implements journal.Store.PutResult: one row of tool_results,
// the first copy of an execution kept.
func (d *DB) PutResult(ctx context.Context, r journal.FullResult) error {
	text := r.Text
	if text == nil {
		text = []byte{}
	}
	var structured any
	if r.Structured != nil {
		structured = []byte(r.Structured)
	}
	_, err := d.db.ExecContext(ctx, d.q(`INSERT INTO tool_results
		(execution_id, account_id, text, text_bytes, structured, structured_bytes, untrusted, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (execution_id) DO NOTHING`),
		r.ExecutionID, r.AccountID, text, r.TextBytes, structured, r.StructuredBytes, r.Untrusted, r.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("keep the result of execution %s: %w", r.ExecutionID, err)
	}
	return nil
}

// GetResult implements journal.Store.GetResult.
func (d *DB) GetResult(ctx context.Context, accountID, id string) (journal.FullResult, error) {
	r := journal.FullResult{AccountID: accountID, ExecutionID: id}
	var structured []byte
	var created int64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT text, text_bytes, structured, structured_bytes, untrusted, created_at
		FROM tool_results WHERE account_id = ? AND execution_id = ?`), accountID, id).
		Scan(&r.Text, &r.TextBytes, &structured, &r.StructuredBytes, &r.Untrusted, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return journal.FullResult{}, journal.ErrNotFound
	}
	if err != nil {
		return journal.FullResult{}, fmt.Errorf("read the result of execution %s: %w", id, err)
	}
	if structured != nil {
		r.Structured = structured
	}
	r.CreatedAt = fromMS(sql.NullInt64{Int64: created, Valid: true})
	return r, nil
}
