package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// ExternalOptions configure verification of an external issuer's tokens.
type ExternalOptions struct {
	// Issuer is the authorization server (Keycloak realm URL, Auth0 tenant,
	// another toolhost): its metadata gives the JWKS URL.
	Issuer string
	// Resource is the audience tokens must carry: our /mcp URL.
	Resource string
	// AccountClaim names the claim holding the toolhost account id
	// (default "sub").
	AccountClaim string
	// Keys lists an account's API keys: an external caller acts under its
	// account's oldest active key holding the route's scopes, so that key's
	// limits, monthly cap and journal apply to it.
	Keys       AccountKeys
	HTTPClient *http.Client
	// Now is the clock a token's expiry is checked on (default time.Now).
	Now func() time.Time
}

// AccountKeys lists the keys of an account.
type AccountKeys interface {
	ListKeys(ctx context.Context, accountID string) ([]keys.Key, error)
}

// External verifies JWT access tokens of an external authorization
// server: signature against its JWKS (discovered from its metadata and
// cached, refetched when an unknown key id appears), iss, exp and aud =
// our resource, then maps AccountClaim to a toolhost account.
type External struct {
	opts ExternalOptions

	mu       sync.Mutex
	verifier *op.AccessTokenVerifier
}

// NewExternal returns a verifier; discovery happens on first use, so
// toolhost starts even while the issuer is down.
func NewExternal(opts ExternalOptions) *External {
	if opts.AccountClaim == "" {
		opts.AccountClaim = "sub"
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &External{opts: opts}
}

func (e *External) load(ctx context.Context) (*op.AccessTokenVerifier, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.verifier != nil {
		return e.verifier, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// RFC 8414 first (the well-known segment goes before the issuer's
	// path), then OpenID Connect discovery (Keycloak, Auth0).
	var rfc8414 string
	if u, perr := url.Parse(e.opts.Issuer); perr == nil {
		rfc8414 = u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + strings.TrimRight(u.Path, "/")
	}
	d, err := oidcclient.Discover(ctx, e.opts.Issuer, e.opts.HTTPClient, rfc8414)
	if err != nil {
		d, err = oidcclient.Discover(ctx, e.opts.Issuer, e.opts.HTTPClient)
	}
	if err != nil {
		return nil, fmt.Errorf("discover issuer %s: %w", e.opts.Issuer, err)
	}
	if d.JwksURI == "" {
		return nil, fmt.Errorf("issuer %s publishes no jwks_uri", e.opts.Issuer)
	}
	e.verifier = op.NewAccessTokenVerifier(e.opts.Issuer, rp.NewRemoteKeySet(e.opts.HTTPClient, d.JwksURI))
	return e.verifier, nil
}

// VerifyToken checks the token and maps it to an account and key.
func (e *External) VerifyToken(ctx context.Context, token string) (identity.Identity, error) {
	v, err := e.load(ctx)
	if err != nil {
		return identity.Identity{}, err
	}
	claims, err := verifyJWT(ctx, v, e.opts.Now(), token, e.opts.Resource)
	if err != nil {
		return identity.Identity{}, err
	}
	account := claims.Subject
	if e.opts.AccountClaim != "sub" {
		account, _ = claims.Claims[e.opts.AccountClaim].(string)
	}
	if account == "" {
		return identity.Identity{}, fmt.Errorf("%w: the token has no %s claim", ErrInvalidToken, e.opts.AccountClaim)
	}
	scopes := []string(claims.Scopes)
	ks, err := e.opts.Keys.ListKeys(ctx, account)
	if err != nil && !errors.Is(err, keys.ErrNotFound) {
		return identity.Identity{}, err
	}
	// Oldest first: the account's first key carries OAuth callers.
	slices.SortFunc(ks, func(a, b keys.Key) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, k := range ks {
		if k.RevokedAt != nil {
			continue
		}
		var held []string
		for _, s := range scopes {
			if k.Has(s) && slices.Contains(grantableScopes, s) {
				held = append(held, s)
			}
		}
		if len(held) > 0 {
			return identity.Identity{AccountID: account, KeyID: k.ID, Scopes: held}, nil
		}
	}
	return identity.Identity{}, fmt.Errorf("%w: account %q has no active API key holding the token's scopes", ErrInvalidToken, account)
}

var _ oidc.Claims = (*oidc.AccessTokenClaims)(nil)
