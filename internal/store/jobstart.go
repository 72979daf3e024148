package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"
	"time"
)

// startLocks are this process's per-account job-start locks: a channel of
// one slot each (a wait for it ends with its context), kept while someone
// holds or waits for it.
type startLocks struct {
	mu    sync.Mutex
	locks map[string]*startLock
	// conns bounds the connections held for advisory locks at once, so
	// that however many workers start jobs, the pool keeps connections
	// for the starts' own queries.
	conns chan struct{}
}

// maxStartConns is startLocks.conns' size.
const maxStartConns = 2

type startLock struct {
	slot chan struct{}
	refs int
}

// take waits for account's lock, or for ctx.
func (s *startLocks) take(ctx context.Context, account string) (func(), error) {
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*startLock{}
	}
	l := s.locks[account]
	if l == nil {
		l = &startLock{slot: make(chan struct{}, 1)}
		s.locks[account] = l
	}
	l.refs++
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, account)
		}
		s.mu.Unlock()
	}
	select {
	case l.slot <- struct{}{}:
		return func() { <-l.slot; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// startLockKey names the PostgreSQL advisory lock of an account's job
// starts (hashed to the lock's 64-bit key: a collision only makes two
// accounts take turns).
const startLockKey = "toolhost.job_start:"

// HoldStart implements tools.JobQueue: the account's job-start lock. In
// this process the workers take turns per account; on PostgreSQL the
// holder also takes a session advisory lock on a connection it keeps
// until release, so that processes sharing the database take turns too.
// That lock is only tried, never waited for, so that no worker holds a
// connection while another process's start needs one (busy says another
// process holds it now), and at most maxStartConns connections are held
// for it at once. A SQLite store is one process's.
func (j *Jobs) HoldStart(ctx context.Context, accountID string) (func(), bool, error) {
	unlock, err := j.starts.take(ctx, accountID)
	if err != nil {
		return nil, false, fmt.Errorf("job start lock of %s: %w", accountID, err)
	}
	if !j.d.pg() {
		return unlock, false, nil
	}
	select {
	case j.starts.conns <- struct{}{}:
	case <-ctx.Done():
		unlock()
		return nil, false, fmt.Errorf("job start lock of %s: %w", accountID, ctx.Err())
	}
	account := unlock
	unlock = func() { <-j.starts.conns; account() }
	conn, err := j.d.db.Conn(ctx)
	if err != nil {
		unlock()
		return nil, false, fmt.Errorf("job start lock of %s: %w", accountID, err)
	}
	var got bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, startLockKey+accountID).Scan(&got); err != nil || !got {
		conn.Close()
		unlock()
		if err != nil {
			return nil, false, fmt.Errorf("job start lock of %s: %w", accountID, err)
		}
		return nil, true, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, startLockKey+accountID); err != nil {
			// The connection must not go back to the pool holding the
			// lock: closed, its session (and the lock) ends.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
		unlock()
	}, false, nil
}
