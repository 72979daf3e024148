package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/tools/approval"
)

var _ approval.Store = (*DB)(nil)

const approvalColumns = `id, account_id, session_id, face, tool_name, tool_version, side_effect_level, digest, arguments,
	execution_id, status, requested_at, expires_at, decided_by, decided_at, decided_via, reason, consumed_by, consumed_at`

func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func timeOrZero(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// CreateApproval implements approval.Store.
func (d *DB) CreateApproval(ctx context.Context, a approval.Approval) error {
	_, err := d.db.ExecContext(ctx, d.q(`INSERT INTO approvals (`+approvalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		a.ID, a.AccountID, a.SessionID, a.Face, a.Tool, a.ToolVersion, a.SideEffectLevel, a.Digest, string(a.Args),
		a.ExecutionID, string(a.Status), a.RequestedAt.UnixMilli(), a.ExpiresAt.UnixMilli(), a.DecidedBy, msOrZero(a.DecidedAt),
		a.DecidedVia, a.Reason, a.ConsumedBy, msOrZero(a.ConsumedAt))
	if err != nil {
		return fmt.Errorf("create approval %s: %w", a.ID, err)
	}
	return nil
}

func scanApproval(row interface{ Scan(...any) error }) (approval.Approval, error) {
	var a approval.Approval
	var args, status string
	var req, exp, dec, con int64
	if err := row.Scan(&a.ID, &a.AccountID, &a.SessionID, &a.Face, &a.Tool, &a.ToolVersion, &a.SideEffectLevel, &a.Digest, &args,
		&a.ExecutionID, &status, &req, &exp, &a.DecidedBy, &dec, &a.DecidedVia, &a.Reason, &a.ConsumedBy, &con); err != nil {
		return a, err
	}
	a.Args, a.Status = []byte(args), approval.Status(status)
	a.RequestedAt, a.ExpiresAt = time.UnixMilli(req).UTC(), time.UnixMilli(exp).UTC()
	a.DecidedAt, a.ConsumedAt = timeOrZero(dec), timeOrZero(con)
	return a, nil
}

// GetApproval implements approval.Store.
func (d *DB) GetApproval(ctx context.Context, accountID, id string) (approval.Approval, error) {
	a, err := scanApproval(d.db.QueryRowContext(ctx, d.q(`SELECT `+approvalColumns+` FROM approvals WHERE account_id = ? AND id = ?`), accountID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, approval.ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("get approval %s: %w", id, err)
	}
	return a, nil
}

// ListApprovals implements approval.Store.
func (d *DB) ListApprovals(ctx context.Context, q approval.Query) ([]approval.Approval, int, error) {
	where, args := `account_id = ?`, []any{q.AccountID}
	now := q.Now.UnixMilli()
	switch q.Status {
	case "":
	case approval.Pending, approval.Approved:
		where += ` AND status = ? AND expires_at > ?`
		args = append(args, string(q.Status), now)
	case approval.Expired:
		where += ` AND status IN ('pending', 'approved') AND expires_at <= ?`
		args = append(args, now)
	default:
		where += ` AND status = ?`
		args = append(args, string(q.Status))
	}
	if q.SessionID != "" {
		where += ` AND session_id = ?`
		args = append(args, q.SessionID)
	}
	if q.Tool != "" {
		where += ` AND tool_name = ?`
		args = append(args, q.Tool)
	}
	var total int
	if err := d.db.QueryRowContext(ctx, d.q(`SELECT COUNT(*) FROM approvals WHERE `+where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count approvals: %w", err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
		if d.pg() {
			limit = 1 << 30
		}
	}
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT `+approvalColumns+` FROM approvals WHERE `+where+
		` ORDER BY requested_at DESC, id DESC LIMIT ? OFFSET ?`), append(args, limit, q.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list approvals: %w", err)
	}
	defer rows.Close()
	out := []approval.Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list approvals: %w", err)
	}
	return out, total, nil
}

// DecideApproval implements approval.Store: one UPDATE that requires a
// pending, unexpired approval.
func (d *DB) DecideApproval(ctx context.Context, accountID, id string, dec approval.Decision, now time.Time) (approval.Approval, error) {
	status := approval.Declined
	if dec.Approve {
		status = approval.Approved
	}
	a, err := scanApproval(d.db.QueryRowContext(ctx, d.q(`UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, decided_via = ?, reason = ?
		WHERE account_id = ? AND id = ? AND status = 'pending' AND expires_at > ? RETURNING `+approvalColumns),
		string(status), dec.By, now.UnixMilli(), dec.Via, dec.Reason, accountID, id, now.UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := d.GetApproval(ctx, accountID, id)
		if err != nil {
			return cur, err
		}
		return cur, &approval.StateError{Status: cur.Effective(now)}
	}
	if err != nil {
		return a, fmt.Errorf("decide approval %s: %w", id, err)
	}
	return a, nil
}

// ConsumeApproval implements approval.Store: one UPDATE of the oldest
// matching approval that still requires status 'approved', so of two
// concurrent consumers one gets it. On PostgreSQL the first try skips
// locked rows (SKIP LOCKED), so that a second consumer takes the next
// approval, if any, instead of waiting for the first and finding none.
// A row can be locked by more than a consumer, though: a DecideApproval
// racing on the same approval locks it while it rechecks, and finds it
// decided. So when the first try finds nothing, a second one waits for
// the locks and looks again.
func (d *DB) ConsumeApproval(ctx context.Context, accountID, digest, executionID string, now time.Time) (approval.Approval, error) {
	if !d.pg() {
		return d.consumeApproval(ctx, accountID, digest, executionID, now, ``)
	}
	a, err := d.consumeApproval(ctx, accountID, digest, executionID, now, ` FOR UPDATE SKIP LOCKED`)
	if !errors.Is(err, approval.ErrNoneApproved) {
		return a, err
	}
	return d.consumeApproval(ctx, accountID, digest, executionID, now, ` FOR UPDATE`)
}

func (d *DB) consumeApproval(ctx context.Context, accountID, digest, executionID string, now time.Time, lock string) (approval.Approval, error) {
	a, err := scanApproval(d.db.QueryRowContext(ctx, d.q(`UPDATE approvals SET status = 'consumed', consumed_by = ?, consumed_at = ?
		WHERE status = 'approved' AND id = (SELECT id FROM approvals WHERE account_id = ? AND digest = ? AND status = 'approved'
			AND expires_at > ? ORDER BY requested_at, id LIMIT 1`+lock+`) RETURNING `+approvalColumns),
		executionID, now.UnixMilli(), accountID, digest, now.UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return a, approval.ErrNoneApproved
	}
	if err != nil {
		return a, fmt.Errorf("consume an approval: %w", err)
	}
	return a, nil
}
