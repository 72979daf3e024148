package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// mcpStores are the stores the /mcp-servers tests run on.
func mcpStores(t *testing.T) map[string]mcpremote.Store {
	out := map[string]mcpremote.Store{"memory": mcpremote.NewMemStore()}
	for name, db := range sqlStores(t) {
		out[name] = db
	}
	return out
}

func mcpUpstream(t *testing.T) string {
	t.Helper()
	u, _ := mcpCountingUpstream(t)
	return u
}

// mcpCountingUpstream is the test server, counting the sessions opened
// on it (initialize requests).
func mcpCountingUpstream(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inits := &atomic.Int64{}
	h := testserver.New(false).Handler()
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"method":"initialize"`) {
				inits.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp", inits
}

// A server's version (UpdatedAt) read back from the store is the one its
// write used: the session the first listing opened serves every later
// use, and only a change of the server opens another. (Written at
// nanoseconds, the server compared unequal to itself read back from SQLite
// or PostgreSQL, and the next use dropped the session and dialed again.)
func TestMCPServersKeepTheirSessionUntilChanged(t *testing.T) {
	for name, st := range mcpStores(t) {
		t.Run(name, func(t *testing.T) {
			upURL, inits := mcpCountingUpstream(t)
			srv := tenantServer(t, mcpServersRoutes(t, st, []string{"127.0.0.1"}))
			var id string
			do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_a", body: `{"name":"demo","url":"` + upURL + `"}`, status: 201,
				check: func(t *testing.T, d map[string]any) { id, _ = d["id"].(string) }})
			refresh := call{method: "POST", path: "/mcp-servers/" + id + "/refresh", account: "acct_a", status: 200}
			for _, step := range []struct {
				c     call
				inits int64
			}{
				{c: refresh, inits: 1},
				{c: refresh, inits: 1},
				{c: call{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{"timeout":"3s"}`, status: 200}, inits: 2},
				// Two writes in one millisecond are two versions all the same.
				{c: call{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{"timeout":"4s"}`, status: 200}, inits: 3},
				{c: refresh, inits: 3},
			} {
				do(t, srv, step.c)
				if got := inits.Load(); got != step.inits {
					t.Fatalf("after %s %s: %d sessions opened on the server, want %d", step.c.method, step.c.path, got, step.inits)
				}
			}
		})
	}
}

func mcpServersRoutes(t *testing.T, st mcpremote.Store, allow []string) map[string]http.Handler {
	t.Helper()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	dial, err := egress.DialContext(allow, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: seal, Dial: dial, ProbeTimeout: 2 * time.Second})
	t.Cleanup(gw.Close)
	m := &admin.MCPServers{Store: st, Sealer: seal, Gateway: gw, Rules: mcpremote.Rules{Slots: []string{"narrator"}},
		CheckHost: func(ctx context.Context, host string) error { return egress.CheckHost(ctx, allow, host) },
		Account:   accountHeader, CallbackURL: "http://127.0.0.1/mcp-servers/oauth/callback"}
	routes := m.Routes()
	for p, h := range m.CallbackRoutes() {
		routes[p] = h
	}
	return routes
}

func TestMCPServersRegistration(t *testing.T) {
	upURL := mcpUpstream(t)
	for name, st := range mcpStores(t) {
		t.Run(name, func(t *testing.T) {
			srv := tenantServer(t, mcpServersRoutes(t, st, []string{"127.0.0.1"}))
			body := `{"name":"demo","url":"` + upURL + `","headers":{"x-api-key":"hunter2"},"auth":{"type":"bearer","token":"s3cret"},"timeout":"5s",
				"tools":{"write":{"side_effect_level":"none","allowed_slots":["narrator"]}}}`
			var id string
			do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_a", body: body, status: 201, check: func(t *testing.T, d map[string]any) {
				id, _ = d["id"].(string)
				cat := d["catalog"].(map[string]any)
				if cat["catalog_source"] != "live" || !strings.Contains(strings.Join(anyStrings(cat["tools"]), ","), "echo") {
					t.Fatalf("first listing: %v", cat)
				}
				auth := d["auth"].(map[string]any)
				if auth["type"] != "bearer" || auth["token_set"] != true || d["headers"].(map[string]any)["X-Api-Key"] != "[redacted]" || d["timeout"] != "5s" {
					t.Fatalf("view: %v", d)
				}
			}})
			raw := rawGet(t, srv.URL+"/mcp-servers", "acct_a")
			if strings.Contains(raw, "hunter2") || strings.Contains(raw, "s3cret") {
				t.Fatalf("a secret in a response: %s", raw)
			}
			if !strings.Contains(raw, `"demo"`) || !strings.Contains(raw, `"echo"`) {
				t.Fatalf("list: %s", raw)
			}
			calls := []call{
				{method: "POST", path: "/mcp-servers", account: "acct_a", body: body, status: 409, code: "mcp_server_conflict"},
				// Another account may use the name; it sees none of acct_a's.
				{method: "GET", path: "/mcp-servers/" + id, account: "acct_b", status: 404, code: "not_found"},
				{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_b", body: `{"enabled":false}`, status: 404, code: "not_found"},
				{method: "POST", path: "/mcp-servers/" + id + "/refresh", account: "acct_b", status: 404, code: "not_found"},
				{method: "DELETE", path: "/mcp-servers/" + id, account: "acct_b", status: 404, code: "not_found"},
				{method: "POST", path: "/mcp-servers", account: "acct_b", body: `{"name":"demo","url":"` + upURL + `"}`, status: 201},
				{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{"name":"a__b"}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{"enabled":false,"enabled":true}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{"timeout":"2s"}`, status: 200, check: func(t *testing.T, d map[string]any) {
					if d["timeout"] != "2s" || d["auth"].(map[string]any)["token_set"] != true {
						t.Fatalf("patch keeps the secrets: %v", d)
					}
				}},
				{method: "POST", path: "/mcp-servers/" + id + "/refresh", account: "acct_a", status: 200, check: func(t *testing.T, d map[string]any) {
					if d["catalog"].(map[string]any)["catalog_source"] != "live" {
						t.Fatalf("refresh: %v", d)
					}
				}},
				{method: "PATCH", path: "/mcp-servers/" + id, account: "acct_a", body: `{"enabled":false}`, status: 200},
				{method: "POST", path: "/mcp-servers/" + id + "/refresh", account: "acct_a", status: 409, code: "mcp_server_disabled"},
				{method: "DELETE", path: "/mcp-servers/" + id, account: "acct_a", status: 200},
				{method: "GET", path: "/mcp-servers/" + id, account: "acct_a", status: 404, code: "not_found"},
			}
			for _, c := range calls {
				do(t, srv, c)
			}
			// The secrets are sealed in the store.
			if ss, _ := st.ListMCPServers(context.Background(), "acct_b"); len(ss) != 1 || len(ss[0].Sealed) != 0 {
				t.Fatalf("acct_b: %+v", ss)
			}
		})
	}
}

