package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// PutMCPAuthorization implements mcpremote.Store: one transaction ends
// the server's earlier pending authorizations, drops the expired ones of
// every server (they were put AuthorizeTimeout before they expire) and
// inserts p.
func (d *DB) PutMCPAuthorization(ctx context.Context, p mcpremote.PendingAuthorization) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put MCP authorization: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	now := p.ExpiresAt.Add(-mcpremote.AuthorizeTimeout).UnixMilli()
	if _, err := tx.ExecContext(ctx, d.q(`DELETE FROM mcp_authorizations WHERE (account_id = ? AND server_id = ?) OR expires_at <= ?`),
		p.AccountID, p.ServerID, now); err != nil {
		return fmt.Errorf("put MCP authorization: %w", err)
	}
	if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO mcp_authorizations (state, account_id, server_id, flow, expires_at) VALUES (?, ?, ?, ?, ?)`),
		p.State, p.AccountID, p.ServerID, p.Sealed, p.ExpiresAt.UnixMilli()); err != nil {
		return fmt.Errorf("put MCP authorization: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put MCP authorization: %w", err)
	}
	return nil
}

// TakeMCPAuthorization implements mcpremote.Store: one DELETE …
// RETURNING, so of two callbacks with one state exactly one gets the row
// (on PostgreSQL the second waits for the first's row lock and then finds
// it gone). An expired row is deleted all the same.
func (d *DB) TakeMCPAuthorization(ctx context.Context, state []byte, now time.Time) (mcpremote.PendingAuthorization, error) {
	p := mcpremote.PendingAuthorization{State: state}
	var exp int64
	err := d.db.QueryRowContext(ctx, d.q(`DELETE FROM mcp_authorizations WHERE state = ? RETURNING account_id, server_id, flow, expires_at`), state).
		Scan(&p.AccountID, &p.ServerID, &p.Sealed, &exp)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return mcpremote.PendingAuthorization{}, mcpremote.ErrUnknownState
	case err != nil:
		return mcpremote.PendingAuthorization{}, fmt.Errorf("take MCP authorization: %w", err)
	}
	p.ExpiresAt = time.UnixMilli(exp)
	if !p.ExpiresAt.After(now) {
		return mcpremote.PendingAuthorization{}, mcpremote.ErrUnknownState
	}
	return p, nil
}
