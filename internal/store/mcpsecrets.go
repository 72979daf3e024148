package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// secretsStripes is how many lock files the SQLite locks of the MCP
// servers' secrets are spread over: two servers that share one wait for
// each other's refresh, nothing worse, and the files stay few.
const secretsStripes = 64

// UpdateMCPSecrets implements mcpremote.Store.
//
// PostgreSQL: one transaction that locks the row (SELECT ... FOR UPDATE),
// so other replicas' updates of the server, and its UpdateMCPServer,
// wait for it; readers do not.
//
// SQLite: the database has one writer at a time, and holding its write
// transaction while update runs (a token refresh, as slow as the
// authorization server makes it) would hold every write of every
// account. The lock is an exclusive flock instead, on a file beside
// the database (<db>.locks/), which every process on the file and every
// DB opened on it in one process take; the secrets are read and written
// in short statements around update, and the write stores only over
// the secrets it read: an UpdateMCPServer meanwhile (it takes no lock)
// is kept, and the result is ErrSecretsChanged.
func (d *DB) UpdateMCPSecrets(ctx context.Context, account, id string, update func([]byte) ([]byte, error)) error {
	if d.pg() {
		return d.updateSecretsPostgres(ctx, account, id, update)
	}
	unlock, err := d.lockSecrets(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	var old []byte
	err = d.db.QueryRowContext(ctx, `SELECT secrets FROM mcp_servers WHERE account_id = ? AND id = ?`, account, id).Scan(&old)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return mcpremote.ErrNotFound
	case err != nil:
		return fmt.Errorf("read the secrets of MCP server %s: %w", id, err)
	}
	out, err := update(old)
	if err != nil || out == nil {
		return err
	}
	var was any // NULL when there were none
	if old != nil {
		was = old
	}
	res, err := d.db.ExecContext(ctx, `UPDATE mcp_servers SET secrets = ? WHERE account_id = ? AND id = ? AND secrets IS ?`, out, account, id, was)
	if err != nil {
		return fmt.Errorf("store the secrets of MCP server %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		if _, err := d.GetMCPServer(ctx, account, id); errors.Is(err, mcpremote.ErrNotFound) {
			return mcpremote.ErrNotFound
		}
		return mcpremote.ErrSecretsChanged
	}
	return nil
}

func (d *DB) updateSecretsPostgres(ctx context.Context, account, id string, update func([]byte) ([]byte, error)) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var sealed []byte
	err = tx.QueryRowContext(ctx, `SELECT secrets FROM mcp_servers WHERE account_id = $1 AND id = $2 FOR UPDATE`, account, id).Scan(&sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return mcpremote.ErrNotFound
	case err != nil:
		return fmt.Errorf("lock the secrets of MCP server %s: %w", id, err)
	}
	out, err := update(sealed)
	if err != nil {
		return err
	}
	if out != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE mcp_servers SET secrets = $1 WHERE account_id = $2 AND id = $3`, out, account, id); err != nil {
			return fmt.Errorf("store the secrets of MCP server %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store the secrets of MCP server %s: %w", id, err)
	}
	return nil
}

// lockSecrets takes the SQLite lock of server id's secrets, waiting
// for it as long as ctx allows; the kernel drops it if the process dies.
// Each call opens the file anew: flock excludes open files, so two
// callers in one process exclude each other too.
func (d *DB) lockSecrets(ctx context.Context, id string) (unlock func(), err error) {
	h := fnv.New32a()
	h.Write([]byte(id))
	p := filepath.Join(d.path+".locks", fmt.Sprintf("mcp-secrets-%02x.lock", h.Sum32()%secretsStripes))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("lock the secrets of MCP server %s: %w", id, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the secrets of MCP server %s: %w", id, err)
	}
	// Polled, so that a waiter gives up with its context; the holder is
	// done within its own deadline.
	wait := 5 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock the secrets of MCP server %s: %w", id, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			wait = min(2*wait, 100*time.Millisecond)
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("lock the secrets of MCP server %s: %w", id, ctx.Err())
		}
	}
}
