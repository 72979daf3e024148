package mcpremote_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// grantExpiry is the expiry of the stored access token of srv.
func (r *rig) grantExpiry(srv mcpremote.Server) time.Time {
	r.t.Helper()
	s := r.stored(srv)
	sec, err := r.seal.Open(s.AccountID, s.ID, s.Sealed)
	if err != nil || sec.Grant == nil {
		r.t.Fatalf("no grant: %v", err)
	}
	return sec.Grant.Expiry
}

// near reports whether got is within a second of want.
func near(got, want time.Time) bool { d := got.Sub(want); return d > -time.Second && d < time.Second }

// An authorized server's access token (expires_in 3600) expires on the
// gateway's clock, not the wall clock: it is stored with its expiry on
// that clock, used until ten seconds before it, then refreshed.
func TestAuthorizedServerTokenExpiresOnTheGatewayClock(t *testing.T) {
	as := startAuthServer(t)
	clk := newClock() // in 2027, whatever today is
	r := newRig(t, mcpremote.Options{Now: clk.now})
	srv := r.register("acct_a", "consent", as.URL(), authCodeServer)
	ctx := context.Background()
	authURL, err := r.gw.Authorize(ctx, srv, "http://127.0.0.1:9/mcp-servers/oauth/callback")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	if _, _, err := r.gw.Complete(ctx, u.Query().Get("state"), "code-1", ""); err != nil {
		t.Fatal(err)
	}
	if got, want := r.grantExpiry(srv), clk.now().Add(time.Hour); !near(got, want) {
		t.Fatalf("stored expiry %v, want %v (an hour on the gateway's clock)", got, want)
	}
	grants := func() int { return len(as.TokenForms()) }
	call := func(when string) {
		t.Helper()
		if out := r.call("acct_a", "consent__echo", `{"message":"hi"}`); out.IsError {
			t.Fatalf("call %s: %+v", when, out)
		}
	}
	clk.advance(time.Hour - 11*time.Second)
	call("11 s before the expiry")
	if n := grants(); n != 1 {
		t.Fatalf("%d token requests 11 s before the expiry, want only the code exchange", n)
	}
	as.IssueJWT(as.URL()) // a new token, which the refresh stores
	clk.advance(2 * time.Second)
	call("9 s before the expiry")
	if f := as.TokenForms(); len(f) != 2 || f[1].Get("grant_type") != "refresh_token" {
		t.Fatalf("token requests 9 s before the expiry: %v, want a refresh", f)
	}
	if got, want := r.grantExpiry(srv), clk.now().Add(time.Hour); !near(got, want) {
		t.Fatalf("stored expiry after the refresh %v, want %v", got, want)
	}
}

// A client-credentials token is reused until ten seconds before it
// expires on the gateway's clock, then fetched again.
func TestClientCredentialsTokenExpiresOnTheGatewayClock(t *testing.T) {
	up := startUpstream(t, false)
	up.ts.Auth = "Bearer cc-token"
	var fetched atomic.Int64
	tokenLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tokenSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"cc-token","token_type":"Bearer","expires_in":3600}`))
	})}
	go func() { _ = tokenSrv.Serve(tokenLn) }()
	t.Cleanup(func() { tokenSrv.Close() })
	clk := newClock()
	r := newRig(t, mcpremote.Options{Now: clk.now})
	r.register("acct_a", "demo", up.url(), func(s *mcpremote.Server, sec *mcpremote.Secrets) {
		s.Auth = mcpremote.Auth{Type: mcpremote.AuthClientCredentials, TokenURL: "http://" + tokenLn.Addr().String() + "/token", ClientID: "toolhost"}
		sec.ClientSecret = "cc-secret"
	})
	for _, step := range []struct {
		advance time.Duration
		fetched int64
	}{
		{0, 1},
		{time.Hour - 11*time.Second, 1},
		{2 * time.Second, 2},
	} {
		clk.advance(step.advance)
		if out := r.call("acct_a", "demo__echo", `{"message":"hi"}`); out.IsError {
			t.Fatalf("call %v later: %+v", step.advance, out)
		}
		if n := fetched.Load(); n != step.fetched {
			t.Fatalf("after %v more: %d tokens fetched, want %d", step.advance, n, step.fetched)
		}
	}
}
