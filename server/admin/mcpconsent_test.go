package admin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// clock is a settable clock shared by the replicas of a test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// replica is one process's /mcp-servers routes (its own gateway, so its
// own memory) on the shared store st, under the shared server key.
func replica(t *testing.T, st mcpremote.Store, now func() time.Time) *httptest.Server {
	t.Helper()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	allow := []string{"127.0.0.1"}
	dial, err := egress.DialContext(allow, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: seal, Dial: dial, ProbeTimeout: 5 * time.Second, Now: now})
	t.Cleanup(gw.Close)
	m := &admin.MCPServers{Store: st, Sealer: seal, Gateway: gw, Now: now,
		CheckHost: func(ctx context.Context, host string) error { return egress.CheckHost(ctx, allow, host) },
		Account:   accountHeader, CallbackURL: "http://127.0.0.1/mcp-servers/oauth/callback"}
	routes := m.Routes()
	for p, h := range m.CallbackRoutes() {
		routes[p] = h
	}
	return tenantServer(t, routes)
}

// authorizeOn starts the consent on srv and returns the authorization
// URL's state and PKCE challenge.
func authorizeOn(t *testing.T, srv *httptest.Server, id string) (state, challenge string) {
	t.Helper()
	do(t, srv, call{method: "POST", path: "/mcp-servers/" + id + "/authorize", account: "acct_a", status: 200,
		check: func(t *testing.T, d map[string]any) {
			u, err := url.Parse(fmt.Sprint(d["authorization_url"]))
			if err != nil {
				t.Fatal(err)
			}
			state, challenge = u.Query().Get("state"), u.Query().Get("code_challenge")
		}})
	if state == "" || challenge == "" {
		t.Fatalf("authorization URL without state or challenge: %q %q", state, challenge)
	}
	return state, challenge
}

func callback(state string) string {
	return admin.CallbackPath + "?code=code-1&state=" + url.QueryEscape(state)
}

// TestMCPServerConsentFinishesOnAnyReplica: an authorization started on
// one replica finishes on another sharing the store (the PKCE verifier of
// the first is the one the token request carries), once: a replayed
// state, a state raced by two callbacks, a state of a restarted consent
// and an expired state are unknown_state; hostile states find nothing and
// leave the pending authorization usable.
func TestMCPServerConsentFinishesOnAnyReplica(t *testing.T) {
	for name, st := range mcpStores(t) {
		t.Run(name, func(t *testing.T) {
			as, stop, err := testserver.StartAuth()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			clk := &clock{t: time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)}
			a, b := replica(t, st, clk.now), replica(t, st, clk.now)
			var id string
			do(t, a, call{method: "POST", path: "/mcp-servers", account: "acct_a", status: 201,
				body:  `{"name":"consent","url":"` + as.URL() + `","auth":{"type":"oauth_authorization_code"}}`,
				check: func(t *testing.T, d map[string]any) { id, _ = d["id"].(string) }})

			state, challenge := authorizeOn(t, a, id)
			for _, hostile := range hostileStates(state) {
				do(t, b, call{method: "GET", path: callback(hostile), status: 400, code: "unknown_state"})
			}
			do(t, b, call{method: "GET", path: "/mcp-servers/oauth/callback?code=c&state=" + strings.Repeat("s", 1025), status: 400, code: "validation_error"})
			do(t, b, call{method: "GET", path: callback(state), status: 200, check: func(t *testing.T, d map[string]any) {
				if auth := d["auth"].(map[string]any); auth["authorized"] != true {
					t.Fatalf("after the callback on the other replica: auth %v", auth)
				}
			}})
			forms := as.TokenForms()
			if len(forms) != 1 || s256(forms[0].Get("code_verifier")) != challenge {
				t.Fatalf("the token request does not carry the verifier of the challenge %q: %v", challenge, forms)
			}
			for _, srv := range []*httptest.Server{a, b} {
				do(t, srv, call{method: "GET", path: callback(state), status: 400, code: "unknown_state"})
			}

			// A consent started again ends the one before, on any replica.
			old, _ := authorizeOn(t, a, id)
			raced, _ := authorizeOn(t, b, id)
			do(t, a, call{method: "GET", path: callback(old), status: 400, code: "unknown_state"})

			// Two callbacks with one state: one finishes, one is refused.
			statuses := make(chan int, 2)
			var wg sync.WaitGroup
			for _, srv := range []*httptest.Server{a, b} {
				wg.Go(func() {
					resp, err := http.Get(srv.URL + callback(raced))
					if err != nil {
						t.Error(err)
						statuses <- 0
						return
					}
					resp.Body.Close()
					statuses <- resp.StatusCode
				})
			}
			wg.Wait()
			close(statuses)
			got := map[int]int{}
			for s := range statuses {
				got[s]++
			}
			if got[200] != 1 || got[400] != 1 || len(as.TokenForms()) != 2 {
				t.Fatalf("raced callbacks: statuses %v, %d code exchanges (want one 200, one 400, 2 exchanges in all)", got, len(as.TokenForms()))
			}

			expired, _ := authorizeOn(t, a, id)
			clk.add(mcpremote.AuthorizeTimeout)
			do(t, b, call{method: "GET", path: callback(expired), status: 400, code: "unknown_state"})
			if n := len(as.TokenForms()); n != 2 {
				t.Fatalf("%d code exchanges after the refused callbacks, want 2", n)
			}
		})
	}
}

// hostileStates are callbacks' states that must find nothing: near
// misses of the real one, injections, odd bytes and sizes.
func hostileStates(state string) []string {
	flip := []byte(state)
	flip[0] ^= 0x20 // the other case of a letter, another digit or sign
	return []string{
		state + "x", state[:len(state)-1], string(flip), " " + state, state + "\x00",
		"' OR '1'='1", "%", "*", `\`, "\x00", "\u202e" + state, "ﬀ", strings.Repeat("é", 512),
		strings.Repeat("s", 1024), strings.Repeat("\U0001F600", 256),
	}
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
