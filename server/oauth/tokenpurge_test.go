package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/server/oauth"
)

// grantStores are the SQL stores the purge runs on.
func grantStores(t *testing.T) map[string]*store.DB { return storetest.Open(t, "oauth_test") }

// purgeServer is an authorization server on db with a settable clock,
// one registered client and an API key to consent with; access tokens
// live a day, so a purge meets more valid ones than a grant keeps.
func purgeServer(t *testing.T, db *store.DB, clk *clock) *authServer {
	t.Helper()
	ks := keys.New(keys.Options{Store: db, Now: clk.now})
	t.Cleanup(ks.Close)
	_, secret, err := ks.CreateKey(context.Background(), "acme", "laptop", []string{"mcp"}, keys.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var p *oauth.Provider
	base := provider(t, oauth.Options{Store: db, Keys: ks, KeyStore: db, Now: clk.now, AccessTokenTTL: 24 * time.Hour}, &p)
	a := register(t, http.DefaultClient, base, "refreshes in a loop")
	if a.status != http.StatusCreated {
		t.Fatalf("register = %+v", a)
	}
	oauth.WaitForPurge(p) // the first purge, started by the registration
	return &authServer{base: base, clientID: a.ClientID, apiKey: secret, p: p}
}

// exchange authorizes, consents and exchanges the code.
func (s *authServer) exchange(t *testing.T) tokenAnswer {
	t.Helper()
	code, verifier := s.code(t, "")
	tok := s.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {clientRedir}})
	if tok.status != http.StatusOK || tok.RefreshToken == "" {
		t.Fatalf("code exchange = %d %q", tok.status, tok.Error)
	}
	return tok
}

func (s *authServer) refresh(t *testing.T, refreshToken string) tokenAnswer {
	t.Helper()
	return s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

func countRows(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.SQL().QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A client refreshing in a loop, through the real token endpoint, grows
// oauth_tokens only until the next purge, which a token issuance starts
// at most once an hour: then its grant holds its live refresh token and
// its newest AccessTokensPerGrant access tokens, whatever the number of
// refreshes; an abandoned authorization's expired request goes too. The
// newest tokens keep working, and a refresh token rotated away and
// purged since is still recognised when it is used again: refused, and
// its grant revoked with every token it issued.
func TestRefreshLoopLeavesBoundedRowsAndReuseStillRevokes(t *testing.T) {
	if testing.Short() {
		t.Skip("40 refresh rounds on every store, seconds; runs in make test")
	}
	const loops = 40
	for name, db := range grantStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			s := purgeServer(t, db, clk)
			abandoned := s.authorize(t, "") // never consented
			tok := s.exchange(t)
			refreshes := []string{tok.RefreshToken}
			accesses := []string{tok.AccessToken}
			for i := range loops {
				clk.add(time.Second)
				next := s.refresh(t, tok.RefreshToken)
				if next.status != http.StatusOK {
					t.Fatalf("refresh %d = %d %q", i, next.status, next.Error)
				}
				tok = next
				refreshes, accesses = append(refreshes, tok.RefreshToken), append(accesses, tok.AccessToken)
			}
			oauth.WaitForPurge(s.p)
			rows := `SELECT count(*) FROM oauth_tokens WHERE client_id = ` + placeholder(db)
			if n := countRows(t, db, rows, s.clientID); n != 2*(loops+1) {
				t.Fatalf("%d token rows before the purge, want %d: a purge ran within the hour", n, 2*(loops+1))
			}

			clk.add(2 * time.Hour) // the abandoned request expired over an hour ago
			tok = s.refresh(t, tok.RefreshToken)
			if tok.status != http.StatusOK {
				t.Fatalf("refresh two hours later = %d %q", tok.status, tok.Error)
			}
			refreshes, accesses = append(refreshes, tok.RefreshToken), append(accesses, tok.AccessToken)
			oauth.WaitForPurge(s.p) // the purge this refresh started
			if n, want := countRows(t, db, rows, s.clientID), 1+oauth.AccessTokensPerGrant; n != want {
				t.Fatalf("%d token rows after %d refreshes and a purge, want %d (the live refresh token and the newest access tokens)", n, loops+1, want)
			}
			if _, err := db.Request(ctx, abandoned.id); !errors.Is(err, identity.ErrNotFound) {
				t.Errorf("the abandoned authorization's request after the purge: %v", err)
			}

			// The newest access tokens work; an older one, still within its
			// lifetime, was dropped with the loop.
			if _, err := s.p.VerifyToken(ctx, accesses[len(accesses)-1]); err != nil {
				t.Fatalf("the newest access token after the purge: %v", err)
			}
			if _, err := s.p.VerifyToken(ctx, accesses[len(accesses)-oauth.AccessTokensPerGrant]); err != nil {
				t.Fatalf("the oldest kept access token: %v", err)
			}
			if _, err := s.p.VerifyToken(ctx, accesses[0]); !errors.Is(err, oauth.ErrInvalidToken) {
				t.Fatalf("an access token beyond the newest %d: %v, want invalid", oauth.AccessTokensPerGrant, err)
			}
			// Refreshing keeps working.
			tok = s.refresh(t, tok.RefreshToken)
			if tok.status != http.StatusOK {
				t.Fatalf("refresh after the purge = %d %q", tok.status, tok.Error)
			}
			if _, err := s.p.VerifyToken(ctx, tok.AccessToken); err != nil {
				t.Fatalf("the access token of the refresh after the purge: %v", err)
			}

			// A refresh token rotated away in the loop, its row purged, is
			// used again: it leaked, so it is refused and the grant goes.
			if got := s.refresh(t, refreshes[5]); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
				t.Fatalf("a purged rotated refresh token used again = %d %q, want 400 invalid_grant", got.status, got.Error)
			}
			if got := s.refresh(t, tok.RefreshToken); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
				t.Fatalf("the live refresh token after the reuse = %d %q, want the grant revoked", got.status, got.Error)
			}
			if _, err := s.p.VerifyToken(ctx, tok.AccessToken); !errors.Is(err, oauth.ErrInvalidToken) {
				t.Fatalf("the live access token after the reuse: %v, want refused", err)
			}
		})
	}
}

