package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// fixedAuth knows one API key and one OAuth token.
type fixedAuth struct{}

func (fixedAuth) Authenticate(_ context.Context, secret string) (*keys.Key, error) {
	if secret == "th_good" {
		return &keys.Key{ID: "key_1", AccountID: "acme", Scopes: []string{keys.ScopeMCP}}, nil
	}
	return nil, keys.ErrInvalidKey
}

type tokenAuth struct{ fixedAuth }

func (tokenAuth) VerifyToken(_ context.Context, token string) (identity.Identity, error) {
	switch token {
	case "tok_mcp":
		return identity.Identity{AccountID: "acme", KeyID: "key_1", Scopes: []string{keys.ScopeMCP}}, nil
	case "tok_down":
		return identity.Identity{}, fmt.Errorf("jwks unreachable")
	}
	return identity.Identity{}, fmt.Errorf("%w: expired", ErrInvalidToken)
}

func (tokenAuth) ResourceMetadataURL() string {
	return "https://h/.well-known/oauth-protected-resource/mcp"
}

func TestAuthAnswersWithTheRFC6750AndRFC9728Challenge(t *testing.T) {
	const meta = `resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name       string
		a          Authenticator
		scope      string
		header     string
		wantStatus int
		wantCode   string
		wantHeader []string // substrings of WWW-Authenticate
		noHeader   []string
	}{
		{"keys only: no credentials", fixedAuth{}, "mcp", "", 401, "missing_api_key", []string{`Bearer realm="toolhost"`}, []string{"resource_metadata"}},
		{"keys only: a token is an unknown key", fixedAuth{}, "mcp", "Bearer tok_mcp", 401, "invalid_api_key", nil, []string{"resource_metadata"}},
		{"oauth: no credentials", tokenAuth{}, "mcp", "", 401, "missing_api_key", []string{`scope="mcp"`, meta}, []string{"error="}},
		{"oauth: API key still works", tokenAuth{}, "mcp", "Bearer th_good", 200, "", nil, nil},
		{"oauth: bad API key", tokenAuth{}, "mcp", "Bearer th_bad", 401, "invalid_api_key", []string{meta}, []string{"error="}},
		{"oauth: valid token", tokenAuth{}, "mcp", "Bearer tok_mcp", 200, "", nil, nil},
		{"oauth: expired token", tokenAuth{}, "mcp", "Bearer tok_old", 401, "invalid_token", []string{`error="invalid_token"`, `error_description="the access token is not valid: invalid access token: expired"`, meta}, nil},
		{"oauth: verifier down", tokenAuth{}, "mcp", "Bearer tok_down", 503, "auth_unavailable", nil, nil},
		{"oauth: step-up", tokenAuth{}, "hosted", "Bearer tok_mcp", 403, "insufficient_scope", []string{`error="insufficient_scope"`, `scope="hosted"`, meta}, nil},
		{"oauth: key lacking scope", tokenAuth{}, "hosted", "Bearer th_good", 403, "insufficient_scope", []string{`error="insufficient_scope"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Auth(tt.a, false, tt.scope, false)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if id, _ := identity.FromContext(r.Context()); id.AccountID != "acme" {
					t.Error("no identity")
				}
			}))
			req := httptest.NewRequest("POST", "/mcp", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || (tt.wantCode != "" && !strings.Contains(rec.Body.String(), `"code":"`+tt.wantCode+`"`)) {
				t.Fatalf("%d %s, want %d %s", rec.Code, rec.Body, tt.wantStatus, tt.wantCode)
			}
			got := rec.Header().Get("WWW-Authenticate")
			for _, s := range tt.wantHeader {
				if !strings.Contains(got, s) {
					t.Errorf("WWW-Authenticate %q lacks %q", got, s)
				}
			}
			for _, s := range tt.noHeader {
				if strings.Contains(got, s) {
					t.Errorf("WWW-Authenticate %q has %q", got, s)
				}
			}
		})
	}
}

func TestHeaderSafeKeepsQuotedStringsValid(t *testing.T) {
	for in, want := range map[string]string{
		`plain text`:             `plain text`,
		`say "hi" \ there`:       `say hi  there`,
		"line\r\nbreak\x00":      `linebreak`,
		"\u202eevil\u200b":       `evil`,
		strings.Repeat("a", 500): strings.Repeat("a", 200),
	} {
		if got := headerSafe(in); got != want {
			t.Errorf("headerSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
