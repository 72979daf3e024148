package mcpremote_test

import (
	"bytes"
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

func startAuthServer(t *testing.T) *testserver.AuthServer {
	t.Helper()
	as, stop, err := testserver.StartAuth()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return as
}

// stored is the server as the store holds it, to show nothing changed.
func (r *rig) stored(srv mcpremote.Server) mcpremote.Server {
	r.t.Helper()
	s, err := r.store.GetMCPServer(context.Background(), srv.AccountID, srv.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func sameStored(t *testing.T, before, after mcpremote.Server) {
	t.Helper()
	if !bytes.Equal(before.Sealed, after.Sealed) || !before.UpdatedAt.Equal(after.UpdatedAt) {
		t.Fatalf("the stored server changed: updated %v → %v", before.UpdatedAt, after.UpdatedAt)
	}
}

func authCodeServer(s *mcpremote.Server, _ *mcpremote.Secrets) {
	s.Auth = mcpremote.Auth{Type: mcpremote.AuthAuthorizationCode}
}

// TestAuthorizationServerAnswersAreBounded: every answer toolhost reads
// while authorizing (protected resource metadata, authorization server
// metadata, dynamic registration, the code exchange) is refused when it
// is too large or too slow, the flow fails with the matching code, no
// authorization URL is handed out for a flow whose discovery was refused,
// and the stored server is unchanged.
func TestAuthorizationServerAnswersAreBounded(t *testing.T) {
	tests := []struct {
		endpoint, how, code string
	}{
		{testserver.EndpointResourceMetadata, testserver.Huge, mcpremote.CodeAuthResponseTooLarge},
		{testserver.EndpointResourceMetadata, testserver.Drip, mcpremote.CodeAuthServerTimeout},
		{testserver.EndpointServerMetadata, testserver.HugeDeclared, mcpremote.CodeAuthResponseTooLarge},
		{testserver.EndpointServerMetadata, testserver.Drip, mcpremote.CodeAuthServerTimeout},
		{testserver.EndpointRegister, testserver.Huge, mcpremote.CodeAuthResponseTooLarge},
		{testserver.EndpointRegister, testserver.Drip, mcpremote.CodeAuthServerTimeout},
		{testserver.EndpointToken, testserver.Huge, mcpremote.CodeAuthResponseTooLarge},
		{testserver.EndpointToken, testserver.HugeDeclared, mcpremote.CodeAuthResponseTooLarge},
		{testserver.EndpointToken, testserver.Drip, mcpremote.CodeAuthServerTimeout},
		{"", "", ""}, // the same server, healthy: the flow completes
	}
	for _, tt := range tests {
		t.Run(tt.endpoint+" "+tt.how, func(t *testing.T) {
			t.Parallel()
			as := startAuthServer(t)
			as.SetHostile(tt.endpoint, tt.how)
			r := newRig(t, mcpremote.Options{})
			srv := r.register("acct_a", "consent", as.URL(), authCodeServer)
			before := r.stored(srv)
			ctx := context.Background()
			authURL, err := r.gw.Authorize(ctx, srv, "http://127.0.0.1:9/mcp-servers/oauth/callback")
			if tt.endpoint != testserver.EndpointToken && tt.code != "" {
				if authURL != "" || mcpremote.AuthFailureCode(err) != tt.code {
					t.Fatalf("Authorize = %q, %v; want no URL and %s", authURL, err, tt.code)
				}
				sameStored(t, before, r.stored(srv))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(authURL)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = r.gw.Complete(ctx, u.Query().Get("state"), "code-1", "")
			if got := mcpremote.AuthFailureCode(err); got != tt.code {
				t.Fatalf("Complete = %v (code %q), want code %q", err, got, tt.code)
			}
			if tt.code != "" {
				sameStored(t, before, r.stored(srv))
				return
			}
			sec, err := r.seal.Open("acct_a", srv.ID, r.stored(srv).Sealed)
			if err != nil || sec.Grant == nil || sec.Grant.AccessToken != as.Token {
				t.Fatalf("healthy flow: grant %+v, %v", sec.Grant, err)
			}
		})
	}
}

// TestTokenEndpointAnswersAreBoundedOnUse: the token fetched when a tool
// is called (a refresh of an authorized server, client credentials) is
// refused when its answer is too large or too slow; the call fails with
// the matching code before it is sent, and the stored grant is unchanged.
func TestTokenEndpointAnswersAreBoundedOnUse(t *testing.T) {
	tests := []struct {
		auth, how, code string
	}{
		{mcpremote.AuthAuthorizationCode, testserver.Huge, mcpremote.CodeAuthResponseTooLarge},
		{mcpremote.AuthAuthorizationCode, testserver.Drip, mcpremote.CodeAuthServerTimeout},
		{mcpremote.AuthClientCredentials, testserver.HugeDeclared, mcpremote.CodeAuthResponseTooLarge},
		{mcpremote.AuthClientCredentials, testserver.Drip, mcpremote.CodeAuthServerTimeout},
		{mcpremote.AuthAuthorizationCode, "", ""},
		{mcpremote.AuthClientCredentials, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.auth+" "+tt.how, func(t *testing.T) {
			t.Parallel()
			as := startAuthServer(t)
			as.SetHostile(testserver.EndpointToken, tt.how)
			// The answer's time limit (three probe timeouts) is what the
			// drips check; the others check its size limit or a healthy
			// answer, which a loaded machine must not turn into a timeout.
			opts := mcpremote.Options{}
			if tt.how != testserver.Drip {
				opts.ProbeTimeout = time.Minute
			}
			r := newRig(t, opts)
			tokenURL := as.Base() + testserver.EndpointToken
			srv := r.register("acct_a", "remote", as.URL(), func(s *mcpremote.Server, sec *mcpremote.Secrets) {
				if tt.auth == mcpremote.AuthClientCredentials {
					s.Auth = mcpremote.Auth{Type: tt.auth, TokenURL: tokenURL, ClientID: "toolhost"}
					sec.ClientSecret = "cc-secret"
					return
				}
				s.Auth = mcpremote.Auth{Type: tt.auth}
				sec.Grant = &mcpremote.Grant{ClientID: "dyn-client", AuthURL: as.Base() + "/authorize", TokenURL: tokenURL,
					AccessToken: "stale", RefreshToken: "refresh-1", TokenType: "Bearer", Expiry: r.now().Add(-time.Minute)}
			})
			before := r.stored(srv)
			out := r.call("acct_a", "remote__echo", `{"message":"hi"}`)
			if tt.code == "" {
				if out.IsError {
					t.Fatalf("healthy token endpoint: %+v", out)
				}
				return
			}
			wantCode(t, out, tt.code)
			if as.Calls("echo") != 0 {
				t.Fatal("the call reached the server without a token")
			}
			sameStored(t, before, r.stored(srv))
		})
	}
}

// expireGrant makes the stored access token of an authorized server
// expired on the gateway's clock, so the next use refreshes it.
func (r *rig) expireGrant(srv mcpremote.Server) {
	r.t.Helper()
	s := r.stored(srv)
	sec, err := r.seal.Open(s.AccountID, s.ID, s.Sealed)
	if err != nil || sec.Grant == nil {
		r.t.Fatalf("no grant: %v", err)
	}
	sec.Grant.Expiry = r.now().Add(-time.Minute)
	if s.Sealed, err = r.seal.Seal(s.AccountID, s.ID, sec); err != nil {
		r.t.Fatal(err)
	}
	if err := r.store.UpdateMCPServer(context.Background(), s); err != nil {
		r.t.Fatal(err)
	}
	r.gw.Forget(s.ID)
}

// TestAuthorizationIsBoundToTheServerResource: toolhost names the MCP
// server as the resource (RFC 8707) in the authorization URL, the code
// exchange and every refresh, and refuses an RFC 9068 token whose
// audience is another resource: at the exchange (nothing stored) and at a
// refresh (the call is not sent, the stored grant unchanged).
func TestAuthorizationIsBoundToTheServerResource(t *testing.T) {
	tests := []struct {
		name                 string
		aud, refreshAud      string // "" = an opaque token; "self" = the server's URL
		exchangeErr, callErr string
	}{
		{"opaque tokens", "", "", "", ""},
		{"JWTs for the server", "self", "self", "", ""},
		{"a JWT for another resource at the exchange", "https://elsewhere.example/mcp", "", mcpremote.CodeTokenForAnotherResource, ""},
		{"a JWT for another resource at a refresh", "self", "https://elsewhere.example/mcp", "", mcpremote.CodeTokenForAnotherResource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := startAuthServer(t)
			aud := func(a string) string {
				if a == "self" {
					return as.URL()
				}
				return a
			}
			if tt.aud != "" {
				as.IssueJWT(aud(tt.aud))
			}
			r := newRig(t, mcpremote.Options{})
			srv := r.register("acct_a", "consent", as.URL(), authCodeServer)
			before := r.stored(srv)
			ctx := context.Background()
			authURL, err := r.gw.Authorize(ctx, srv, "http://127.0.0.1:9/mcp-servers/oauth/callback")
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(authURL)
			if got := u.Query().Get("resource"); got != as.URL() {
				t.Fatalf("authorization URL resource = %q, want %q", got, as.URL())
			}
			_, _, err = r.gw.Complete(ctx, u.Query().Get("state"), "code-1", "")
			if f := as.TokenForms(); len(f) != 1 || f[0].Get("resource") != as.URL() || f[0].Get("grant_type") != "authorization_code" {
				t.Fatalf("code exchange forms: %v", f)
			}
			if tt.exchangeErr != "" {
				if got := mcpremote.AuthFailureCode(err); got != tt.exchangeErr {
					t.Fatalf("Complete = %v, want %s", err, tt.exchangeErr)
				}
				sameStored(t, before, r.stored(srv))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r.expireGrant(srv)
			before = r.stored(srv)
			if tt.refreshAud != "" {
				as.IssueJWT(aud(tt.refreshAud))
			}
			out := r.call("acct_a", "consent__echo", `{"message":"hi"}`)
			if f := as.TokenForms(); len(f) != 2 || f[1].Get("resource") != as.URL() || f[1].Get("grant_type") != "refresh_token" {
				t.Fatalf("refresh forms: %v", f)
			}
			if tt.callErr == "" {
				if out.IsError {
					t.Fatalf("call after the refresh: %+v", out)
				}
				return
			}
			wantCode(t, out, tt.callErr)
			if as.Calls("echo") != 0 {
				t.Fatal("the call was sent with a token for another resource")
			}
			sameStored(t, before, r.stored(srv))
		})
	}
}
