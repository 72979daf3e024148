package mcpremote_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

func ptr[T any](v T) *T { return &v }

func TestApplyRefusesBadRegistrations(t *testing.T) {
	rules := mcpremote.Rules{Slots: []string{"narrator"}}
	base := func() mcpremote.Input {
		return mcpremote.Input{Name: ptr("github"), URL: ptr("https://mcp.example.com/mcp")}
	}
	tests := []struct {
		name  string
		edit  func(*mcpremote.Input)
		field string
		code  string
	}{
		{"no name", func(in *mcpremote.Input) { in.Name = nil }, "name", ""},
		{"double underscore", func(in *mcpremote.Input) { in.Name = ptr("git__hub") }, "name", ""},
		{"upper case", func(in *mcpremote.Input) { in.Name = ptr("GitHub") }, "name", ""},
		{"unicode look-alike", func(in *mcpremote.Input) { in.Name = ptr("gіthub") }, "name", ""},
		{"too long", func(in *mcpremote.Input) { in.Name = ptr(strings.Repeat("a", 33)) }, "name", ""},
		{"no url", func(in *mcpremote.Input) { in.URL = nil }, "url", ""},
		{"stdio", func(in *mcpremote.Input) { in.URL = ptr("file:///usr/bin/server") }, "url", ""},
		{"user info", func(in *mcpremote.Input) { in.URL = ptr("https://u:p@mcp.example.com/") }, "url", ""},
		{"huge url", func(in *mcpremote.Input) { in.URL = ptr("https://e.com/" + strings.Repeat("a", 3000)) }, "url", ""},
		{"reserved header", func(in *mcpremote.Input) { in.Headers = ptr(map[string]string{"authorization": "x"}) }, "headers", ""},
		{"header injection", func(in *mcpremote.Input) { in.Headers = ptr(map[string]string{"X-A": "1\r\nX-B: 2"}) }, "headers", ""},
		{"same header twice", func(in *mcpremote.Input) { in.Headers = ptr(map[string]string{"x-a": "1", "X-A": "2"}) }, "headers", ""},
		{"bearer without token", func(in *mcpremote.Input) { in.Auth = &mcpremote.AuthInput{Type: "bearer"} }, "auth.token", ""},
		{"client credentials half", func(in *mcpremote.Input) {
			in.Auth = &mcpremote.AuthInput{Type: "oauth_client_credentials", ClientID: "c"}
		}, "auth", ""},
		{"authorization code with a token", func(in *mcpremote.Input) {
			in.Auth = &mcpremote.AuthInput{Type: "oauth_authorization_code", Token: "t"}
		}, "auth", ""},
		{"authorization code with a token URL", func(in *mcpremote.Input) {
			in.Auth = &mcpremote.AuthInput{Type: "oauth_authorization_code", TokenURL: "https://as.example/token"}
		}, "auth", ""},
		{"authorization code secret without client", func(in *mcpremote.Input) {
			in.Auth = &mcpremote.AuthInput{Type: "oauth_authorization_code", ClientSecret: "s"}
		}, "auth.client_secret", ""},
		{"authorization code client id on two lines", func(in *mcpremote.Input) {
			in.Auth = &mcpremote.AuthInput{Type: "oauth_authorization_code", ClientID: "a\r\nX-Evil: 1"}
		}, "auth.client_id", ""},
		{"timeout too long", func(in *mcpremote.Input) { in.Timeout = ptr("1h") }, "timeout", ""},
		{"timeout not a duration", func(in *mcpremote.Input) { in.Timeout = ptr("soon") }, "timeout", ""},
		{"bad side effect", func(in *mcpremote.Input) {
			in.Tools = ptr(map[string]mcpremote.Override{"x": {SideEffectLevel: ptr("maybe")}})
		}, "tools", ""},
		{"unknown slot", func(in *mcpremote.Input) {
			in.Tools = ptr(map[string]mcpremote.Override{"x": {AllowedSlots: ptr([]string{"god"})}})
		}, "tools", ""},
		{"default side effect unknown", func(in *mcpremote.Input) {
			in.Defaults = &mcpremote.Defaults{SideEffectLevel: ptr("harmless")}
		}, "defaults", ""},
		{"default side effect in another case", func(in *mcpremote.Input) {
			in.Defaults = &mcpremote.Defaults{SideEffectLevel: ptr("None")}
		}, "defaults", ""},
		{"default slot unknown", func(in *mcpremote.Input) {
			in.Defaults = &mcpremote.Defaults{AllowedSlots: ptr([]string{"narrator", "narrator\u0000"})}
		}, "defaults", ""},
		{"default slots more than there are", func(in *mcpremote.Input) {
			in.Defaults = &mcpremote.Defaults{AllowedSlots: ptr(slices.Repeat([]string{"narrator"}, 1000))}
		}, "defaults", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.edit(&in)
			var s mcpremote.Server
			var sec mcpremote.Secrets
			err := rules.Apply(&s, &sec, in, true)
			var fe *mcpremote.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || fe.Code != tc.code {
				t.Fatalf("got %v, want a %s error on %s", err, tc.code, tc.field)
			}
		})
	}
	in := base()
	in.Headers = ptr(map[string]string{"x-api-key": "k"})
	in.Auth = &mcpremote.AuthInput{Type: "bearer", Token: "t"}
	var s mcpremote.Server
	var sec mcpremote.Secrets
	if err := rules.Apply(&s, &sec, in, true); err != nil {
		t.Fatal(err)
	}
	if !s.Enabled || s.HeaderNames[0] != "X-Api-Key" || sec.Headers["X-Api-Key"] != "k" || sec.BearerToken != "t" || s.Auth.Type != "bearer" {
		t.Fatalf("applied: %+v %+v", s, sec)
	}
}

