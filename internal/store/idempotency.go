package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/internal/idempotency"
)

// Idempotency is the /v1 Idempotency-Key store on the SQL store
// (idempotency.Store): every replica on one PostgreSQL shares its claims
// and answers. A claim is one conditional INSERT or UPDATE, so two
// replicas claiming one key at once get one winner.
type Idempotency struct {
	d   *DB
	lim idempotency.Limits
}

var _ idempotency.Store = (*Idempotency)(nil)

// Idempotency returns the store of /v1 idempotency records within lim.
func (d *DB) Idempotency(lim idempotency.Limits) *Idempotency {
	return &Idempotency{d: d, lim: lim.WithDefaults()}
}

// Claim implements idempotency.Store.
func (s *Idempotency) Claim(ctx context.Context, c idempotency.Claim, now time.Time, lease time.Duration) (idempotency.Result, error) {
	kh, ah, dg := idempotency.KeyHash(c.Key), idempotency.KeyHash(c.Account), hex.EncodeToString(c.Digest[:])
	at, until := now.UnixMilli(), now.Add(lease).UnixMilli()
	expired := now.Add(-s.lim.TTL).UnixMilli()
	for range 3 {
		res, err := s.d.db.ExecContext(ctx, s.d.q(`INSERT INTO v1_idempotency (key_hash, account_hash, digest, owner, lease_until)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (key_hash) DO NOTHING`), kh, ah, dg, c.Owner, until)
		if err != nil {
			return idempotency.Result{}, fmt.Errorf("claim idempotency key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return idempotency.Result{Outcome: idempotency.Claimed}, nil
		}
		// Held: free when its answer is past the TTL or its lease ran out.
		res, err = s.d.db.ExecContext(ctx, s.d.q(`UPDATE v1_idempotency
			SET account_hash = ?, digest = ?, owner = ?, lease_until = ?, done = FALSE, status = 0, header = '{}', body = NULL, size = 0, stored_at = 0
			WHERE key_hash = ? AND ((done AND stored_at < ?) OR (NOT done AND lease_until <= ?))`),
			ah, dg, c.Owner, until, kh, expired, at)
		if err != nil {
			return idempotency.Result{}, fmt.Errorf("claim idempotency key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return idempotency.Result{Outcome: idempotency.Claimed, TookOver: true}, nil
		}
		r, found, err := s.held(ctx, kh, dg, now)
		if err != nil || found {
			return r, err
		}
		// Deleted between the two statements (released, evicted): again.
	}
	return idempotency.Result{}, fmt.Errorf("claim idempotency key: the key kept changing hands")
}

// held reads a key another request holds or answered.
func (s *Idempotency) held(ctx context.Context, kh, digest string, now time.Time) (idempotency.Result, bool, error) {
	var dg, header string
	var done bool
	var leaseUntil, status int64
	var body []byte
	err := s.d.db.QueryRowContext(ctx, s.d.q(`SELECT digest, done, lease_until, status, header, body FROM v1_idempotency WHERE key_hash = ?`), kh).
		Scan(&dg, &done, &leaseUntil, &status, &header, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return idempotency.Result{}, false, nil
	}
	if err != nil {
		return idempotency.Result{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	switch {
	case dg != digest:
		return idempotency.Result{Outcome: idempotency.Reused}, true, nil
	case !done:
		return idempotency.Result{Outcome: idempotency.InFlight, Retry: time.UnixMilli(leaseUntil).Sub(now)}, true, nil
	}
	h := http.Header{}
	if err := json.Unmarshal([]byte(header), &h); err != nil {
		return idempotency.Result{}, false, fmt.Errorf("read idempotency key: stored header: %w", err)
	}
	if body == nil {
		body = []byte{}
	}
	return idempotency.Result{Outcome: idempotency.Replay, Response: idempotency.Response{Status: int(status), Header: h, Body: body}}, true, nil
}

// Renew implements idempotency.Store.
func (s *Idempotency) Renew(ctx context.Context, key, owner string, now time.Time, lease time.Duration) (bool, error) {
	res, err := s.d.db.ExecContext(ctx, s.d.q(`UPDATE v1_idempotency SET lease_until = ? WHERE key_hash = ? AND owner = ? AND NOT done`),
		now.Add(lease).UnixMilli(), idempotency.KeyHash(key), owner)
	if err != nil {
		return false, fmt.Errorf("renew idempotency key: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Release implements idempotency.Store.
func (s *Idempotency) Release(ctx context.Context, key, owner string) error {
	if _, err := s.d.db.ExecContext(ctx, s.d.q(`DELETE FROM v1_idempotency WHERE key_hash = ? AND owner = ? AND NOT done`),
		idempotency.KeyHash(key), owner); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// Complete implements idempotency.Store. The caps are kept right after:
// answers past the TTL (and claims abandoned as long ago) go, then the account's oldest while it is over its
// share, then anyone's oldest while the store is over its bytes or entries.
func (s *Idempotency) Complete(ctx context.Context, key, owner string, resp idempotency.Response, now time.Time) (bool, error) {
	size := idempotency.Size(key, resp)
	if size > s.lim.AccountBytes {
		return false, s.Release(ctx, key, owner)
	}
	header, err := json.Marshal(resp.Header)
	if err != nil {
		return false, fmt.Errorf("complete idempotency key: %w", err)
	}
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	kh := idempotency.KeyHash(key)
	res, err := s.d.db.ExecContext(ctx, s.d.q(`UPDATE v1_idempotency SET done = TRUE, status = ?, header = ?, body = ?, size = ?, stored_at = ?
		WHERE key_hash = ? AND owner = ? AND NOT done`), resp.Status, string(header), body, size, now.UnixMilli(), kh, owner)
	if err != nil {
		return false, fmt.Errorf("complete idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, nil
	}
	return true, s.keepCaps(ctx, kh, now)
}

// keepCaps evicts answers until the caps hold (see Complete).
func (s *Idempotency) keepCaps(ctx context.Context, kh string, now time.Time) error {
	// Answers past the TTL, and claims whose holder died a TTL ago and
	// were never retried.
	expired := now.Add(-s.lim.TTL).UnixMilli()
	if _, err := s.d.db.ExecContext(ctx, s.d.q(`DELETE FROM v1_idempotency WHERE (done AND stored_at < ?) OR (NOT done AND lease_until < ?)`),
		expired, expired); err != nil {
		return fmt.Errorf("expire idempotency keys: %w", err)
	}
	var ah string
	if err := s.d.db.QueryRowContext(ctx, s.d.q(`SELECT account_hash FROM v1_idempotency WHERE key_hash = ?`), kh).Scan(&ah); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("idempotency caps: %w", err)
	}
	if err := s.evict(ctx, `done AND account_hash = ?`, []any{ah}, s.lim.AccountBytes, 0); err != nil {
		return err
	}
	return s.evict(ctx, `done`, nil, s.lim.MaxBytes, s.lim.Entries)
}

// evict deletes the oldest answers matching where while their bytes are
// over maxBytes or (when maxRows > 0) their count over maxRows.
func (s *Idempotency) evict(ctx context.Context, where string, args []any, maxBytes int64, maxRows int) error {
	var total, rows int64
	if err := s.d.db.QueryRowContext(ctx, s.d.q(`SELECT COALESCE(SUM(size), 0), COUNT(*) FROM v1_idempotency WHERE `+where), args...).
		Scan(&total, &rows); err != nil {
		return fmt.Errorf("idempotency caps: %w", err)
	}
	over := func() bool { return total > maxBytes || (maxRows > 0 && rows > int64(maxRows)) }
	if !over() {
		return nil
	}
	q, err := s.d.db.QueryContext(ctx, s.d.q(`SELECT key_hash, size FROM v1_idempotency WHERE `+where+` ORDER BY stored_at, key_hash`), args...)
	if err != nil {
		return fmt.Errorf("idempotency caps: %w", err)
	}
	var gone []string
	for q.Next() && over() {
		var kh string
		var size int64
		if err := q.Scan(&kh, &size); err != nil {
			q.Close()
			return fmt.Errorf("idempotency caps: %w", err)
		}
		gone = append(gone, kh)
		total -= size
		rows--
	}
	q.Close()
	for _, kh := range gone {
		if _, err := s.d.db.ExecContext(ctx, s.d.q(`DELETE FROM v1_idempotency WHERE key_hash = ? AND done`), kh); err != nil {
			return fmt.Errorf("idempotency caps: %w", err)
		}
	}
	return nil
}
