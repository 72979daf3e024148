package store

import (
	"context"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// PurgeTokens deletes the tokens that can never be used again
// (identity.TokenExpiry), a batch of purgeBatch per statement so that a
// backlog never holds the write lock for long. Each kind of dead token
// has a query of its own that an index answers (expires_at, the partial
// indexes on used_at and revoked_at), instead of one OR a planner scans
// the table for once per batch.
func (d *DB) PurgeTokens(ctx context.Context, e identity.TokenExpiry) (int, error) {
	now := msOf(e.Now)
	kinds := []struct {
		where string
		args  []any
	}{
		// Revoked: refused whatever happens, and a reuse of a revoked
		// refresh token revokes a grant that already is.
		{`SELECT hash FROM oauth_tokens WHERE revoked_at IS NOT NULL LIMIT ?`, nil},
		// Expired: refused. A refresh token rotated away that does not
		// name its grant stays, for reuse detection (see below).
		{`SELECT hash FROM oauth_tokens WHERE expires_at <= ?
			AND NOT (kind = 'refresh' AND names_grant = 0 AND used_at IS NOT NULL) LIMIT ?`, []any{now}},
		// Rotated away, naming its grant: a reuse is recognised from the
		// token itself (the authorization server's MAC over its grant).
		{`SELECT hash FROM oauth_tokens WHERE used_at IS NOT NULL AND names_grant = 1 LIMIT ?`, nil},
	}
	if e.AccessPerGrant > 0 {
		// Access tokens beyond a grant's newest AccessPerGrant: a client
		// holds the one from its last refresh; only a refresh loop has
		// more. Tokens of one millisecond rank by the order they were
		// created in: SQLite's rowid is one more than the table's largest
		// at an insert, PostgreSQL's seq a sequence (migration 0010).
		created := `rowid`
		if d.pg() {
			created = `seq`
		}
		kinds = append(kinds, struct {
			where string
			args  []any
		}{`SELECT hash FROM oauth_tokens WHERE hash IN (SELECT hash FROM (SELECT hash,
			ROW_NUMBER() OVER (PARTITION BY grant_id ORDER BY created_at DESC, ` + created + ` DESC) AS n
			FROM oauth_tokens WHERE kind = 'access') ranked WHERE n > ?) LIMIT ?`, []any{e.AccessPerGrant}})
	}
	total := 0
	for _, k := range kinds {
		n, err := d.deleteInBatches(ctx, `oauth_tokens`, `hash`, k.where, k.args)
		total += n
		if err != nil {
			return total, fmt.Errorf("purge oauth tokens: %w", err)
		}
	}
	return total, nil
}

// PurgeRequests deletes the authorization requests that expired before
// `before`, in batches.
func (d *DB) PurgeRequests(ctx context.Context, before time.Time) (int, error) {
	n, err := d.deleteInBatches(ctx, `oauth_requests`, `id`,
		`SELECT id FROM oauth_requests WHERE expires_at < ? LIMIT ?`, []any{msOf(before)})
	if err != nil {
		return n, fmt.Errorf("purge oauth requests: %w", err)
	}
	return n, nil
}

// deleteInBatches deletes from table the rows whose key `pick` (a SELECT
// of keys from table ending in LIMIT ?, with args before the limit)
// returns, one statement of at most purgeBatch rows at a time, until a
// statement deletes fewer.
//
// On PostgreSQL the pick locks its rows and skips those locked by others:
// the purge never waits for a row lock, so it cannot be in a lock-order
// cycle with RevokeGrant, which updates a grant's tokens in an order of
// its own (a DELETE locking many rows in another order was aborted as a
// deadlock, 40P01, or made RevokeGrant fail). A row skipped now is
// deleted by a later purge.
func (d *DB) deleteInBatches(ctx context.Context, table, key, pick string, args []any) (int, error) {
	if d.pg() {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	query := d.q(`DELETE FROM ` + table + ` WHERE ` + key + ` IN (` + pick + `)`)
	args = append(append([]any{}, args...), purgeBatch)
	total := 0
	for {
		res, err := d.db.ExecContext(ctx, query, args...)
		if err != nil {
			return total, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < purgeBatch {
			return total, nil
		}
	}
}
