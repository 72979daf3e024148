package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

var _ identity.GrantStore = (*DB)(nil)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CreateClient inserts a registered OAuth client.
func (d *DB) CreateClient(ctx context.Context, c identity.Client) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("client redirect URIs: %w", err)
	}
	_, err = d.db.ExecContext(ctx, d.q(`INSERT INTO oauth_clients
		(id, name, secret_hash, auth_method, redirect_uris, native, created_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.Name, c.SecretHash, c.AuthMethod, string(uris), boolInt(c.Native), msOf(c.CreatedAt), msOf(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert oauth client: %w", err)
	}
	return nil
}

// PutClient inserts or replaces a client (Client ID Metadata Documents)
// and marks it used at c.CreatedAt (when its document was fetched).
func (d *DB) PutClient(ctx context.Context, c identity.Client) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("client redirect URIs: %w", err)
	}
	_, err = d.db.ExecContext(ctx, d.q(`INSERT INTO oauth_clients
		(id, name, secret_hash, auth_method, redirect_uris, native, created_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, auth_method = excluded.auth_method,
		redirect_uris = excluded.redirect_uris, native = excluded.native, used_at = excluded.used_at`),
		c.ID, c.Name, c.SecretHash, c.AuthMethod, string(uris), boolInt(c.Native), msOf(c.CreatedAt), msOf(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("put oauth client: %w", err)
	}
	return nil
}

// Client returns a registered client or identity.ErrNotFound.
func (d *DB) Client(ctx context.Context, id string) (*identity.Client, error) {
	var c identity.Client
	var uris string
	var native int
	var created int64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT id, name, secret_hash, auth_method, redirect_uris, native, created_at
		FROM oauth_clients WHERE id = ?`), id).Scan(&c.ID, &c.Name, &c.SecretHash, &c.AuthMethod, &uris, &native, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("oauth client %s: %w", id, identity.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth client %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("oauth client %s redirect URIs: %w", id, err)
	}
	c.Native = native != 0
	c.CreatedAt = time.UnixMilli(created).UTC()
	return &c, nil
}

// CreateRequest stores a pending authorization request and marks its
// client used (PurgeRequests drops the expired ones).
func (d *DB) CreateRequest(ctx context.Context, r identity.Request) error {
	return d.withClientUsed(ctx, r.ClientID, r.CreatedAt, false, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, d.q(`INSERT INTO oauth_requests (id, client_id, request, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?)`), r.ID, r.ClientID, string(r.Data), msOf(r.CreatedAt), msOf(r.ExpiresAt))
		if err != nil {
			return fmt.Errorf("insert oauth request: %w", err)
		}
		return nil
	})
}

func (d *DB) requestWhere(ctx context.Context, where string, arg any) (*identity.Request, error) {
	var r identity.Request
	var data string
	var created, expires int64
	err := d.db.QueryRowContext(ctx, d.q(`SELECT id, client_id, request, grant_id, created_at, expires_at
		FROM oauth_requests WHERE `+where), arg).Scan(&r.ID, &r.ClientID, &data, &r.GrantID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, identity.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("oauth request: %w", err)
	}
	r.Data = []byte(data)
	r.CreatedAt, r.ExpiresAt = time.UnixMilli(created).UTC(), time.UnixMilli(expires).UTC()
	return &r, nil
}

// Request returns a pending authorization request or identity.ErrNotFound.
func (d *DB) Request(ctx context.Context, id string) (*identity.Request, error) {
	return d.requestWhere(ctx, `id = ?`, id)
}

// Approve stores the grant and binds the request to it, in one transaction.
func (d *DB) Approve(ctx context.Context, requestID string, g identity.Grant) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("approve: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO oauth_grants (id, account_id, key_id, client_id, scopes, resource, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), g.ID, g.AccountID, g.KeyID, g.ClientID, strings.Join(g.Scopes, " "), g.Resource, msOf(g.CreatedAt)); err != nil {
		return fmt.Errorf("insert grant: %w", err)
	}
	res, err := tx.ExecContext(ctx, d.q(`UPDATE oauth_requests SET grant_id = ? WHERE id = ? AND grant_id = ''`), g.ID, requestID)
	if err != nil {
		return fmt.Errorf("approve request: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("approve request %s: %w", requestID, identity.ErrNotFound)
	}
	return tx.Commit()
}

// SetCode records the hash of the code issued for a request.
func (d *DB) SetCode(ctx context.Context, requestID, codeHash string) error {
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE oauth_requests SET code_hash = ? WHERE id = ? AND code_hash IS NULL`), codeHash, requestID)
	if err != nil {
		return fmt.Errorf("save code: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("save code for %s: %w", requestID, identity.ErrNotFound)
	}
	return nil
}

// ConsumeCode marks a code used and returns its request; only the first
// of concurrent calls wins.
func (d *DB) ConsumeCode(ctx context.Context, codeHash string, now time.Time) (*identity.Request, error) {
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE oauth_requests SET code_used = 1
		WHERE code_hash = ? AND code_used = 0 AND expires_at > ?`), codeHash, msOf(now))
	if err != nil {
		return nil, fmt.Errorf("consume code: %w", err)
	}
	r, err := d.requestWhere(ctx, `code_hash = ?`, codeHash)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if r.ExpiresAt.Before(now) {
			return nil, identity.ErrNotFound
		}
		return r, identity.ErrUsed
	}
	return r, nil
}

// DeleteRequest removes a request whose code was not used. A used code's
// request stays until it expires, so a replay of the code is recognised
// (and its grant revoked) rather than taken for an unknown code.
func (d *DB) DeleteRequest(ctx context.Context, id string) error {
	if _, err := d.db.ExecContext(ctx, d.q(`DELETE FROM oauth_requests WHERE id = ? AND code_used = 0`), id); err != nil {
		return fmt.Errorf("delete oauth request: %w", err)
	}
	return nil
}