func TestMCPServersRefusesBadInput(t *testing.T) {
	srv := tenantServer(t, mcpServersRoutes(t, mcpremote.NewMemStore(), nil))
	tests := []struct{ name, body, code string }{
		{"loopback without allow_private", `{"name":"a","url":"http://127.0.0.1:9/mcp"}`, "url_not_allowed"},
		{"localhost", `{"name":"a","url":"http://localhost:9/mcp"}`, "url_not_allowed"},
		{"cloud metadata", `{"name":"a","url":"http://169.254.169.254/latest"}`, "url_not_allowed"},
		{"decimal loopback", `{"name":"a","url":"http://2130706433/mcp"}`, "url_not_allowed"},
		{"mapped IPv6", `{"name":"a","url":"http://[::ffff:10.0.0.1]/mcp"}`, "url_not_allowed"},
		{"private token endpoint", `{"name":"a","url":"https://93.184.215.14/mcp","auth":{"type":"oauth_client_credentials","token_url":"http://10.0.0.1/token","client_id":"c","client_secret":"s"}}`, "url_not_allowed"},
		{"user consent with a token", `{"name":"a","url":"https://93.184.215.14/mcp","auth":{"type":"oauth_authorization_code","token":"t"}}`, "validation_error"},
		{"unknown field", `{"name":"a","url":"https://93.184.215.14/mcp","secret":"x"}`, "validation_error"},
		{"not an object", `["a"]`, "validation_error"},
		{"huge body", `{"name":"a","url":"https://93.184.215.14/mcp","headers":{"X-A":"` + strings.Repeat("a", 300<<10) + `"}}`, "validation_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_a", body: tc.body, status: 400, code: tc.code})
		})
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func rawGet(t *testing.T, url, account string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Account", account)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

// The consent flow itself runs against the MCP conformance suite's
// authorization servers (e2e/mcp-client-conformance.test.mjs); here the
// refusals around it.
func TestMCPServersAuthorizationCodeRefusals(t *testing.T) {
	upURL := mcpUpstream(t)
	srv := tenantServer(t, mcpServersRoutes(t, mcpremote.NewMemStore(), []string{"127.0.0.1"}))
	var id, bearerID string
	do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_a", status: 201,
		body: `{"name":"consent","url":"` + upURL + `","auth":{"type":"oauth_authorization_code","client_id":"c","client_secret":"s3cret"}}`,
		check: func(t *testing.T, d map[string]any) {
			id, _ = d["id"].(string)
			cat := d["catalog"].(map[string]any)
			if cat["catalog_source"] != "unavailable" || !strings.Contains(fmt.Sprint(cat["error"]), "authorization") {
				t.Fatalf("before consent the catalog is unavailable with the reason: %v", cat)
			}
			auth := d["auth"].(map[string]any)
			if auth["authorized"] != false || auth["client_id"] != "c" || auth["client_secret_set"] != true {
				t.Fatalf("auth view: %v", auth)
			}
		}})
	do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_a", status: 201,
		body:  `{"name":"plain","url":"` + upURL + `","auth":{"type":"bearer","token":"t"}}`,
		check: func(t *testing.T, d map[string]any) { bearerID, _ = d["id"].(string) }})
	if raw := rawGet(t, srv.URL+"/mcp-servers", "acct_a"); strings.Contains(raw, "s3cret") {
		t.Fatalf("the client secret is in a response: %s", raw)
	}
	tests := []struct {
		name, method, path, account string
		status                      int
		code                        string
	}{
		{"another account's server", "POST", "/mcp-servers/" + id + "/authorize", "acct_b", 404, "not_found"},
		{"a bearer server", "POST", "/mcp-servers/" + bearerID + "/authorize", "acct_a", 409, "not_authorization_code"},
		// The test server answers without a 401: nothing to consent to.
		{"a server that asks for nothing", "POST", "/mcp-servers/" + id + "/authorize", "acct_a", 409, "authorization_not_needed"},
		{"a forged state", "GET", "/mcp-servers/oauth/callback?code=c&state=forged", "", 400, "unknown_state"},
		{"no state", "GET", "/mcp-servers/oauth/callback?code=c", "", 400, "validation_error"},
		{"a huge code", "GET", "/mcp-servers/oauth/callback?state=s&code=" + strings.Repeat("c", 5000), "", 400, "validation_error"},
		{"a refusal", "GET", "/mcp-servers/oauth/callback?error=access_denied&state=s", "", 400, "authorization_denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			do(t, srv, call{method: tc.method, path: tc.path, account: tc.account, status: tc.status, code: tc.code})
		})
	}
}

