package mcpremote_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

func startGrant(t *testing.T) *testserver.GrantServer {
	t.Helper()
	gs, stop, err := testserver.StartGrant("access-0", "refresh-0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return gs
}

// granted registers a server as authorized with gs's first tokens, its
// access token expiring at expiry.
func granted(gs *testserver.GrantServer, expiry time.Time) func(*mcpremote.Server, *mcpremote.Secrets) {
	return func(s *mcpremote.Server, sec *mcpremote.Secrets) {
		s.Auth = mcpremote.Auth{Type: mcpremote.AuthAuthorizationCode}
		sec.Grant = &mcpremote.Grant{ClientID: "toolhost", AuthURL: gs.URL(), TokenURL: gs.TokenURL(),
			AccessToken: "access-0", RefreshToken: "refresh-0", TokenType: "Bearer", Expiry: expiry}
	}
}

// storedGrant is the grant the store holds for srv.
func (r *rig) storedGrant(srv mcpremote.Server) *mcpremote.Grant {
	r.t.Helper()
	sec, err := r.seal.Open(srv.AccountID, srv.ID, r.stored(srv).Sealed)
	if err != nil || sec.Grant == nil {
		r.t.Fatalf("no stored grant: %v", err)
	}
	return sec.Grant
}

// refreshOpts are the options of a gateway whose expiries run on clock
// and whose n calls to one server all run at once.
func refreshOpts(clock *clock) mcpremote.Options {
	return mcpremote.Options{Now: clock.now, TTL: 24 * time.Hour, MaxConcurrent: 32}
}

// expiredCalls starts n calls of tool on each rig and waits until every
// one of them found its access token expired, while gs holds the first
// token request; then it releases it and returns the calls' outcomes.
func expiredCalls(t *testing.T, gs *testserver.GrantServer, rigs []*rig, n int, tool string) []*tools.Outcome {
	t.Helper()
	arrived := make(chan struct{}, 4*n*len(rigs))
	for _, r := range rigs {
		mcpremote.OnTokenExpired(r.gw, func() {
			select {
			case arrived <- struct{}{}:
			default:
			}
		})
	}
	held, release := gs.Hold()
	defer release()
	outs := make([]*tools.Outcome, n*len(rigs))
	errs := make([]error, len(outs))
	var wg sync.WaitGroup
	for i := range outs {
		r := rigs[i%len(rigs)]
		wg.Go(func() {
			outs[i], errs[i] = r.exec.Execute(context.Background(), tools.Proposal{Tool: tool, Args: json.RawMessage(`{"message":"hi"}`),
				Caller: tools.Caller{SessionID: "sess_1", Face: "mcp", Identity: identity.Identity{AccountID: "acct_a"}}})
		})
	}
	// The deadline only ends a test that would otherwise hang.
	deadline := time.After(30 * time.Second)
	for i := range outs {
		select {
		case <-arrived:
		case <-deadline:
			release()
			t.Fatalf("only %d of %d calls found their token expired", i, len(outs))
		}
	}
	select {
	case <-held:
	case <-deadline:
		t.Fatal("no token request arrived")
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	return outs
}

// wantOneRefresh: every call succeeded on one refresh, the grant is not
// revoked, and the store holds the rotated tokens.
func wantOneRefresh(t *testing.T, gs *testserver.GrantServer, r *rig, srv mcpremote.Server, outs []*tools.Outcome) {
	t.Helper()
	for i, out := range outs {
		if out.IsError {
			t.Fatalf("call %d: %+v", i, out)
		}
	}
	if n := gs.Requests(); n != 1 || gs.Revoked() {
		t.Fatalf("%d token requests (revoked: %v), want 1 refresh", n, gs.Revoked())
	}
	if gr := r.storedGrant(srv); gr.RefreshToken != gs.RefreshToken() || gr.AccessToken != "access-1" {
		t.Fatalf("stored grant: access %q refresh %q, want access-1 and %q", gr.AccessToken, gr.RefreshToken, gs.RefreshToken())
	}
}

// TestExpiredGrantIsRefreshedOnce: 20 calls that find the access token
// of a live session expired at the same moment share one refresh; the
// authorization server, which revokes the grant when a refresh token
// comes twice, sees one token request, and every call succeeds.
func TestExpiredGrantIsRefreshedOnce(t *testing.T) {
	gs := startGrant(t)
	clock := newClock()
	r := newRig(t, refreshOpts(clock))
	srv := r.register("acct_a", "granted", gs.URL(), granted(gs, clock.now().Add(time.Hour)))
	if out := r.call("acct_a", "granted__echo", `{"message":"hi"}`); out.IsError {
		t.Fatalf("call with the valid token: %+v", out)
	}
	clock.advance(2 * time.Hour)
	outs := expiredCalls(t, gs, []*rig{r}, 20, "granted__echo")
	wantOneRefresh(t, gs, r, srv, outs)
}

// TestExpiredGrantIsRefreshedOnceAcrossReplicas: two gateways on one
// store (two opens of one SQLite file; two pools on one PostgreSQL
// schema), each with a live session whose access token expired, and ten
// calls on each at the same moment: the first refresh holds the store's
// lock of the server's secrets, the other gateway finds the grant
// refreshed once it gets the lock, and uses it.
func TestExpiredGrantIsRefreshedOnceAcrossReplicas(t *testing.T) {
	for name, dbs := range storetest.Replicas(t, "mcpgateway_refresh") {
		t.Run(name, func(t *testing.T) {
			gs := startGrant(t)
			clock := newClock()
			a := newRigOn(t, refreshOpts(clock), dbs[0])
			b := newRigOn(t, refreshOpts(clock), dbs[1])
			srv := a.register("acct_a", "granted", gs.URL(), granted(gs, clock.now().Add(time.Hour)))
			for _, r := range []*rig{a, b} {
				if out := r.call("acct_a", "granted__echo", `{"message":"hi"}`); out.IsError {
					t.Fatalf("call with the valid token: %+v", out)
				}
			}
			clock.advance(2 * time.Hour)
			outs := expiredCalls(t, gs, []*rig{a, b}, 10, "granted__echo")
			wantOneRefresh(t, gs, a, srv, outs)
		})
	}
}

// TestALinkOfAServerReadBeforeARefreshUsesTheRefreshedGrant: a server
// read before its grant was refreshed (a list cached or read before the
// refresh, a call's server, a link made again after Forget) carries the
// old tokens sealed; its new link finds them expired, reads the stored
// grant again in the store's lock and uses the refreshed token instead
// of sending the used refresh token again (which revokes the grant).
func TestALinkOfAServerReadBeforeARefreshUsesTheRefreshedGrant(t *testing.T) {
	gs := startGrant(t)
	clock := newClock()
	r := newRig(t, refreshOpts(clock))
	srv := r.register("acct_a", "granted", gs.URL(), granted(gs, clock.now().Add(-time.Minute)))
	before := r.stored(srv)
	if out := r.call("acct_a", "granted__echo", `{"message":"hi"}`); out.IsError {
		t.Fatalf("call after the refresh: %+v", out)
	}
	r.gw.Forget(srv.ID)
	if st, err := r.gw.Refresh(context.Background(), before); err != nil || st.Source != mcpremote.SourceLive {
		t.Fatalf("a link of the server read before the refresh: %+v, %v", st, err)
	}
	wantOneRefresh(t, gs, r, srv, nil)
}
