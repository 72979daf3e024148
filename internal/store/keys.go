package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
)

var _ keys.Store = (*DB)(nil)

func msOf(t time.Time) int64 { return t.UnixMilli() }

func timeOf(ms sql.NullInt64) *time.Time {
	if !ms.Valid {
		return nil
	}
	t := time.UnixMilli(ms.Int64).UTC()
	return &t
}

// CreateAccount inserts an account.
func (d *DB) CreateAccount(ctx context.Context, a keys.Account) error {
	_, err := d.db.ExecContext(ctx, d.q(`INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)`),
		a.ID, a.Name, msOf(a.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert account %s: %w", a.ID, err)
	}
	return nil
}

// Account returns one account or keys.ErrNotFound.
func (d *DB) Account(ctx context.Context, id string) (*keys.Account, error) {
	var a keys.Account
	var created int64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT id, name, created_at FROM accounts WHERE id = ?`), id).Scan(&a.ID, &a.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("account %s: %w", id, keys.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", id, err)
	}
	a.CreatedAt = time.UnixMilli(created).UTC()
	return &a, nil
}

// CreateKey inserts a key (its hash, never its secret).
func (d *DB) CreateKey(ctx context.Context, k keys.Key) error {
	_, err := d.db.ExecContext(ctx, d.q(`INSERT INTO api_keys
		(id, account_id, name, prefix, hash, scopes, calls_per_minute, concurrent_calls, monthly_units_cap,
		 hosted_model_calls, hosted_tool_calls, hosted_result_bytes, hosted_wall_clock_ms, hosted_cost, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.AccountID, k.Name, k.Prefix, k.Hash, strings.Join(k.Scopes, " "),
		k.Limits.CallsPerMinute, k.Limits.ConcurrentCalls, k.Limits.MonthlyUnitsCap,
		k.Limits.Hosted.ModelCalls, k.Limits.Hosted.ToolCalls, k.Limits.Hosted.ResultBytes, k.Limits.Hosted.WallClockMS, k.Limits.Hosted.Cost,
		msOf(k.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert key: %w", err)
	}
	return nil
}

const keyColumns = `id, account_id, name, prefix, hash, scopes, calls_per_minute, concurrent_calls,
	monthly_units_cap, hosted_model_calls, hosted_tool_calls, hosted_result_bytes, hosted_wall_clock_ms, hosted_cost,
	created_at, last_used_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (*keys.Key, error) {
	var k keys.Key
	var scopes string
	var created int64
	var used, revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Hash, &scopes,
		&k.Limits.CallsPerMinute, &k.Limits.ConcurrentCalls, &k.Limits.MonthlyUnitsCap,
		&k.Limits.Hosted.ModelCalls, &k.Limits.Hosted.ToolCalls, &k.Limits.Hosted.ResultBytes, &k.Limits.Hosted.WallClockMS, &k.Limits.Hosted.Cost,
		&created, &used, &revoked); err != nil {
		return nil, err
	}
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt = time.UnixMilli(created).UTC()
	k.LastUsedAt = timeOf(used)
	k.RevokedAt = timeOf(revoked)
	return &k, nil
}

func (d *DB) keyWhere(ctx context.Context, where string, arg any) (*keys.Key, error) {
	k, err := scanKey(d.queryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, keys.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	return k, nil
}

// KeyByHash finds a key by the hash of its secret.
func (d *DB) KeyByHash(ctx context.Context, hash string) (*keys.Key, error) {
	return d.keyWhere(ctx, `hash = ?`, hash)
}

// KeyByID finds a key by id.
func (d *DB) KeyByID(ctx context.Context, id string) (*keys.Key, error) {
	return d.keyWhere(ctx, `id = ?`, id)
}

// ListKeys lists keys, newest first, of one account or all ("").
func (d *DB) ListKeys(ctx context.Context, accountID string) ([]keys.Key, error) {
	query := `SELECT ` + keyColumns + ` FROM api_keys`
	var args []any
	if accountID != "" {
		query += ` WHERE account_id = ?`
		args = append(args, accountID)
	}
	rows, err := d.db.QueryContext(ctx, d.q(query+` ORDER BY created_at DESC, id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	out := []keys.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		out = append(out, *k)
	}
	return out, rows.Err()
}

// CountKeys counts every key, revoked ones included.
func (d *DB) CountKeys(ctx context.Context) (int, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count keys: %w", err)
	}
	return n, nil
}

