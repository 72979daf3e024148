package mcpremote

import (
	"encoding/base64"
	"errors"
	"testing"
)

func jwtOf(header, claims string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(header)) + "." + e([]byte(claims)) + ".c2ln"
}

func TestCheckAudience(t *testing.T) {
	const res = "https://mcp.example/mcp"
	tests := []struct {
		name, token string
		refused     bool
	}{
		{"opaque", "abc123", false},
		{"plain JWT, other audience (not RFC 9068: opaque to us)", jwtOf(`{"typ":"JWT"}`, `{"aud":"https://elsewhere.example"}`), false},
		{"at+jwt for the resource", jwtOf(`{"typ":"at+jwt"}`, `{"aud":"https://mcp.example/mcp"}`), false},
		{"at+jwt for the resource with a slash", jwtOf(`{"typ":"at+JWT"}`, `{"aud":["x","https://mcp.example/mcp/"]}`), false},
		{"application/at+jwt elsewhere", jwtOf(`{"typ":"application/at+jwt"}`, `{"aud":["https://elsewhere.example/mcp"]}`), true},
		{"at+jwt for a sibling path", jwtOf(`{"typ":"at+jwt"}`, `{"aud":"https://mcp.example/mcp2"}`), true},
		{"at+jwt without aud", jwtOf(`{"typ":"at+jwt"}`, `{"sub":"u"}`), true},
		{"at+jwt with undecodable claims", jwtOf(`{"typ":"at+jwt"}`, `{"aud":`), true},
	}
	for _, tt := range tests {
		err := checkAudience(tt.token, res)
		if (err != nil) != tt.refused || (err != nil && !errors.Is(err, ErrTokenForAnotherResource)) {
			t.Errorf("%s: %v, want refused=%v", tt.name, err, tt.refused)
		}
	}
}

func FuzzCheckAudience(f *testing.F) {
	f.Add(jwtOf(`{"typ":"at+jwt"}`, `{"aud":"https://mcp.example/mcp"}`))
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		if err := checkAudience(token, "https://mcp.example/mcp"); err != nil && !errors.Is(err, ErrTokenForAnotherResource) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}