const grantSelect = `SELECT g.id, g.account_id, g.key_id, g.client_id, COALESCE(c.name, ''), g.scopes, g.resource, g.created_at, g.revoked_at
	FROM oauth_grants g LEFT JOIN oauth_clients c ON c.id = g.client_id`

func scanGrant(row interface{ Scan(...any) error }) (*identity.Grant, error) {
	var g identity.Grant
	var scopes string
	var created int64
	var revoked sql.NullInt64
	if err := row.Scan(&g.ID, &g.AccountID, &g.KeyID, &g.ClientID, &g.ClientName, &scopes, &g.Resource, &created, &revoked); err != nil {
		return nil, err
	}
	g.Scopes = strings.Fields(scopes)
	g.CreatedAt = time.UnixMilli(created).UTC()
	g.RevokedAt = timeOf(revoked)
	return &g, nil
}

// Grant returns one grant or identity.ErrNotFound.
func (d *DB) Grant(ctx context.Context, id string) (*identity.Grant, error) {
	g, err := scanGrant(d.db.QueryRowContext(ctx, d.q(grantSelect+` WHERE g.id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("grant %s: %w", id, identity.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("grant %s: %w", id, err)
	}
	return g, nil
}

// ListGrants lists grants, newest first.
func (d *DB) ListGrants(ctx context.Context, accountID string) ([]identity.Grant, error) {
	query := grantSelect
	var args []any
	if accountID != "" {
		query += ` WHERE g.account_id = ?`
		args = append(args, accountID)
	}
	rows, err := d.db.QueryContext(ctx, d.q(query+` ORDER BY g.created_at DESC, g.id`), args...)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	defer rows.Close()
	out := []identity.Grant{}
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("list grants: %w", err)
		}
		out = append(out, *g)
	}
	return out, rows.Err()
}

// RevokeGrant revokes a grant and its tokens in one transaction.
func (d *DB) RevokeGrant(ctx context.Context, id string, at time.Time) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, d.q(`UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`), msOf(at), id)
	if err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("revoke grant %s: %w", id, identity.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, d.q(`UPDATE oauth_tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL`), msOf(at), id); err != nil {
		return fmt.Errorf("revoke grant tokens: %w", err)
	}
	return tx.Commit()
}

// CreateToken stores an issued token by its hash and marks its client
// used and issued a token.
func (d *DB) CreateToken(ctx context.Context, t identity.Token) error {
	return d.withClientUsed(ctx, t.ClientID, t.CreatedAt, true, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, d.q(`INSERT INTO oauth_tokens (hash, kind, grant_id, client_id, scopes, created_at, expires_at, names_grant)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), t.Hash, t.Kind, t.GrantID, t.ClientID, strings.Join(t.Scopes, " "), msOf(t.CreatedAt), msOf(t.ExpiresAt), boolInt(t.NamesGrant))
		if err != nil {
			return fmt.Errorf("insert token: %w", err)
		}
		return nil
	})
}

// Token returns a stored token or identity.ErrNotFound.
func (d *DB) Token(ctx context.Context, hash string) (*identity.Token, error) {
	var t identity.Token
	var scopes string
	var created, expires int64
	var used, revoked sql.NullInt64
	var named int
	err := d.db.QueryRowContext(ctx, d.q(`SELECT hash, kind, grant_id, client_id, scopes, created_at, expires_at, used_at, revoked_at, names_grant
		FROM oauth_tokens WHERE hash = ?`), hash).Scan(&t.Hash, &t.Kind, &t.GrantID, &t.ClientID, &scopes, &created, &expires, &used, &revoked, &named)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, identity.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	t.Scopes = strings.Fields(scopes)
	t.CreatedAt, t.ExpiresAt = time.UnixMilli(created).UTC(), time.UnixMilli(expires).UTC()
	t.UsedAt, t.RevokedAt = timeOf(used), timeOf(revoked)
	t.NamesGrant = named != 0
	return &t, nil
}

// UseRefresh marks a refresh token rotated away; only the first of
// concurrent calls wins.
func (d *DB) UseRefresh(ctx context.Context, hash string, now time.Time) (*identity.Token, error) {
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE oauth_tokens SET used_at = ?
		WHERE hash = ? AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?`), msOf(now), hash, msOf(now))
	if err != nil {
		return nil, fmt.Errorf("use refresh token: %w", err)
	}
	t, err := d.Token(ctx, hash)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if t.UsedAt != nil {
			return t, identity.ErrUsed
		}
		return nil, identity.ErrNotFound
	}
	return t, nil
}

// RevokeToken revokes one token.
func (d *DB) RevokeToken(ctx context.Context, hash string, at time.Time) error {
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE oauth_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?`), msOf(at), hash)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return identity.ErrNotFound
	}
	return nil
}

// SigningKey returns the key with id, inserting pemIfNone when absent.
func (d *DB) SigningKey(ctx context.Context, id, pemIfNone string, now time.Time) (string, error) {
	if _, err := d.db.ExecContext(ctx, d.q(`INSERT INTO oauth_signing_keys (id, private_pem, created_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO NOTHING`), id, pemIfNone, msOf(now)); err != nil {
		return "", fmt.Errorf("store signing key: %w", err)
	}
	var pem string
	if err := d.db.QueryRowContext(ctx, d.q(`SELECT private_pem FROM oauth_signing_keys WHERE id = ?`), id).Scan(&pem); err != nil {
		return "", fmt.Errorf("read signing key: %w", err)
	}
	return pem, nil
}
