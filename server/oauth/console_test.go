package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/server/oauth"
)

func TestConsoleClientIsRegisteredOncePerRedirect(t *testing.T) {
	for name, db := range grantStores(t) {
		t.Run(name, func(t *testing.T) { consoleClientCases(t, db) })
	}
}

func consoleClientCases(t *testing.T, db *store.DB) {
	var p *oauth.Provider
	base := provider(t, oauth.Options{Store: db, Keys: keys.New(keys.Options{Store: db}), KeyStore: db}, &p)
	ctx := context.Background()
	cases := []struct {
		redirect string
		ok       bool
	}{
		{base + "/console/oauth/callback", true},
		{strings.Replace(base, "127.0.0.1", "localhost", 1) + "/console/oauth/callback", true},
		{strings.Replace(base, "127.0.0.1", "[::1]", 1) + "/console/oauth/callback", true},
		{"http://127.0.0.1:1/console/oauth/callback", false},    // another port than the issuer's
		{"https://tools.example/console/oauth/callback", false}, // another origin than the issuer's: a Host header's
		{"https://127.0.0.1.evil.example/console/oauth/callback", false},
		{"http://tools.example/console/oauth/callback", false}, // plain http off loopback
		{"javascript:alert(1)", false},
		{"com.example.app:/console/oauth/callback", false},
		{base + "/console/oauth/callback#frag", false},
		{"https://" + strings.Repeat("é", 3000) + "/console/oauth/callback", false},
		{"https://user@tools.example/console/oauth/callback", false},
	}
	for _, tc := range cases {
		t.Run(tc.redirect[:min(len(tc.redirect), 60)], func(t *testing.T) {
			id, err := p.ConsoleClient(ctx, tc.redirect)
			if (err == nil) != tc.ok {
				t.Fatalf("ConsoleClient = %q, %v", id, err)
			}
			if !tc.ok {
				return
			}
			again, err := p.ConsoleClient(ctx, tc.redirect)
			if err != nil || again != id || !strings.HasPrefix(id, "console_") {
				t.Fatalf("second call = %q, %v; first %q", again, err, id)
			}
			c, err := db.Client(ctx, id)
			if err != nil || c.AuthMethod != "none" || len(c.RedirectURIs) != 1 || c.RedirectURIs[0] != tc.redirect {
				t.Fatalf("stored client = %+v, %v", c, err)
			}
		})
	}
	// Purged unused, the client is registered again on the next sign-in.
	redirect := base + "/console/oauth/callback"
	old, _ := p.ConsoleClient(ctx, redirect)
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) // after every client's use
	if _, err := db.PurgeClients(ctx, identity.ClientExpiry{Now: far, UnauthorizedBefore: far, IdleBefore: far}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Client(ctx, old); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("the purge kept %s: %v", old, err)
	}
	fresh, err := p.ConsoleClient(ctx, redirect)
	if err != nil || fresh == old {
		t.Fatalf("after the purge = %q, %v", fresh, err)
	}
}

// TestOnlyTheConsoleIsDelegatedAdmin: a registered client asking for
// every scope is shown (and granted) mcp alone; the console's client is
// shown every scope it asked for.
func TestOnlyTheConsoleIsDelegatedAdmin(t *testing.T) {
	s := newAuthServer(t)
	consoleRedir := s.base + "/console/oauth/callback"
	consoleID, err := s.p.ConsoleClient(context.Background(), consoleRedir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client, redirect string
		want             []string
		never            []string
	}{
		{s.clientID, clientRedir, []string{"<code>mcp</code>"}, []string{"<code>admin</code>", "<code>tools</code>"}},
		{consoleID, consoleRedir, []string{"<code>mcp</code>", "<code>admin</code>", "<code>tools</code>", "<code>hosted</code>"}, nil},
	} {
		t.Run(tc.client, func(t *testing.T) {
			cfg := &oauth2.Config{ClientID: tc.client, RedirectURL: tc.redirect, Scopes: []string{oauth.ConsoleScopes()},
				Endpoint: oauth2.Endpoint{AuthURL: s.base + "/oauth/authorize"}}
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, _ := get(t, c, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			loc, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || loc.Path != "/oauth/consent" {
				t.Fatalf("authorize → %q", resp.Header.Get("Location"))
			}
			_, body := get(t, c, loc.String())
			for _, w := range tc.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("consent page lacks %s", w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(string(body), n) {
					t.Errorf("consent page offers %s", n)
				}
			}
		})
	}
}
