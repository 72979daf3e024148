package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Liveness marks: a process holds a mark for as long as it runs, and the
// operating system or the database drops it when the process dies — even
// with kill -9 — so reconciliation never closes a live process's calls.
//
// SQLite: an exclusive flock on <db>.instances/<id>.lock (several processes
// may share a SQLite file on one machine, e.g. `toolhost call` next to
// `toolhost serve`). PostgreSQL: a session advisory lock held on a dedicated
// connection; the server drops it when that connection ends.

// advisoryClass is the first key of our two-key advisory locks, "th".
const advisoryClass = 0x7468

// Hold implements journal.Store. A store may hold several marks (tests run
// several journals on one store); Close releases them all.
func (d *DB) Hold(ctx context.Context, instanceID string) error {
	var h io.Closer
	var err error
	if d.pg() {
		h, err = d.holdPostgres(ctx, instanceID)
	} else {
		h, err = d.holdSQLite(instanceID)
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	if d.holds == nil {
		d.holds = map[string]io.Closer{}
	}
	old := d.holds[instanceID]
	d.holds[instanceID] = h
	d.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Alive implements journal.Store.
func (d *DB) Alive(ctx context.Context, instanceID string) (bool, error) {
	if d.pg() {
		return d.alivePostgres(ctx, instanceID)
	}
	return d.aliveSQLite(instanceID)
}

func (d *DB) lockPath(instanceID string) (string, error) {
	if instanceID == "" || filepath.Base(instanceID) != instanceID {
		return "", fmt.Errorf("bad instance id %q", instanceID)
	}
	return filepath.Join(d.path+".instances", instanceID+".lock"), nil
}

type fileHold struct{ f *os.File }

func (h fileHold) Close() error {
	name := h.f.Name()
	err := h.f.Close()
	// A clean exit removes its mark; a crash leaves it for Alive to clear.
	return errors.Join(err, os.Remove(name))
}

func (d *DB) holdSQLite(instanceID string) (io.Closer, error) {
	p, err := d.lockPath(instanceID)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("instance marks: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("instance mark: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock instance mark %s: %w", p, err)
	}
	return fileHold{f}, nil
}

func (d *DB) aliveSQLite(instanceID string) (bool, error) {
	p, err := d.lockPath(instanceID)
	if err != nil {
		// Records written without a valid instance id belong to no one.
		return false, nil
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("instance mark: %w", err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe instance mark %s: %w", p, err)
	}
	// We got the lock: its owner is gone. Clear the stale mark.
	_ = os.Remove(p)
	return false, nil
}

type connHold struct{ c *sql.Conn }

func (h connHold) Close() error { return h.c.Close() }

func (d *DB) holdPostgres(ctx context.Context, instanceID string) (io.Closer, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("instance mark connection: %w", err)
	}
	if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, advisoryClass, instanceID); err != nil {
		c.Close()
		return nil, fmt.Errorf("instance mark: %w", err)
	}
	return connHold{c}, nil
}

func (d *DB) alivePostgres(ctx context.Context, instanceID string) (bool, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	var got bool
	if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, advisoryClass, instanceID).Scan(&got); err != nil {
		return false, fmt.Errorf("probe instance mark: %w", err)
	}
	if got {
		if _, err := c.ExecContext(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, advisoryClass, instanceID); err != nil {
			return false, fmt.Errorf("release probe: %w", err)
		}
	}
	return !got, nil
}
