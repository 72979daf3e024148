package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// DevIdentity is the caller in --dev mode: the single local account with
// every scope and no key.
var DevIdentity = identity.Identity{AccountID: "local", Scopes: keys.AllScopes}

// Authenticator resolves a presented secret.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*keys.Key, error)
}

// TokenAuthenticator is an Authenticator that also takes OAuth access
// tokens: any bearer value that is not an API key (keys start with
// keys.SecretPrefix) goes to VerifyToken. Its 401 and 403 answers point
// clients at the protected resource metadata (RFC 9728 §5.1), from which
// an MCP client finds the authorization server.
type TokenAuthenticator interface {
	Authenticator
	// VerifyToken returns the identity of a valid token, an error wrapping
	// ErrInvalidToken for a token to refuse, or another error when it
	// cannot tell.
	VerifyToken(ctx context.Context, token string) (identity.Identity, error)
	// ResourceMetadataURL is the RFC 9728 metadata URL of this resource.
	ResourceMetadataURL() string
}

// ErrInvalidToken is an OAuth access token refused (RFC 6750 invalid_token).
var ErrInvalidToken = errors.New("invalid access token")

// Auth authenticates every request with "Authorization: Bearer <key>" (and,
// when allowXAPIKey says so for the path, "x-api-key: <key>" as Anthropic
// clients send it) and stores the caller's identity.Identity in the context. scope, when not
// empty, is required: without it the answer is 403. A missing, unknown or
// revoked key is 401 with WWW-Authenticate: Bearer and a JSON error.
//
// With dev set, nothing is checked and every request is DevIdentity.
func Auth(a Authenticator, dev bool, scope string, allowXAPIKey bool) func(http.Handler) http.Handler {
	ta, _ := a.(TokenAuthenticator)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if dev {
				next.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), DevIdentity)))
				return
			}
			ch := challenge{ta: ta, scope: scope}
			secret := bearer(r.Header.Get("Authorization"))
			if secret == "" && allowXAPIKey {
				secret = strings.TrimSpace(r.Header.Get("x-api-key"))
			}
			if secret == "" {
				ch.unauthorized(w, "", "missing_api_key", "send your API key as Authorization: Bearer <key>")
				return
			}
			if ta != nil && !strings.HasPrefix(secret, keys.SecretPrefix) {
				id, err := ta.VerifyToken(r.Context(), secret)
				switch {
				case errors.Is(err, ErrInvalidToken):
					ch.unauthorized(w, "invalid_token", "invalid_token", "the access token is not valid: "+err.Error())
					return
				case err != nil:
					WriteError(w, http.StatusServiceUnavailable, "auth_unavailable", "cannot check access tokens right now; retry shortly")
					return
				}
				if scope != "" && !id.Has(scope) {
					ch.forbidden(w, "this access token lacks the "+scope+" scope; authorize again asking for it")
					return
				}
				next.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), id)))
				return
			}
			k, err := a.Authenticate(r.Context(), secret)
			switch {
			case errors.Is(err, keys.ErrRevoked):
				ch.unauthorized(w, "", "revoked_api_key", "this API key has been revoked")
				return
			case errors.Is(err, keys.ErrInvalidKey):
				ch.unauthorized(w, "", "invalid_api_key", "the API key is not valid")
				return
			case err != nil:
				WriteError(w, http.StatusServiceUnavailable, "auth_unavailable", "cannot check API keys right now; retry shortly")
				return
			}
			if scope != "" && !k.Has(scope) {
				ch.forbidden(w, "this API key lacks the "+scope+" scope")
				return
			}
			id := identity.Identity{AccountID: k.AccountID, KeyID: k.ID, Scopes: k.Scopes}
			next.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), id)))
		})
	}
}

// challenge writes the WWW-Authenticate header of a refusal: RFC 6750
// Bearer with realm, and, when OAuth is on, the resource metadata URL and
// the scope the route needs (RFC 9728 §5.1), plus the RFC 6750 error code
// when a token was presented.
type challenge struct {
	ta    TokenAuthenticator
	scope string
}

func (c challenge) header(oauthErr, desc string) string {
	params := []string{`realm="toolhost"`}
	if oauthErr != "" {
		params = append(params, fmt.Sprintf("error=%q", oauthErr))
		if desc != "" {
			params = append(params, fmt.Sprintf("error_description=%q", headerSafe(desc)))
		}
	}
	if c.ta != nil {
		if c.scope != "" {
			params = append(params, fmt.Sprintf("scope=%q", c.scope))
		}
		params = append(params, fmt.Sprintf("resource_metadata=%q", c.ta.ResourceMetadataURL()))
	}
	return "Bearer " + strings.Join(params, ", ")
}

func (c challenge) unauthorized(w http.ResponseWriter, oauthErr, code, msg string) {
	desc := ""
	if oauthErr != "" {
		desc = msg
	}
	w.Header().Set("WWW-Authenticate", c.header(oauthErr, desc))
	WriteError(w, http.StatusUnauthorized, code, msg)
}

func (c challenge) forbidden(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", c.header("insufficient_scope", ""))
	WriteError(w, http.StatusForbidden, "insufficient_scope", msg)
}

// headerSafe keeps a quoted-string value to printable ASCII without quotes
// or backslashes (RFC 6750 §3 restricts error_description so).
func headerSafe(s string) string {
	b := []byte(s)
	out := b[:0]
	for _, c := range b {
		if c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
			out = append(out, c)
		}
	}
	if len(out) > 200 {
		out = out[:200]
	}
	return string(out)
}

func bearer(h string) string {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return ""
	}
	return f[1]
}
