package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"toolhost/session"
)

var _ session.Store = (*DB)(nil)

const selectSession = `SELECT account_id, id, metadata, tool_permissions, created_at, updated_at FROM sessions`

// CreateSession implements session.Store.
func (d *DB) CreateSession(ctx context.Context, s session.Session) error {
	perms, err := encodePermissions(s.Permissions)
	if err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, d.q(`INSERT INTO sessions (account_id, id, metadata, tool_permissions, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (account_id, id) DO NOTHING`),
		s.AccountID, s.ID, metadataText(s.Metadata), perms, s.CreatedAt.UnixMilli(), s.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return session.ErrConflict
	}
	return nil
}

// GetSession implements session.Store.
func (d *DB) GetSession(ctx context.Context, account, id string) (session.Session, error) {
	row := d.db.QueryRowContext(ctx, d.q(selectSession+` WHERE account_id = ? AND id = ?`), account, id)
	return scanSession(row)
}

// DeleteSession implements session.Store.
func (d *DB) DeleteSession(ctx context.Context, account, id string) error {
	res, err := d.db.ExecContext(ctx, d.q(`DELETE FROM sessions WHERE account_id = ? AND id = ?`), account, id)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return session.ErrNotFound
	}
	return nil
}

// TouchSession implements session.Store: one insert that does nothing when
// the session exists, then a read.
func (d *DB) TouchSession(ctx context.Context, account, id string, now time.Time) (session.Session, error) {
	if _, err := d.db.ExecContext(ctx, d.q(`INSERT INTO sessions (account_id, id, metadata, created_at, updated_at)
		VALUES (?, ?, '{}', ?, ?) ON CONFLICT (account_id, id) DO NOTHING`), account, id, now.UnixMilli(), now.UnixMilli()); err != nil {
		return session.Session{}, fmt.Errorf("touch session: %w", err)
	}
	return d.GetSession(ctx, account, id)
}

// SetSessionPermissions implements session.Store.
func (d *DB) SetSessionPermissions(ctx context.Context, account, id string, p session.Permissions, now time.Time) error {
	perms, err := encodePermissions(p)
	if err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE sessions SET tool_permissions = ?, updated_at = ? WHERE account_id = ? AND id = ?`),
		perms, now.UnixMilli(), account, id)
	if err != nil {
		return fmt.Errorf("set session permissions: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return session.ErrNotFound
	}
	return nil
}

func metadataText(m json.RawMessage) string {
	if len(m) == 0 {
		return "{}"
	}
	return string(m)
}

func encodePermissions(p session.Permissions) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode permissions: %w", err)
	}
	return string(b), nil
}

func scanSession(row *sql.Row) (session.Session, error) {
	var s session.Session
	var md string
	var perms sql.NullString
	var created, updated int64
	err := row.Scan(&s.AccountID, &s.ID, &md, &perms, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return session.Session{}, session.ErrNotFound
	}
	if err != nil {
		return session.Session{}, fmt.Errorf("read session: %w", err)
	}
	s.Metadata = json.RawMessage(md)
	s.Permissions = session.Default()
	if perms.Valid && perms.String != "" {
		if err := json.Unmarshal([]byte(perms.String), &s.Permissions); err != nil {
			return session.Session{}, fmt.Errorf("stored permissions of session %s: %w", s.ID, err)
		}
	}
	s.CreatedAt, s.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return s, nil
}