func TestApplyAuthorizationCodeKeepsClientAndForgetsOldGrant(t *testing.T) {
	rules := mcpremote.Rules{}
	s := mcpremote.Server{}
	sec := mcpremote.Secrets{BearerToken: "old", Grant: &mcpremote.Grant{AccessToken: "old-access", RefreshToken: "old-refresh"}}
	in := mcpremote.Input{Name: ptr("github"), URL: ptr("https://mcp.example.com/mcp"),
		Auth: &mcpremote.AuthInput{Type: "oauth_authorization_code", ClientID: "pre-registered", ClientSecret: "s3cret", Scopes: []string{"repo"}}}
	if err := rules.Apply(&s, &sec, in, true); err != nil {
		t.Fatal(err)
	}
	if s.Auth.Type != mcpremote.AuthAuthorizationCode || s.Auth.ClientID != "pre-registered" || len(s.Auth.Scopes) != 1 {
		t.Fatalf("auth = %+v", s.Auth)
	}
	if sec.ClientSecret != "s3cret" || sec.BearerToken != "" || sec.Grant != nil {
		t.Fatalf("secrets = %+v: a new auth must forget the old token and grant", sec)
	}
}

func TestApplyNewURLForgetsTheGrant(t *testing.T) {
	s := mcpremote.Server{URL: "https://mcp.example.com/mcp", Auth: mcpremote.Auth{Type: mcpremote.AuthAuthorizationCode}}
	tests := []struct {
		name  string
		url   string
		grant bool
	}{
		{"same URL", "https://mcp.example.com/mcp", true},
		{"another URL", "https://evil.example.com/mcp", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			sec := mcpremote.Secrets{Grant: &mcpremote.Grant{AccessToken: "a"}}
			if err := (mcpremote.Rules{}).Apply(&s, &sec, mcpremote.Input{URL: ptr(tc.url)}, false); err != nil {
				t.Fatal(err)
			}
			if (sec.Grant != nil) != tc.grant {
				t.Fatalf("grant kept = %v, want %v", sec.Grant != nil, tc.grant)
			}
		})
	}
}
