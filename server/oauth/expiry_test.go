package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/server/oauth"
)

// A registration purges the expired clients in the background, at most
// once an hour: a client registered and never used goes after
// UnauthorizedClientTTL, while one that started an authorization just
// before is kept and completes it (consent, code exchange, refresh); one
// that expires within the hour after a purge waits for the next one.
func TestRegistrationsPurgeExpiredClientsButNotOneMidAuthorization(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clk := newClock(t0)
	ks := keys.New(keys.Options{Store: db, Now: clk.now})
	t.Cleanup(ks.Close)
	_, secret, err := ks.CreateKey(ctx, "acme", "laptop", []string{"mcp"}, keys.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var p *oauth.Provider
	base := provider(t, oauth.Options{Store: db, Keys: ks, KeyStore: db, Now: clk.now, UnauthorizedClientTTL: 24 * time.Hour}, &p)
	reg := func(name string) string {
		t.Helper()
		a := register(t, http.DefaultClient, base, name)
		if a.status != http.StatusCreated {
			t.Fatalf("register %s = %+v", name, a)
		}
		oauth.WaitForPurge(p) // the purge this registration started, if any
		return a.ClientID
	}
	exists := func(db *store.DB, id string) bool {
		t.Helper()
		_, err := db.Client(ctx, id)
		if err != nil && !errors.Is(err, identity.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	stale := reg("never used")           // t0, and the first purge (nothing expired)
	mid := reg("authorizes a day later") // t0
	clk.add(90 * time.Minute)
	later := reg("registered 90 minutes later") // a purge: an hour has passed; nothing expired yet
	if !exists(db, stale) || !exists(db, mid) {
		t.Fatal("a client was purged before it expired")
	}

	clk.add(25*time.Hour - 90*time.Minute) // t0 + 25 h
	s := &authServer{base: base, clientID: mid, apiKey: secret, p: p}
	pending := s.authorize(t, "") // the consent page is shown
	reg("trigger 1")              // a purge
	if exists(db, stale) {
		t.Error("a client unused for 25 hours was kept")
	}
	if !exists(db, mid) || !exists(db, later) {
		t.Fatalf("purged a client mid-authorization (%v) or one used 23.5 hours ago (%v)", !exists(db, mid), !exists(db, later))
	}
	code, verifier := pending.approve(t)
	tok := s.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {clientRedir}})
	if tok.status != http.StatusOK || tok.RefreshToken == "" {
		t.Fatalf("the code exchange after the purge = %d %q", tok.status, tok.Error)
	}

	clk.add(40 * time.Minute) // `later` has expired, but the last purge is 40 minutes old
	reg("trigger 2")
	if !exists(db, later) {
		t.Fatal("a second purge ran within the hour")
	}
	clk.add(21 * time.Minute)
	reg("trigger 3")
	if exists(db, later) {
		t.Error("the purge an hour later kept an expired client")
	}
	// The authorized client stays: it holds valid tokens, and refreshes.
	if ref := s.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}); ref.status != http.StatusOK {
		t.Fatalf("refresh after the purges = %d %q", ref.status, ref.Error)
	}
	if !exists(db, mid) {
		t.Fatal("the authorized client was purged")
	}
}

// Close stops purging: a registration after it starts none.
func TestProviderClosedPurgesNoMore(t *testing.T) {
	db := openStore(t)
	clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	var p *oauth.Provider
	base := provider(t, oauth.Options{Store: db, Now: clk.now}, &p)
	old := register(t, http.DefaultClient, base, "old")
	oauth.WaitForPurge(p)
	p.Close()
	clk.add(48 * time.Hour)
	if a := register(t, http.DefaultClient, base, "after close"); a.status != http.StatusCreated {
		t.Fatalf("register = %+v", a)
	}
	oauth.WaitForPurge(p)
	if _, err := db.Client(context.Background(), old.ClientID); err != nil {
		t.Fatalf("a purge ran after Close: %v", err)
	}
}

// A purged client's id is refused like one never registered:
// /oauth/authorize shows an error page (no redirect), and the token
// endpoint gives the same 401 invalid_client answer (RFC 6749 §5.2), on
// which the client registers again.
func TestPurgedClientIsRefusedLikeAnUnknownOne(t *testing.T) {
	db := openStore(t)
	clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	var p *oauth.Provider
	base := provider(t, oauth.Options{Store: db, Now: clk.now}, &p)
	gone := register(t, http.DefaultClient, base, "gone").ClientID
	oauth.WaitForPurge(p)
	clk.add(25 * time.Hour)
	register(t, http.DefaultClient, base, "trigger")
	oauth.WaitForPurge(p)
	var answers []string
	for _, id := range []string{gone, "client_never_registered"} {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		q := url.Values{"client_id": {id}, "response_type": {"code"}, "redirect_uri": {clientRedir}, "scope": {"mcp"},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "state": {"st"}}
		resp, err := c.Get(base + "/oauth/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.Header.Get("Location") != "" {
			t.Errorf("authorize with %s = %d, Location %q; want an error page", id, resp.StatusCode, resp.Header.Get("Location"))
		}
		tok, err := http.PostForm(base+"/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {id},
			"code_verifier": {"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"}, "redirect_uri": {clientRedir}})
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(tok.Body).Decode(&a)
		tok.Body.Close()
		if tok.StatusCode != http.StatusUnauthorized || a.Error != "invalid_client" {
			t.Errorf("token with %s = %d %q, want 401 invalid_client", id, tok.StatusCode, a.Error)
		}
		answers = append(answers, a.Error)
	}
	if answers[0] != answers[1] {
		t.Errorf("the token endpoint tells a purged client (%q) from an unknown one (%q)", answers[0], answers[1])
	}
}
