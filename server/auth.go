package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"toolhost/keys"
)

// Identity is who a request acts for.
type Identity struct {
	AccountID string
	KeyID     string // "" in development mode
	Scopes    []string
}

// Has reports whether the identity holds scope.
func (i *Identity) Has(scope string) bool {
	for _, s := range i.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// DevIdentity is the caller in --dev mode: the single local account with
// every scope and no key.
var DevIdentity = &Identity{AccountID: "local", Scopes: keys.AllScopes}

type identityKey struct{}

// IdentityFrom returns the identity the auth middleware stored, or nil.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// WithIdentity stores id in ctx.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// Authenticator resolves a presented secret.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*keys.Key, error)
}

// Auth authenticates every request with "Authorization: Bearer <key>" (and,
// when allowXAPIKey says so for the path, "x-api-key: <key>" as Anthropic
// clients send it) and stores the identity in the context. scope, when not
// empty, is required: without it the answer is 403. A missing, unknown or
// revoked key is 401 with WWW-Authenticate: Bearer and a JSON error.
//
// With dev set, nothing is checked and every request is DevIdentity.
func Auth(a Authenticator, dev bool, scope string, allowXAPIKey bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if dev {
				next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), DevIdentity)))
				return
			}
			secret := bearer(r.Header.Get("Authorization"))
			if secret == "" && allowXAPIKey {
				secret = strings.TrimSpace(r.Header.Get("x-api-key"))
			}
			if secret == "" {
				unauthorized(w, "missing_api_key", "send your API key as Authorization: Bearer <key>")
				return
			}
			k, err := a.Authenticate(r.Context(), secret)
			switch {
			case errors.Is(err, keys.ErrRevoked):
				unauthorized(w, "revoked_api_key", "this API key has been revoked")
				return
			case errors.Is(err, keys.ErrInvalidKey):
				unauthorized(w, "invalid_api_key", "the API key is not valid")
				return
			case err != nil:
				WriteError(w, http.StatusServiceUnavailable, "auth_unavailable", "cannot check API keys right now; retry shortly")
				return
			}
			if scope != "" && !k.Has(scope) {
				WriteError(w, http.StatusForbidden, "insufficient_scope", "this API key lacks the "+scope+" scope")
				return
			}
			id := &Identity{AccountID: k.AccountID, KeyID: k.ID, Scopes: k.Scopes}
			next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), id)))
		})
	}
}

func bearer(h string) string {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return ""
	}
	return f[1]
}

func unauthorized(w http.ResponseWriter, code, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="toolhost"`)
	WriteError(w, http.StatusUnauthorized, code, msg)
}

// MCPTokenInfo hands the identity Auth established to the go-sdk as its
// TokenInfo, so the MCP server sees it in every request's extra (and binds
// each session to the key that opened it). It must run inside Auth.
func MCPTokenInfo(next http.Handler) http.Handler {
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := IdentityFrom(r.Context())
		if id == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{
			UserID:     id.KeyID,
			Scopes:     id.Scopes,
			Expiration: time.Now().Add(24 * time.Hour),
			Extra:      map[string]any{"account_id": id.AccountID},
		}, nil
	}
	return auth.RequireBearerToken(verify, nil)(next)
}

// IdentityFromTokenInfo reverses MCPTokenInfo inside an MCP handler.
func IdentityFromTokenInfo(ti *auth.TokenInfo) *Identity {
	if ti == nil {
		return nil
	}
	acc, _ := ti.Extra["account_id"].(string)
	return &Identity{AccountID: acc, KeyID: ti.UserID, Scopes: ti.Scopes}
}
