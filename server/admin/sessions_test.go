package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
)

// sessionStores are the three session stores every handler test runs on.
func sessionStores(t *testing.T) map[string]session.Store {
	out := map[string]session.Store{"memory": session.NewMemStore()}
	for name, db := range sqlStores(t) {
		out[name] = db
	}
	return out
}

// tenantServer serves h with the account taken from the X-Account header,
// standing in for the key auth that sets it in the binary.
func tenantServer(t *testing.T, routes map[string]http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func accountHeader(r *http.Request) string {
	if a := r.Header.Get("X-Account"); a != "" {
		return a
	}
	return "local"
}

type call struct {
	method, path, account, body string
	status                      int
	code                        string // error code, or "" for success
	check                       func(t *testing.T, data map[string]any)
}

func do(t *testing.T, srv *httptest.Server, c call) map[string]any {
	t.Helper()
	req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.account != "" {
		req.Header.Set("X-Account", c.account)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("%s %s: body %q: %v", c.method, c.path, raw, err)
	}
	if resp.StatusCode != c.status {
		t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, resp.StatusCode, c.status, raw)
	}
	if c.code != "" {
		e, _ := b["error"].(map[string]any)
		if e == nil || e["code"] != c.code || e["message"] == "" {
			t.Fatalf("%s %s: error %s, want code %s", c.method, c.path, raw, c.code)
		}
		return e
	}
	data, _ := b["data"].(map[string]any)
	if c.check != nil {
		c.check(t, data)
	}
	return data
}

