package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/tools"
)

var _ tools.AccountSettings = (*DB)(nil)

// BuiltinDeliveries implements tools.AccountSettings.
func (d *DB) BuiltinDeliveries(ctx context.Context, account string) (map[string]tools.Delivery, error) {
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT tool_name, default_delivery_mode FROM account_tool_settings WHERE account_id = ?`), account)
	if err != nil {
		return nil, fmt.Errorf("tool settings of %s: %w", account, err)
	}
	defer rows.Close()
	out := map[string]tools.Delivery{}
	for rows.Next() {
		var name, mode string
		if err := rows.Scan(&name, &mode); err != nil {
			return nil, fmt.Errorf("tool settings of %s: %w", account, err)
		}
		out[name] = tools.Delivery(mode)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tool settings of %s: %w", account, err)
	}
	return out, nil
}

// SetBuiltinDelivery implements tools.AccountSettings.
func (d *DB) SetBuiltinDelivery(ctx context.Context, account, tool string, mode tools.Delivery, at time.Time) error {
	var err error
	if mode == tools.DeliveryDefault {
		_, err = d.db.ExecContext(ctx, d.q(`DELETE FROM account_tool_settings WHERE account_id = ? AND tool_name = ?`), account, tool)
	} else {
		_, err = d.db.ExecContext(ctx, d.q(`INSERT INTO account_tool_settings (account_id, tool_name, default_delivery_mode, updated_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (account_id, tool_name) DO UPDATE SET
			default_delivery_mode = excluded.default_delivery_mode, updated_at = excluded.updated_at`),
			storable([]any{account, tool, string(mode), at.UnixMilli()})...)
	}
	if err != nil {
		return fmt.Errorf("set %s of %s: %w", tool, account, err)
	}
	return nil
}

// JobLimits implements tools.AccountSettings.
func (d *DB) JobLimits(ctx context.Context, account string) (tools.JobLimits, error) {
	var l tools.JobLimits
	var retention, updated int64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT max_jobs, max_running, result_retention_ms, updated_at
		FROM account_job_limits WHERE account_id = ?`), account).Scan(&l.MaxJobs, &l.MaxRunning, &retention, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return tools.JobLimits{}, nil
	}
	if err != nil {
		return l, fmt.Errorf("job limits of %s: %w", account, err)
	}
	l.ResultRetention, l.UpdatedAt = time.Duration(retention)*time.Millisecond, time.UnixMilli(updated).UTC()
	return l, nil
}

// SetJobLimits implements tools.AccountSettings: all zero removes the
// account's limits.
func (d *DB) SetJobLimits(ctx context.Context, account string, l tools.JobLimits) error {
	var err error
	if l.MaxJobs == 0 && l.MaxRunning == 0 && l.ResultRetention == 0 {
		_, err = d.db.ExecContext(ctx, d.q(`DELETE FROM account_job_limits WHERE account_id = ?`), account)
	} else {
		_, err = d.db.ExecContext(ctx, d.q(`INSERT INTO account_job_limits (account_id, max_jobs, max_running, result_retention_ms, updated_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET max_jobs = excluded.max_jobs,
			max_running = excluded.max_running, result_retention_ms = excluded.result_retention_ms, updated_at = excluded.updated_at`),
			storable([]any{account, l.MaxJobs, l.MaxRunning, l.ResultRetention.Milliseconds(), l.UpdatedAt.UnixMilli()})...)
	}
	if err != nil {
		return fmt.Errorf("set job limits of %s: %w", account, err)
	}
	return nil
}
