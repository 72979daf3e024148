package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// purgeBatch is how many clients one PurgeClients transaction deletes, so
// that a backlog (a day of hostile registrations) never holds the write
// lock for long.
const purgeBatch = 500

// withClientUsed runs insert in one transaction with marking the client
// used at `at` (and issued a token, with issued), after the mark: the client's row is locked first, which is
// what keeps PurgeClients from deleting it under the insert (PostgreSQL:
// the purge skips a locked row, and finds it used once the insert
// commits; a purge that won the row first leaves nothing to mark, so the
// insert is refused with identity.ErrNotFound). SQLite serializes both
// whole.
func (d *DB) withClientUsed(ctx context.Context, clientID string, at time.Time, issued bool, insert func(*sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mark oauth client used: %w", err)
	}
	defer tx.Rollback()
	set := `used_at = ?`
	if issued {
		set += `, token_issued = 1`
	}
	res, err := tx.ExecContext(ctx, d.q(`UPDATE oauth_clients SET `+set+` WHERE id = ?`), msOf(at), clientID)
	if err != nil {
		return fmt.Errorf("mark oauth client used: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("oauth client %s: %w", clientID, identity.ErrNotFound)
	}
	if err := insert(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// PurgeClients deletes the expired clients (identity.ClientExpiry) with
// their tokens, grants and requests, a batch per transaction.
func (d *DB) PurgeClients(ctx context.Context, e identity.ClientExpiry) (int, error) {
	total := 0
	for {
		n, err := d.purgeClientBatch(ctx, e)
		total += n
		if err != nil {
			return total, err
		}
		if n < purgeBatch {
			return total, nil
		}
	}
}

func (d *DB) purgeClientBatch(ctx context.Context, e identity.ClientExpiry) (int, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("purge oauth clients: %w", err)
	}
	defer tx.Rollback()
	lock := ""
	if d.pg() {
		// A row locked now is being used (withClientUsed) or consented to
		// (the grant's foreign key): not expired.
		lock = ` FOR UPDATE SKIP LOCKED`
	}
	rows, err := tx.QueryContext(ctx, d.q(`SELECT c.id FROM oauth_clients c
		WHERE (c.used_at < ? AND c.token_issued = 0)
		   OR (c.used_at < ? AND NOT EXISTS (SELECT 1 FROM oauth_tokens t
		       WHERE t.client_id = c.id AND t.expires_at > ? AND t.revoked_at IS NULL))
		ORDER BY c.used_at LIMIT ?`+lock),
		msOf(e.UnauthorizedBefore), msOf(e.IdleBefore), msOf(e.Now), purgeBatch)
	if err != nil {
		return 0, fmt.Errorf("purge oauth clients: %w", err)
	}
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("purge oauth clients: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("purge oauth clients: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	if d.pg() {
		// The clients' grants are locked before their tokens, in one order,
		// as RevokeGrant takes them (the grant, then its tokens): deleting
		// the tokens first made a cycle with an admin revoking one of these
		// grants, which PostgreSQL breaks by aborting one (40P01). A grant
		// being revoked is waited for; its revocation takes no lock this
		// purge holds.
		if _, err := tx.ExecContext(ctx, d.q(`SELECT id FROM oauth_grants WHERE client_id IN `+in+` ORDER BY id FOR UPDATE`), ids...); err != nil {
			return 0, fmt.Errorf("purge oauth clients: lock grants: %w", err)
		}
	}
	// Children first: tokens reference grants, grants clients.
	for _, st := range []struct {
		query string
		args  []any
	}{
		{`DELETE FROM oauth_tokens WHERE client_id IN ` + in + ` OR grant_id IN (SELECT id FROM oauth_grants WHERE client_id IN ` + in + `)`,
			append(append([]any{}, ids...), ids...)},
		{`DELETE FROM oauth_grants WHERE client_id IN ` + in, ids},
		{`DELETE FROM oauth_requests WHERE client_id IN ` + in, ids},
		{`DELETE FROM oauth_clients WHERE id IN ` + in, ids},
	} {
		if _, err := tx.ExecContext(ctx, d.q(st.query), st.args...); err != nil {
			return 0, fmt.Errorf("purge oauth clients: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("purge oauth clients: %w", err)
	}
	return len(ids), nil
}
