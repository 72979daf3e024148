package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
)

// TokenVerifier resolves an access token to the identity it acts for.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (identity.Identity, error)
}

// Resource is toolhost as an OAuth protected resource (RFC 9728): it
// publishes where its authorization server is and verifies bearer tokens
// with the embedded Provider or an External issuer. Together with the key
// service it is the server.TokenAuthenticator the routes authenticate with.
type Resource struct {
	// URL is the resource identifier: the public URL of /mcp.
	URL string
	// AuthorizationServer is the issuer clients get tokens from.
	AuthorizationServer string
	Verifier            TokenVerifier
	Keys                server.Authenticator
}

var _ server.TokenAuthenticator = (*Resource)(nil)

// Authenticate is the API-key path, unchanged.
func (r *Resource) Authenticate(ctx context.Context, secret string) (*keys.Key, error) {
	return r.Keys.Authenticate(ctx, secret)
}

// VerifyToken is the OAuth path.
func (r *Resource) VerifyToken(ctx context.Context, token string) (identity.Identity, error) {
	return r.Verifier.VerifyToken(ctx, token)
}

// ResourceMetadataURL is the path-suffixed well-known URL (RFC 9728 §3.1).
func (r *Resource) ResourceMetadataURL() string {
	u, err := url.Parse(r.URL)
	if err != nil {
		return r.URL
	}
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimRight(u.Path, "/")
}

// Routes serve the metadata at the path-suffixed URL and at the root
// well-known URL (clients of the 2025-03-26 spec look there).
func (r *Resource) Routes() map[string]http.Handler {
	h := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               r.URL,
		AuthorizationServers:   []string{r.AuthorizationServer},
		ScopesSupported:        grantableScopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "toolhost",
	})
	out := map[string]http.Handler{"/.well-known/oauth-protected-resource": h}
	if u, err := url.Parse(r.ResourceMetadataURL()); err == nil && u.Path != "/.well-known/oauth-protected-resource" {
		out[u.Path] = h
	}
	return out
}