// An authorization server that answers too much or too slowly gets the
// authorization refused with a code saying which, and the stored server
// (its secrets, its updated_at) stays as it was.
func TestMCPServersAuthorizeRefusesHostileAuthorizationServers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out slow hostile servers' timeouts, seconds; runs in make test")
	}
	tests := []struct {
		endpoint, how string
		status        int
		code          string
	}{
		{testserver.EndpointResourceMetadata, testserver.Huge, 502, mcpremote.CodeAuthResponseTooLarge},
		{testserver.EndpointServerMetadata, testserver.Drip, 504, mcpremote.CodeAuthServerTimeout},
		{testserver.EndpointRegister, testserver.HugeDeclared, 502, mcpremote.CodeAuthResponseTooLarge},
		{"", "", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.endpoint+" "+tc.how, func(t *testing.T) {
			as, stop, err := testserver.StartAuth()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			st := mcpremote.NewMemStore()
			srv := tenantServer(t, mcpServersRoutes(t, st, []string{"127.0.0.1"}))
			var id string
			do(t, srv, call{method: "POST", path: "/mcp-servers", account: "acct_a", status: 201,
				body:  `{"name":"consent","url":"` + as.URL() + `","auth":{"type":"oauth_authorization_code"}}`,
				check: func(t *testing.T, d map[string]any) { id, _ = d["id"].(string) }})
			before, err := st.GetMCPServer(context.Background(), "acct_a", id)
			if err != nil {
				t.Fatal(err)
			}
			as.SetHostile(tc.endpoint, tc.how)
			do(t, srv, call{method: "POST", path: "/mcp-servers/" + id + "/authorize", account: "acct_a", status: tc.status, code: tc.code,
				check: func(t *testing.T, d map[string]any) {
					if !strings.HasPrefix(fmt.Sprint(d["authorization_url"]), as.Base()+"/authorize?") {
						t.Fatalf("authorization_url = %v", d["authorization_url"])
					}
				}})
			after, err := st.GetMCPServer(context.Background(), "acct_a", id)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before.Sealed, after.Sealed) || !before.UpdatedAt.Equal(after.UpdatedAt) {
				t.Fatal("a refused authorization changed the stored server")
			}
		})
	}
}
