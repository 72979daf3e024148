package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/tools/session"
)

var _ session.Store = (*DB)(nil)

const selectSession = `SELECT account_id, id, metadata, tool_permissions, character_json, created_at, updated_at FROM sessions`

// CreateSession implements session.Store.
func (d *DB) CreateSession(ctx context.Context, s session.Session) error {
	perms, err := encodePermissions(s.Permissions)
	if err != nil {
		return err
	}
	char, err := encodeCharacter(s.Character)
	if err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, d.q(`INSERT INTO sessions (account_id, id, metadata, tool_permissions, character_json, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account_id, id) DO NOTHING`),
		s.AccountID, s.ID, metadataText(s.Metadata), perms, char, s.CreatedAt.UnixMilli(), s.UpdatedAt.UnixMilli())
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
	row := d.queryRow(ctx, selectSession+` WHERE account_id = ? AND id = ?`, account, id)
	return scanSession(row)
}

// DeleteSession implements session.Store; the session's variables go
// with it.
func (d *DB) DeleteSession(ctx context.Context, account, id string) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, d.q(`DELETE FROM sessions WHERE account_id = ? AND id = ?`), account, id)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return session.ErrNotFound
	}
	if _, err := tx.ExecContext(ctx, d.q(`DELETE FROM session_variables WHERE account_id = ? AND session_id = ?`), account, id); err != nil {
		return fmt.Errorf("delete session variables: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// SetSessionCharacter implements session.Store.
func (d *DB) SetSessionCharacter(ctx context.Context, account, id string, c *session.Character, now time.Time) error {
	char, err := encodeCharacter(c)
	if err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE sessions SET character_json = ?, updated_at = ? WHERE account_id = ? AND id = ?`),
		char, now.UnixMilli(), account, id)
	if err != nil {
		return fmt.Errorf("set session character: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return session.ErrNotFound
	}
	return nil
}

var _ session.VariableStore = (*DB)(nil)

// GetVariable implements session.VariableStore.
func (d *DB) GetVariable(ctx context.Context, account, sid, name string) (session.Variable, error) {
	var v session.Variable
	var val string
	var at int64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT name, value, updated_at FROM session_variables
		WHERE account_id = ? AND session_id = ? AND name = ?`), account, sid, name).Scan(&v.Name, &val, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return session.Variable{}, session.ErrNoVariable
	}
	if err != nil {
		return session.Variable{}, fmt.Errorf("read variable: %w", err)
	}
	v.Value, v.UpdatedAt = json.RawMessage(val), time.UnixMilli(at).UTC()
	return v, nil
}

// ListVariables implements session.VariableStore. Names are compared
// byte by byte (COLLATE "C" in PostgreSQL, SQLite's default), so the
// pages follow one order whatever the database's locale.
func (d *DB) ListVariables(ctx context.Context, account, sid, after string, limit int) ([]session.Variable, error) {
	collate := ""
	if d.pg() {
		collate = ` COLLATE "C"`
	}
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT name, value, updated_at FROM session_variables
		WHERE account_id = ? AND session_id = ? AND name`+collate+` > ? ORDER BY name`+collate+` LIMIT ?`), account, sid, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list variables: %w", err)
	}
	defer rows.Close()
	var out []session.Variable
	for rows.Next() {
		var v session.Variable
		var val string
		var at int64
		if err := rows.Scan(&v.Name, &val, &at); err != nil {
			return nil, fmt.Errorf("list variables: %w", err)
		}
		v.Value, v.UpdatedAt = json.RawMessage(val), time.UnixMilli(at).UTC()
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list variables: %w", err)
	}
	return out, nil
}

// SetVariable implements session.VariableStore: one upsert that inserts a
// new name only while the session has fewer than MaxVariablesPerSession;
// an existing name is always replaced.
func (d *DB) SetVariable(ctx context.Context, account, sid string, v session.Variable) error {
	res, err := d.db.ExecContext(ctx, d.q(`INSERT INTO session_variables (account_id, session_id, name, value, updated_at)
		SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT) WHERE (SELECT COUNT(*) FROM session_variables WHERE account_id = ? AND session_id = ?) < ?
		   OR EXISTS (SELECT 1 FROM session_variables WHERE account_id = ? AND session_id = ? AND name = ?)
		ON CONFLICT (account_id, session_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`),
		account, sid, v.Name, string(v.Value), v.UpdatedAt.UnixMilli(), account, sid, session.MaxVariablesPerSession, account, sid, v.Name)
	if err != nil {
		return fmt.Errorf("set variable: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return session.ErrTooManyVariables
	}
	return nil
}

// TouchSession implements session.Store: a read, and only when the
// session does not exist yet an insert that does nothing if another
// caller made it meanwhile, then a read again. Every call of an MCP
// session touches it once its cache entry is a second old; the insert
// first took SQLite's write lock on every one of those calls.
func (d *DB) TouchSession(ctx context.Context, account, id string, now time.Time) (session.Session, error) {
	if s, err := d.GetSession(ctx, account, id); !errors.Is(err, session.ErrNotFound) {
		return s, err
	}
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

func encodeCharacter(c *session.Character) (sql.NullString, error) {
	if c == nil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("encode character: %w", err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func scanSession(row *sql.Row) (session.Session, error) {
	var s session.Session
	var md string
	var perms, char sql.NullString
	var created, updated int64
	err := row.Scan(&s.AccountID, &s.ID, &md, &perms, &char, &created, &updated)
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
	if char.Valid {
		s.Character = new(session.Character)
		if err := json.Unmarshal([]byte(char.String), s.Character); err != nil {
			return session.Session{}, fmt.Errorf("stored character of session %s: %w", s.ID, err)
		}
	}
	s.CreatedAt, s.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return s, nil
}
