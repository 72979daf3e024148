package oauth

import (
	"crypto/subtle"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// grantableScopes are the scopes a client may ask for: the MCP endpoint
// and the /v1 hosted-tool endpoints. Admin is never delegated, but to the
// operator console (scopesFor).
var grantableScopes = []string{keys.ScopeMCP, keys.ScopeHosted}

// client is a registered client as the library sees it. Redirect URIs
// match exactly; a native client's loopback redirect may differ in its
// port only (RFC 8252 §7.3, implemented by the library).
type client struct {
	c     *identity.Client
	login func(string) string
	now   func() time.Time // the provider's clock
}

func (c *client) GetID() string                        { return c.c.ID }
func (c *client) RedirectURIs() []string               { return c.c.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string     { return nil }
func (c *client) LoginURL(id string) string            { return c.login(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *client) DevMode() bool                        { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }

// ClockSkew is how far the wall clock runs ahead of the provider's. The
// library stamps an access token's iat and nbf, and computes the token
// response's expires_in, on time.Now shifted back by this skew, so both
// read the provider's clock, the one that set the token's exp.
func (c *client) ClockSkew() time.Duration { return time.Since(c.now()) }

func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

func (c *client) ApplicationType() op.ApplicationType {
	if c.c.Native {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}

func (c *client) AuthMethod() oidc.AuthMethod { return oidc.AuthMethod(c.c.AuthMethod) }

func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string { //nolint:revive // the name is zitadel/oidc op.Client's
	return func(s []string) []string { return s }
}

func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *client) IsScopeAllowed(scope string) bool {
	return slices.Contains(scopesFor(c.c.ID), scope)
}

func equalHash(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
