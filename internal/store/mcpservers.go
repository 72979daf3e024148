package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

var _ mcpremote.Store = (*DB)(nil)

// mcpConfig is the non-secret part of a server kept in config.
type mcpConfig struct {
	HeaderNames []string                      `json:"header_names"`
	Auth        mcpremote.Auth                `json:"auth"`
	TimeoutMS   int64                         `json:"timeout_ms,omitempty"`
	Tools       map[string]mcpremote.Override `json:"tools,omitempty"`
	Defaults    mcpremote.Defaults            `json:"defaults,omitzero"`
}

const mcpColumns = `id, account_id, name, url, config, secrets, enabled, created_at, updated_at`

func mcpArgs(s mcpremote.Server) ([]any, error) {
	cfg, err := json.Marshal(mcpConfig{HeaderNames: s.HeaderNames, Auth: s.Auth, TimeoutMS: s.Timeout.Milliseconds(), Tools: s.Tools, Defaults: s.Defaults})
	if err != nil {
		return nil, fmt.Errorf("encode MCP server config: %w", err)
	}
	var sealed any
	if len(s.Sealed) > 0 {
		sealed = s.Sealed
	}
	return []any{s.ID, s.AccountID, s.Name, s.URL, string(cfg), sealed, s.Enabled, s.CreatedAt.UnixMilli(), s.UpdatedAt.UnixMilli()}, nil
}

// CreateMCPServer implements mcpremote.Store.
func (d *DB) CreateMCPServer(ctx context.Context, s mcpremote.Server, limit int) error {
	args, err := mcpArgs(s)
	if err != nil {
		return err
	}
	err = d.insertCapped(ctx, "mcp_servers", s.AccountID, limit, `INSERT INTO mcp_servers (`+mcpColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, args)
	switch {
	case errors.Is(err, errAtCap):
		return mcpremote.ErrLimit
	case isUnique(err):
		return mcpremote.ErrConflict
	case err != nil:
		return fmt.Errorf("create MCP server: %w", err)
	}
	return nil
}

// GetMCPServer implements mcpremote.Store.
func (d *DB) GetMCPServer(ctx context.Context, account, id string) (mcpremote.Server, error) {
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT `+mcpColumns+` FROM mcp_servers WHERE account_id = ? AND id = ?`), account, id)
	if err != nil {
		return mcpremote.Server{}, fmt.Errorf("get MCP server: %w", err)
	}
	ss, err := scanMCP(rows)
	if err != nil {
		return mcpremote.Server{}, err
	}
	if len(ss) == 0 {
		return mcpremote.Server{}, mcpremote.ErrNotFound
	}
	return ss[0], nil
}

// ListMCPServers implements mcpremote.Store.
func (d *DB) ListMCPServers(ctx context.Context, account string) ([]mcpremote.Server, error) {
	rows, err := d.query(ctx, `SELECT `+mcpColumns+` FROM mcp_servers WHERE account_id = ? ORDER BY name`, account)
	if err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", err)
	}
	return scanMCP(rows)
}

// UpdateMCPServer implements mcpremote.Store.
func (d *DB) UpdateMCPServer(ctx context.Context, s mcpremote.Server) error {
	a, err := mcpArgs(s)
	if err != nil {
		return err
	}
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE mcp_servers SET name = ?, url = ?, config = ?, secrets = ?, enabled = ?,
		updated_at = ? WHERE account_id = ? AND id = ?`), a[2], a[3], a[4], a[5], a[6], a[8], s.AccountID, s.ID)
	if err != nil {
		if isUnique(err) {
			return mcpremote.ErrConflict
		}
		return fmt.Errorf("update MCP server: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return mcpremote.ErrNotFound
	}
	return nil
}

// DeleteMCPServer implements mcpremote.Store.
func (d *DB) DeleteMCPServer(ctx context.Context, account, id string) error {
	res, err := d.db.ExecContext(ctx, d.q(`DELETE FROM mcp_servers WHERE account_id = ? AND id = ?`), account, id)
	if err != nil {
		return fmt.Errorf("delete MCP server: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return mcpremote.ErrNotFound
	}
	return nil
}

// SaveMCPSnapshot implements mcpremote.Store: a snapshot listed before
// the stored one (a save tried again, another replica's slower listing)
// leaves the stored one as it is.
func (d *DB) SaveMCPSnapshot(ctx context.Context, account, id string, snap mcpremote.Snapshot) error {
	at := snap.ListedAt.UnixMilli()
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE mcp_servers SET snapshot = ?, snapshot_at = ?
		WHERE account_id = ? AND id = ? AND (snapshot_at IS NULL OR snapshot_at <= ?)`),
		string(snap.Tools), at, account, id, at)
	if err != nil {
		return fmt.Errorf("save MCP snapshot: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		// Either no such server, or a newer snapshot is kept.
		if _, err := d.GetMCPSnapshot(ctx, account, id); errors.Is(err, mcpremote.ErrNotFound) {
			return mcpremote.ErrNotFound
		}
	}
	return nil
}

// GetMCPSnapshot implements mcpremote.Store.
func (d *DB) GetMCPSnapshot(ctx context.Context, account, id string) (mcpremote.Snapshot, error) {
	var tools sql.NullString
	var at sql.NullInt64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT snapshot, snapshot_at FROM mcp_servers WHERE account_id = ? AND id = ?`), account, id).Scan(&tools, &at)
	switch {
	case err == sql.ErrNoRows:
		return mcpremote.Snapshot{}, mcpremote.ErrNotFound
	case err != nil:
		return mcpremote.Snapshot{}, fmt.Errorf("get MCP snapshot: %w", err)
	case !tools.Valid || !at.Valid:
		return mcpremote.Snapshot{}, mcpremote.ErrNoSnapshot
	}
	return mcpremote.Snapshot{Tools: json.RawMessage(tools.String), ListedAt: time.UnixMilli(at.Int64).UTC()}, nil
}

func scanMCP(rows *sql.Rows) ([]mcpremote.Server, error) {
	defer rows.Close()
	var out []mcpremote.Server
	for rows.Next() {
		var s mcpremote.Server
		var cfg string
		var created, updated int64
		if err := rows.Scan(&s.ID, &s.AccountID, &s.Name, &s.URL, &cfg, &s.Sealed, &s.Enabled, &created, &updated); err != nil {
			return nil, fmt.Errorf("scan MCP server: %w", err)
		}
		var c mcpConfig
		if err := json.Unmarshal([]byte(cfg), &c); err != nil {
			return nil, fmt.Errorf("stored config of MCP server %s: %w", s.ID, err)
		}
		s.HeaderNames, s.Auth, s.Timeout, s.Tools = c.HeaderNames, c.Auth, time.Duration(c.TimeoutMS)*time.Millisecond, c.Tools
		s.Defaults = c.Defaults
		s.CreatedAt, s.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read MCP servers: %w", err)
	}
	return out, nil
}
