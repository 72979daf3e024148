package oauth

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolhost/toolhost/internal/identity"
)

// localKeySet verifies our own tokens with the public half of the signing
// key, without a round trip to /keys.
type localKeySet struct{ key *rsa.PublicKey }

func (k localKeySet) VerifySignature(_ context.Context, jws *jose.JSONWebSignature) ([]byte, error) {
	return jws.Verify(k.key)
}

// verifyJWT checks signature, issuer, expiry and audience (RFC 8707: the
// token must be bound to resource) and returns the claims. These are
// op.VerifyAccessToken's checks but for the expiry, which it reads on
// time.Now: here it is read at now, the verifier's clock, the one that
// issued the token's exp.
func verifyJWT(ctx context.Context, v *op.AccessTokenVerifier, now time.Time, token, resource string) (*oidc.AccessTokenClaims, error) {
	claims := new(oidc.AccessTokenClaims)
	payload, err := oidc.ParseToken(token, claims)
	if err == nil {
		err = oidc.CheckIssuerWithISSVerifier(claims, v.Issuer, v.ISS)
	}
	if err == nil {
		err = oidc.CheckSignature(ctx, token, payload, claims, v.SupportedSignAlgs, v.KeySet)
	}
	if err == nil && !now.Before(claims.GetExpiration()) {
		err = oidc.ErrExpired
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if !oauthex.MatchesResource(claims.Audience, resource) {
		return nil, fmt.Errorf("%w: the token is for another audience, not %s", ErrInvalidToken, resource)
	}
	return claims, nil
}

// VerifyToken resolves one of our access tokens to the identity of its
// grant: the grant's account and key (so the key's limits, monthly cap and
// journal apply) and the token's scopes. Beyond the signature it checks
// the token, its grant and its key in the store on every request, so a
// revoked grant or key is refused at once.
func (p *Provider) VerifyToken(ctx context.Context, token string) (identity.Identity, error) {
	claims, err := verifyJWT(ctx, p.verifier, p.opts.Now(), token, p.opts.Resource)
	if err != nil {
		return identity.Identity{}, err
	}
	t, err := p.opts.Store.Token(ctx, identity.Hash(claims.JWTID))
	if errors.Is(err, identity.ErrNotFound) || (err == nil && t.Kind != identity.KindAccess) {
		return identity.Identity{}, fmt.Errorf("%w: unknown token id", ErrInvalidToken)
	}
	if err != nil {
		return identity.Identity{}, err
	}
	if t.RevokedAt != nil {
		return identity.Identity{}, fmt.Errorf("%w: the token was revoked", ErrInvalidToken)
	}
	g, err := p.storage.liveGrant(ctx, t.GrantID)
	if errors.Is(err, identity.ErrNotFound) {
		return identity.Identity{}, fmt.Errorf("%w: the grant was revoked", ErrInvalidToken)
	}
	if err != nil {
		return identity.Identity{}, err
	}
	var scopes []string
	for _, s := range claims.Scopes {
		if slices.Contains(g.Scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return identity.Identity{AccountID: g.AccountID, KeyID: g.KeyID, Scopes: scopes}, nil
}
