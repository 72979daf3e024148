package identity

// Grants: the durable state of toolhost's embedded OAuth 2.1
// authorization server: registered clients, grants (one consent each: the
// holder of an API key let a client act for the key's account with at
// most the key's scopes), pending authorization requests and issued
// tokens.
//
// Invariants: no secret is ever stored in clear — client secrets,
// authorization codes, access-token ids and refresh tokens are kept as
// their SHA-256 hash (Hash); an authorization code is consumed once
// (ConsumeCode is atomic); a refresh token is rotated once (UseRefresh is
// atomic); a revoked grant revokes every token issued under it; a client
// expires (PurgeClients) only when unused for a while with no valid token,
// never during an authorization, and takes its grants and tokens with it;
// a token is purged (PurgeTokens) only once it can never be used again and
// its reuse stays recognisable without it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Errors callers decide on.
var (
	ErrNotFound = errors.New("not found")
	// ErrUsed is a single-use secret (code, refresh token) presented again.
	ErrUsed = errors.New("already used")
)

// Token kinds.
const (
	KindAccess  = "access"
	KindRefresh = "refresh"
)

// Client is a registered OAuth client (RFC 7591).
type Client struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name"`
	SecretHash   string    `json:"-"`
	AuthMethod   string    `json:"token_endpoint_auth_method"`
	RedirectURIs []string  `json:"redirect_uris"`
	Native       bool      `json:"native"`
	CreatedAt    time.Time `json:"created_at"`
}

// Grant is one consent.
type Grant struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	KeyID      string     `json:"key_id"`
	ClientID   string     `json:"client_id"`
	ClientName string     `json:"client_name"`
	Scopes     []string   `json:"scopes"`
	Resource   string     `json:"resource"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// Request is an authorization request between /authorize and the code
// exchange. Data is the request as the authorization server encoded it.
type Request struct {
	ID        string
	ClientID  string
	Data      []byte
	GrantID   string // set when the user consented
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Token is an issued access token (by its id) or refresh token.
type Token struct {
	Hash      string
	Kind      string
	GrantID   string
	ClientID  string
	Scopes    []string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	RevokedAt *time.Time
	// NamesGrant: a refresh token that names its grant under the
	// authorization server's MAC, so a reuse of it is recognised (and its
	// grant revoked) after its row is gone; PurgeTokens deletes such a
	// token as soon as it is rotated away. A refresh token without it
	// (issued before it existed) stays rotated until its client goes.
	NamesGrant bool
}

// ClientExpiry says which clients PurgeClients deletes. A client is used
// when it is registered, an authorization request is created for it, a
// token is issued to it or its metadata document is stored.
type ClientExpiry struct {
	// Now decides which tokens are still valid (unexpired, unrevoked).
	Now time.Time
	// UnauthorizedBefore: a client never issued a token and not used
	// since then is deleted (a registration nobody completed).
	UnauthorizedBefore time.Time
	// IdleBefore: a client none of whose tokens is still valid and not
	// used since then is deleted.
	IdleBefore time.Time
}

// TokenExpiry says which tokens PurgeTokens deletes: every token that can
// never be used again and whose row no reuse detection needs.
type TokenExpiry struct {
	// Now: a token expired at or before it is deleted (but see NamesGrant).
	Now time.Time
	// AccessPerGrant is how many unexpired access tokens a grant keeps,
	// its newest; older ones are deleted (and so refused from then on). A
	// client holds the one from its last refresh, so only a client that
	// refreshes in a loop loses any. 0 keeps them all.
	AccessPerGrant int
}

// GrantStore is the durable state the authorization server needs.
type GrantStore interface {
	CreateClient(ctx context.Context, c Client) error
	// PutClient stores or replaces a client described by a Client ID
	// Metadata Document (its id is the document's URL), and marks it used.
	PutClient(ctx context.Context, c Client) error
	// Client returns ErrNotFound when there is no such client.
	Client(ctx context.Context, id string) (*Client, error)
	// PurgeClients deletes the clients ClientExpiry names, with their
	// grants, tokens and requests, and returns how many. It never deletes
	// a client under an authorization: one being used at that moment is
	// kept, and once a client is deleted, CreateRequest and CreateToken
	// for it fail with ErrNotFound instead of leaving half a grant.
	PurgeClients(ctx context.Context, e ClientExpiry) (int, error)
	// PurgeTokens deletes the tokens TokenExpiry names and returns how
	// many: expired and revoked ones, refresh tokens rotated away that
	// name their grant, and access tokens beyond AccessPerGrant. A refresh
	// token rotated away that does not name its grant is kept while it
	// is unrevoked, for reuse detection.
	PurgeTokens(ctx context.Context, e TokenExpiry) (int, error)
	// PurgeRequests deletes the authorization requests that expired
	// before `before` and returns how many.
	PurgeRequests(ctx context.Context, before time.Time) (int, error)

	// CreateRequest stores a request and marks its client used;
	// ErrNotFound when there is no such client.
	CreateRequest(ctx context.Context, r Request) error
	Request(ctx context.Context, id string) (*Request, error)
	// Approve stores g and binds the request to it.
	Approve(ctx context.Context, requestID string, g Grant) error
	// SetCode records the hash of the code issued for a consented request.
	SetCode(ctx context.Context, requestID, codeHash string) error
	// ConsumeCode returns the request the code was issued for and marks the
	// code used, atomically: a second call gets ErrUsed.
	ConsumeCode(ctx context.Context, codeHash string, now time.Time) (*Request, error)
	DeleteRequest(ctx context.Context, id string) error

	Grant(ctx context.Context, id string) (*Grant, error)
	// ListGrants lists the grants of an account ("" = every account),
	// newest first.
	ListGrants(ctx context.Context, accountID string) ([]Grant, error)
	// RevokeGrant revokes a grant and every token issued under it.
	RevokeGrant(ctx context.Context, id string, at time.Time) error

	// CreateToken stores a token and marks its client used; ErrNotFound
	// when there is no such client.
	CreateToken(ctx context.Context, t Token) error
	Token(ctx context.Context, hash string) (*Token, error)
	// UseRefresh marks a refresh token rotated away, atomically: a second
	// call gets ErrUsed (and the caller should revoke the grant: reuse of a
	// rotated refresh token means it leaked).
	UseRefresh(ctx context.Context, hash string, now time.Time) (*Token, error)
	RevokeToken(ctx context.Context, hash string, at time.Time) error

	// SigningKey returns the PEM private key with id, storing pemIfNone
	// first when no key with that id exists (so replicas agree on one).
	SigningKey(ctx context.Context, id, pemIfNone string, now time.Time) (string, error)
}

// Hash is the stored form of a secret.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
