package mcp

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/identity"
)

// The go-sdk does not hand a request's context to tool handlers: what it
// carries from the HTTP request to a handler is the auth.TokenInfo of the
// request (req.Extra.TokenInfo), and it binds each session to the
// TokenInfo's UserID. Authenticated puts the caller's identity.Identity
// there whole; identify takes it back out. The conversion lives here and
// nowhere else.

// tokenIdentity is the key of the identity in TokenInfo.Extra.
const tokenIdentity = "toolhost/identity"

// Authenticated hands the identity.Identity that authentication stored in
// the request's context (server.Auth) to the go-sdk as its TokenInfo, so
// every handler sees the caller and each session stays bound to the key
// that opened it. It must run inside server.Auth; a request without an
// identity is refused with 401.
func Authenticated(next http.Handler) http.Handler {
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id, ok := identity.FromContext(r.Context())
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id.KeyID, Scopes: id.Scopes, Extra: map[string]any{tokenIdentity: id}}, nil
	}
	// The identity has no expiry of its own: server.Auth checked the key
	// or token (an OAuth token on its issuer's clock) on this very request.
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

// identify is the caller of an MCP request: Options.Identify when set,
// else the identity Authenticated carried, else Options.Anonymous.
func (s *Server) identify(ctx context.Context, extra *sdk.RequestExtra) identity.Identity {
	if s.opts.Identify != nil {
		return s.opts.Identify(ctx, extra)
	}
	if extra != nil && extra.TokenInfo != nil {
		if id, ok := extra.TokenInfo.Extra[tokenIdentity].(identity.Identity); ok {
			return id
		}
	}
	return s.opts.Anonymous
}