// placeholder is the first bind parameter in db's dialect.
func placeholder(db *store.DB) string {
	if db.Dialect() == store.Postgres {
		return "$1"
	}
	return "?"
}

// Hostile refresh tokens that name a grant without being ours — a MAC
// that does not verify, another grant's name on a real token, a bare
// grant id, pieces missing — are refused like any unknown token and
// revoke nothing: knowing a grant id does not let anyone end it.
func TestForgedGrantNamingRefreshTokensRevokeNothing(t *testing.T) {
	for name, db := range grantStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			s := purgeServer(t, db, clk)
			victim := s.exchange(t)
			other := s.exchange(t)
			vt, err := db.Token(ctx, identity.Hash(victim.RefreshToken))
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(other.RefreshToken, ".")
			if len(parts) != 3 || !vt.NamesGrant {
				t.Fatalf("a refresh token is %q (names its grant: %v), want random.grant.mac", other.RefreshToken, vt.NamesGrant)
			}
			for _, forged := range []string{
				parts[0] + "." + vt.GrantID + "." + parts[2],        // another grant's MAC
				"AAAA." + vt.GrantID + "." + parts[2],               // a random part of one's own
				parts[0] + "." + vt.GrantID + "." + parts[2] + "AA", // a longer MAC
				parts[0] + "." + vt.GrantID + ".",                   // none
				vt.GrantID,                                          // the grant id alone
				"." + vt.GrantID + ".",
				parts[0] + ".." + parts[2],
				strings.Repeat(".", 5000),
			} {
				if got := s.refresh(t, forged); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
					t.Fatalf("forged %q = %d %q, want 400 invalid_grant", forged, got.status, got.Error)
				}
			}
			if got := s.refresh(t, victim.RefreshToken); got.status != http.StatusOK {
				t.Fatalf("the victim's refresh after the forgeries = %d %q: a forged token revoked its grant", got.status, got.Error)
			}
		})
	}
}

// At /oauth/revoke a refresh token rotated away and purged since still
// ends its grant for its own client (RFC 7009: revoking a refresh token
// ends the grant), and another client cannot use it to.
func TestRevokingAPurgedRotatedRefreshTokenEndsItsGrant(t *testing.T) {
	for name, db := range grantStores(t) {
		t.Run(name, func(t *testing.T) {
			clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			s := purgeServer(t, db, clk)
			first := s.exchange(t)
			second := s.refresh(t, first.RefreshToken)
			clk.add(2 * time.Hour)
			live := s.refresh(t, second.RefreshToken) // starts a purge: first and second go
			oauth.WaitForPurge(s.p)
			if _, err := db.Token(context.Background(), identity.Hash(first.RefreshToken)); !errors.Is(err, identity.ErrNotFound) {
				t.Fatalf("the rotated refresh token after the purge: %v", err)
			}
			intruder := register(t, http.DefaultClient, s.base, "intruder")
			revoke := func(clientID string) int {
				t.Helper()
				resp, err := http.PostForm(s.base+"/oauth/revoke", url.Values{"token": {first.RefreshToken}, "client_id": {clientID}})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if st := revoke(intruder.ClientID); st == http.StatusOK {
				t.Fatal("another client's revocation of the token was accepted")
			}
			if got := s.refresh(t, live.RefreshToken); got.status != http.StatusOK {
				t.Fatalf("refresh after another client's revocation = %d %q, want the grant kept", got.status, got.Error)
			} else {
				live = got
			}
			if st := revoke(s.clientID); st != http.StatusOK {
				t.Fatalf("revocation by its client = %d", st)
			}
			if got := s.refresh(t, live.RefreshToken); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
				t.Fatalf("refresh after the revocation = %d %q, want the grant ended", got.status, got.Error)
			}
		})
	}
}