func (d *DB) updateKey(ctx context.Context, id, set string, args ...any) error {
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE api_keys SET `+set+` WHERE id = ?`), append(args, id)...)
	if err != nil {
		return fmt.Errorf("update key %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("key %s: %w", id, keys.ErrNotFound)
	}
	return nil
}

// RevokeKey marks a key revoked (the first revocation time is kept).
func (d *DB) RevokeKey(ctx context.Context, id string, at time.Time) error {
	return d.updateKey(ctx, id, `revoked_at = COALESCE(revoked_at, ?)`, msOf(at))
}

// SetLimits replaces a key's limits.
func (d *DB) SetLimits(ctx context.Context, id string, l keys.Limits) error {
	return d.updateKey(ctx, id, `calls_per_minute = ?, concurrent_calls = ?, monthly_units_cap = ?,
		hosted_model_calls = ?, hosted_tool_calls = ?, hosted_result_bytes = ?, hosted_wall_clock_ms = ?, hosted_cost = ?`,
		l.CallsPerMinute, l.ConcurrentCalls, l.MonthlyUnitsCap,
		l.Hosted.ModelCalls, l.Hosted.ToolCalls, l.Hosted.ResultBytes, l.Hosted.WallClockMS, l.Hosted.Cost)
}

// TouchKey records a key's last use.
func (d *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	return d.updateKey(ctx, id, `last_used_at = ?`, msOf(at))
}

// ReserveCost adds cost to the key's month total when the total stays within
// limit. The conditional UPDATE is atomic in both dialects, so concurrent
// reservations from any number of replicas never pass the cap together.
func (d *DB) ReserveCost(ctx context.Context, keyID, month string, cost, limit float64) (bool, float64, error) {
	if _, err := d.db.ExecContext(ctx, d.q(`INSERT INTO key_month_cost (key_id, month, cost) VALUES (?, ?, 0)
		ON CONFLICT (key_id, month) DO NOTHING`), keyID, month); err != nil {
		return false, 0, fmt.Errorf("reserve: %w", err)
	}
	cond := ``
	args := []any{cost, keyID, month}
	if limit > 0 {
		cond = ` AND cost + ? <= ?`
		args = append(args, cost, limit)
	}
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE key_month_cost SET cost = cost + ? WHERE key_id = ? AND month = ?`+cond), args...)
	if err != nil {
		return false, 0, fmt.Errorf("reserve: %w", err)
	}
	n, _ := res.RowsAffected()
	used, err := d.MonthCost(ctx, keyID, month)
	if err != nil {
		return false, 0, err
	}
	if n == 1 {
		used -= cost
	}
	return n == 1, used, nil
}

// SettleUsage turns a reservation into the call's real cost and adds the
// call to the per-tool report, in one transaction.
func (d *DB) SettleUsage(ctx context.Context, row keys.UsageRow, reserved float64) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO key_month_cost (key_id, month, cost) VALUES (?, ?, 0)
		ON CONFLICT (key_id, month) DO NOTHING`), row.KeyID, row.Month); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	if _, err := tx.ExecContext(ctx, d.q(`UPDATE key_month_cost SET cost = cost + ? WHERE key_id = ? AND month = ?`),
		row.Cost-reserved, row.KeyID, row.Month); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	if row.Calls == 0 && row.Units == 0 && row.Cost == 0 {
		// A reservation released without a call (keys.Ticket.Withdraw):
		// the month total only.
		return tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO key_usage (account_id, key_id, month, tool, calls, units, cost)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (key_id, month, tool) DO UPDATE SET
			calls = key_usage.calls + excluded.calls,
			units = key_usage.units + excluded.units,
			cost = key_usage.cost + excluded.cost`),
		row.AccountID, row.KeyID, row.Month, row.Tool, row.Calls, row.Units, row.Cost); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	return tx.Commit()
}

// MonthCost is a key's month total, reservations included.
func (d *DB) MonthCost(ctx context.Context, keyID, month string) (float64, error) {
	var cost float64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT cost FROM key_month_cost WHERE key_id = ? AND month = ?`), keyID, month).Scan(&cost)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("month cost: %w", err)
	}
	return cost, nil
}

// Usage lists settled usage of one account ("" = all) in a month ("" = all
// months), by key and tool.
func (d *DB) Usage(ctx context.Context, accountID, month string) ([]keys.UsageRow, error) {
	query := `SELECT account_id, key_id, month, tool, calls, units, cost FROM key_usage WHERE 1 = 1`
	var args []any
	if accountID != "" {
		query += ` AND account_id = ?`
		args = append(args, accountID)
	}
	if month != "" {
		query += ` AND month = ?`
		args = append(args, month)
	}
	rows, err := d.db.QueryContext(ctx, d.q(query+` ORDER BY month, account_id, key_id, tool`), args...)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	out := []keys.UsageRow{}
	for rows.Next() {
		var r keys.UsageRow
		if err := rows.Scan(&r.AccountID, &r.KeyID, &r.Month, &r.Tool, &r.Calls, &r.Units, &r.Cost); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