func TestSessionRoutes(t *testing.T) {
	at := time.UnixMilli(1_735_689_600_000)
	for name, st := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			srv := tenantServer(t, (&admin.Sessions{Store: st, Account: accountHeader, Now: func() time.Time { return at }}).Routes())
			huge := `{"metadata":{"x":"` + strings.Repeat("a", admin.MaxBodyBytes) + `"}}`
			calls := []call{
				{method: "POST", path: "/sessions", body: `{}`, status: 201, check: func(t *testing.T, d map[string]any) {
					if id, _ := d["id"].(string); !strings.HasPrefix(id, "sess_") || d["created_at"] != float64(at.UnixMilli()) {
						t.Errorf("generated session: %v", d)
					}
				}},
				{method: "POST", path: "/sessions", body: `{"id":"sess_001","metadata":{"story":"数据"}}`, status: 201, check: func(t *testing.T, d map[string]any) {
					md, _ := d["metadata"].(map[string]any)
					if d["id"] != "sess_001" || md["story"] != "数据" {
						t.Errorf("session: %v", d)
					}
				}},
				{method: "POST", path: "/sessions", body: `{"id":"sess_001"}`, status: 409, code: "session_conflict"},
				// Another account may use the same id: sessions are per account.
				{method: "POST", path: "/sessions", account: "acme", body: `{"id":"sess_001"}`, status: 201},
				{method: "GET", path: "/sessions/sess_001", status: 200, check: func(t *testing.T, d map[string]any) {
					p, _ := d["tool_permissions"].(map[string]any)
					if p["enabled"] != true || p["max_calls_per_turn"] != nil {
						t.Errorf("default permissions: %v", p)
					}
				}},
				{method: "GET", path: "/sessions/sess_404", status: 404, code: "not_found"},
				{method: "GET", path: "/sessions/sess_001?x=1", status: 400, code: "validation_error"},
				// Hostile bodies.
				{method: "POST", path: "/sessions", body: `{"id":"a","id":"b"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"id":"séance"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"id":"a\u202eb"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"id":""}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"id":"` + strings.Repeat("x", 129) + `"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"metadata":[1]}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"metadata":{}} {}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"name":"x"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `[]`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: ``, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: huge, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: strings.Repeat(`{"a":`, 20000), status: 400, code: "validation_error"},
				// Cross-account: 404, never 403.
				{method: "DELETE", path: "/sessions/sess_001", account: "stranger", status: 404, code: "not_found"},
				{method: "GET", path: "/sessions/sess_001/tool-permissions", account: "stranger", status: 404, code: "not_found"},
				{method: "PATCH", path: "/sessions/sess_001/tool-permissions", account: "stranger", body: `{"enabled":false}`, status: 404, code: "not_found"},
				{method: "DELETE", path: "/sessions/sess_001", status: 200, check: func(t *testing.T, d map[string]any) {
					if d["id"] != "sess_001" || d["deleted"] != true {
						t.Errorf("delete: %v", d)
					}
				}},
				{method: "GET", path: "/sessions/sess_001", status: 404, code: "not_found"},
				{method: "GET", path: "/sessions/sess_001", account: "acme", status: 200},
			}
			for _, c := range calls {
				do(t, srv, c)
			}
		})
	}
}

// The seed's permission examples: PUT the GET example, PATCH the PATCH
// example, and the narrator list survives.
func TestSessionPermissionsFollowTheSeed(t *testing.T) {
	for name, st := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			srv := tenantServer(t, (&admin.Sessions{Store: st, Account: accountHeader}).Routes())
			do(t, srv, call{method: "POST", path: "/sessions", body: `{"id":"sess_001"}`, status: 201})
			seedGet := `{"allow_irreversible":false,"max_calls_per_turn":10,"max_steps_per_generation":5,` +
				`"slot_allow_list":{"narrator":["roll_dice","get_time"]},"slot_deny_list":{"verifier":["set_variable"]}}`
			do(t, srv, call{method: "PUT", path: "/sessions/sess_001/tool-permissions", body: seedGet, status: 200})
			got := do(t, srv, call{method: "PATCH", path: "/sessions/sess_001/tool-permissions",
				body: `{"max_calls_per_turn":20,"slot_allow_list":{"director":["get_time"]}}`, status: 200})
			want := `{"allow_irreversible":false,"enabled":true,"max_calls_per_turn":20,"max_steps_per_generation":5,` +
				`"slot_allow_list":{"director":["get_time"],"narrator":["roll_dice","get_time"]},"slot_deny_list":{"verifier":["set_variable"]}}`
			if b, _ := json.Marshal(got); string(b) != want {
				t.Errorf("after PATCH:\n got %s\nwant %s", b, want)
			}
			again := do(t, srv, call{method: "GET", path: "/sessions/sess_001/tool-permissions", status: 200})
			if b, _ := json.Marshal(again); string(b) != want {
				t.Errorf("GET after PATCH:\n got %s\nwant %s", b, want)
			}
			for _, bad := range []string{
				`{"slot_allow_list":{"villain":["get_time"]}}`,
				`{"max_calls_per_turn":-1}`,
				`{"max_calls_per_turn":1.5}`,
				`{"enabled":"yes"}`,
				`{"enabled":true,"enabled":false}`,
				`{"slot_deny_list":{"narrator":["get time"]}}`,
				`{"tool_permissions":{}}`,
				`{"require_approval":"sometimes"}`,
				`{"require_approval":"Always"}`,
				`{"require_approval":"always\u200b"}`,
				`{"require_approval":true}`,
				`{"require_approval":["always"]}`,
			} {
				do(t, srv, call{method: "PATCH", path: "/sessions/sess_001/tool-permissions", body: bad, status: 400, code: "validation_error"})
			}
			do(t, srv, call{method: "PUT", path: "/sessions/nope/tool-permissions", body: `{}`, status: 404, code: "not_found"})
			// require_approval is kept, and cleared by null.
			ra := do(t, srv, call{method: "PATCH", path: "/sessions/sess_001/tool-permissions", body: `{"require_approval":"always"}`, status: 200})
			if ra["require_approval"] != "always" {
				t.Errorf("require_approval after PATCH: %v", ra["require_approval"])
			}
			ra = do(t, srv, call{method: "PATCH", path: "/sessions/sess_001/tool-permissions", body: `{"require_approval":null}`, status: 200})
			if _, ok := ra["require_approval"]; ok {
				t.Errorf("require_approval after null: %v", ra["require_approval"])
			}
			// PUT resets what it does not name.
			reset := do(t, srv, call{method: "PUT", path: "/sessions/sess_001/tool-permissions", body: `{"enabled":false}`, status: 200})
			if b, _ := json.Marshal(reset); string(b) != `{"allow_irreversible":true,"enabled":false,"max_calls_per_turn":null,"max_steps_per_generation":null,"slot_allow_list":{},"slot_deny_list":{}}` {
				t.Errorf("after PUT: %s", b)
			}
		})
	}
}

type httptestServer = httptest.Server

// doRaw returns the whole decoded body of a 200 answer.
func doRaw(t *testing.T, srv *httptest.Server, method, path, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &b); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return b
}

// GET /sessions/{id}/tools/runtime on every store: the seed's fields,
// 404 for another account's session, 400 for an unknown slot.
func TestRuntimeCatalogRoute(t *testing.T) {
	for name, db := range sqlStores(t) {
		t.Run(name, func(t *testing.T) {
			ex, err := tools.NewExecutor(tools.Options{Sessions: db, Definitions: db}, builtin.All()...)
			if err != nil {
				t.Fatal(err)
			}
			ss := &admin.Sessions{Store: db, Account: accountHeader,
				Runtime: func(ctx context.Context, a, id, slot string) (any, error) { return ex.Runtime(ctx, a, id, slot) }}
			off := false
			var changed []string
			srv := tenantServer(t, ss.Routes())
			defs := defsServer(t, db, &off, &changed)
			do(t, srv, call{method: "POST", path: "/sessions", body: `{"id":"sess_001"}`, status: 201})
			do(t, defs, call{method: "POST", path: "/tools/definitions", body: `{"name":"lookup_npc","allowed_slots":["narrator"]}`, status: 201})
			do(t, srv, call{method: "PUT", path: "/sessions/sess_001/tool-permissions", body: `{"slot_deny_list":{"verifier":["roll_dice"]}}`, status: 200})
			cat := do(t, srv, call{method: "GET", path: "/sessions/sess_001/tools/runtime?slot=verifier", status: 200})
			if cat["session_id"] != "sess_001" || cat["generated_at"] == nil || cat["conflicts"] == nil {
				t.Fatalf("catalog %v", cat)
			}
			byName := map[string]map[string]any{}
			for _, it := range cat["tools"].([]any) {
				m := it.(map[string]any)
				byName[m["name"].(string)] = m
			}
			roll, npc := byName["roll_dice"], byName["lookup_npc"]
			if roll["availability"] != "unavailable" || roll["availability_reason"] == nil || npc["availability"] != "unavailable" ||
				byName["get_time"]["availability"] != "available" || byName["get_time"]["availability_reason"] != nil {
				t.Errorf("availability: roll %v, npc %v", roll, npc)
			}
			want := []string{"name", "provider_id", "provider_type", "source", "side_effect_level", "allowed_slots", "availability",
				"availability_reason", "async_capability", "default_delivery_mode", "catalog_source", "replay_safety", "result_visibility",
				"side_effect_level_basis", "allowed_slots_basis", "parameter_schema_basis", "replay_safety_basis", "metadata_basis_detail",
				"require_approval", "require_approval_basis"}
			for _, f := range want {
				if _, ok := npc[f]; !ok {
					t.Errorf("field %s missing", f)
				}
			}
			if len(npc) != len(want) || npc["provider_type"] != "preset" || npc["catalog_source"] != nil || npc["allowed_slots_basis"] != "tool_declared" {
				t.Errorf("lookup_npc entry %v", npc)
			}
			do(t, srv, call{method: "GET", path: "/sessions/sess_001/tools/runtime", account: "acme", status: 404, code: "not_found"})
			do(t, srv, call{method: "GET", path: "/sessions/sess_001/tools/runtime?slot=villain", status: 400, code: "validation_error"})
			do(t, srv, call{method: "GET", path: "/sessions/sess_001/tools/runtime?slot=narrator&slot=director", status: 400, code: "validation_error"})
		})
	}
}

// A session's character: set on POST, replaced and removed with PATCH,
// checked field by field, and another account's session is 404.
func TestSessionCharacters(t *testing.T) {
	at := time.UnixMilli(1_735_689_600_000)
	for name, st := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			srv := tenantServer(t, (&admin.Sessions{Store: st, Account: accountHeader, Now: func() time.Time { return at }}).Routes())
			wantChar := func(id, name string) func(*testing.T, map[string]any) {
				return func(t *testing.T, d map[string]any) {
					c, _ := d["character"].(map[string]any)
					if c == nil || c["name"] != name || (id != "" && c["id"] != id) {
						t.Errorf("character: %v, want %s %s", d["character"], id, name)
					}
					if id == "" && !strings.HasPrefix(c["id"].(string), "char_") {
						t.Errorf("generated character id: %v", c["id"])
					}
					if _, ok := c["attributes"].(map[string]any); !ok {
						t.Errorf("attributes: %v", c["attributes"])
					}
				}
			}
			calls := []call{
				{method: "POST", path: "/sessions", body: `{"id":"s1","character":{"id":"char_ella","name":"艾拉","description":"游侠","attributes":{"hp":12}}}`, status: 201, check: wantChar("char_ella", "艾拉")},
				{method: "GET", path: "/sessions/s1", status: 200, check: wantChar("char_ella", "艾拉")},
				{method: "POST", path: "/sessions", body: `{"id":"s2"}`, status: 201, check: func(t *testing.T, d map[string]any) {
					if v, ok := d["character"]; !ok || v != nil {
						t.Errorf("a session without a character: %v", d)
					}
				}},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":"Bram"}}`, status: 200, check: wantChar("", "Bram")},
				{method: "PATCH", path: "/sessions/s1", body: `{"character":null}`, status: 200, check: func(t *testing.T, d map[string]any) {
					if d["character"] != nil {
						t.Errorf("removed character: %v", d["character"])
					}
				}},
				{method: "GET", path: "/sessions/s1", status: 200, check: func(t *testing.T, d map[string]any) {
					if d["character"] != nil {
						t.Errorf("removed character came back: %v", d["character"])
					}
				}},
				// Cross-account: 404.
				{method: "PATCH", path: "/sessions/s2", account: "stranger", body: `{"character":null}`, status: 404, code: "not_found"},
				{method: "PATCH", path: "/sessions/nope", body: `{"character":null}`, status: 404, code: "not_found"},
				// Hostile and wrong bodies.
				{method: "PATCH", path: "/sessions/s2", body: `{}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"metadata":{}}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":""}}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":"a","name":"b"}}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":"a","power":9000}}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":"a","attributes":[1]}}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":"a","id":"char\u202e1"}}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":"Bram"}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/sessions/s2", body: `{"character":{"name":"` + strings.Repeat("名", 201) + `"}}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/sessions", body: `{"character":{"name":"a","attributes":{"x":"` + strings.Repeat("a", 70<<10) + `"}}}`, status: 400, code: "validation_error"},
				{method: "GET", path: "/sessions/s2", status: 200, check: wantChar("", "Bram")},
			}
			for _, c := range calls {
				do(t, srv, c)
			}
		})
	}
}
