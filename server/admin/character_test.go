package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// Definitions of source character, on every store: created and filtered
// over REST, visible in the runtime catalog only of the sessions that
// play the character (and there winning over a custom tool of the same
// name), callable only there, and never another account's.
func TestCharacterDefinitionsFollowTheSessionsCharacter(t *testing.T) {
	for name, db := range sqlStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
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
			for _, c := range []call{
				{method: "POST", path: "/sessions", body: `{"id":"s_ana","character":{"id":"char_ana","name":"Ana"}}`, status: 201},
				{method: "POST", path: "/sessions", body: `{"id":"s_bob","character":{"id":"char_bob","name":"Bob"}}`, status: 201},
				{method: "POST", path: "/sessions", body: `{"id":"s_none"}`, status: 201},
				{method: "POST", path: "/sessions", account: "acme", body: `{"id":"s_ana","character":{"id":"char_ana","name":"Ana"}}`, status: 201},
				{method: "POST", path: "/tools/definitions", body: `{"name":"secret_of","source":"character","source_id":"char_ana","description":"Ana's"}`, status: 201},
				{method: "POST", path: "/tools/definitions", body: `{"name":"secret_of","description":"everyone's"}`, status: 201},
				{method: "POST", path: "/tools/definitions", body: `{"name":"secret_of","source":"character","source_id":"char_ana"}`, status: 409, code: "tool_definition_conflict"},
				// Hostile: no id, an id with a zero-width space or a
				// right-to-left override, a huge id, a duplicated key.
				{method: "POST", path: "/tools/definitions", body: `{"name":"x","source":"character"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"x","source":"character","source_id":"char_ana\u200b"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"x","source":"character","source_id":"char\u202eana"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: fmt.Sprintf(`{"name":"x","source":"character","source_id":"c%0129d"}`, 0), status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"x","source":"character","source_id":"char_bob","source_id":"char_ana"}`, status: 400, code: "validation_error"},
			} {
				if c.path == "/tools/definitions" {
					do(t, defs, c)
				} else {
					do(t, srv, c)
				}
			}
			list := func(account, query string) []any {
				return listAs(t, defs.URL+"/tools/definitions"+query, account)
			}
			if got := list("", "?source=character&source_id=char_ana"); len(got) != 1 || got[0].(map[string]any)["source_id"] != "char_ana" {
				t.Errorf("filtered list: %v", got)
			}
			if got := list("", "?source=character&source_id=char_bob"); len(got) != 0 {
				t.Errorf("char_bob's list: %v", got)
			}
			if got := list("acme", "?source=character"); len(got) != 0 {
				t.Errorf("another account sees %v", got)
			}
			entry := func(account, sid string) map[string]any {
				cat := do(t, srv, call{method: "GET", path: "/sessions/" + sid + "/tools/runtime", account: account, status: 200})
				var found map[string]any
				for _, it := range cat["tools"].([]any) {
					m := it.(map[string]any)
					// The one a call runs (no handler here: unavailable);
					// any other is in conflict.
					if m["name"] == "secret_of" && m["availability"] != "conflict" {
						if found != nil {
							t.Errorf("%s: two secret_of a call could run", sid)
						}
						found = m
					}
				}
				return found
			}
			if e := entry("", "s_ana"); e == nil || e["source"] != "character" || e["availability"] != "unavailable" {
				t.Errorf("s_ana runs %v, want the character's", e)
			}
			for _, sid := range []string{"s_bob", "s_none"} {
				if e := entry("", sid); e == nil || e["source"] != "custom" {
					t.Errorf("%s runs %v, want the custom one", sid, e)
				}
			}
			if e := entry("acme", "s_ana"); e != nil {
				t.Errorf("acme's s_ana sees %v", e)
			}
			// What the catalog says is what a call runs: the character's
			// definition (which has no handler) in s_ana; in acme's s_ana
			// nothing.
			run := func(account, sid string) *tools.Outcome {
				out, err := ex.Execute(ctx, tools.Proposal{Tool: "secret_of", Args: json.RawMessage(`{}`),
					Caller: tools.Caller{Identity: identity.Identity{AccountID: account}, SessionID: sid}})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if out := run("local", "s_ana"); out.Code != tools.CodeNoHandler {
				t.Errorf("s_ana: %+v", out)
			}
			if out := run("acme", "s_ana"); out.Code != tools.CodeUnknownTool {
				t.Errorf("acme s_ana: %+v", out)
			}
			recs, _, err := ex.Journal().Store().List(ctx, journal.Query{AccountID: "local", SessionID: "s_ana"})
			if err != nil || len(recs) != 1 || recs[0].ProviderType != "preset" || recs[0].ProviderID == "" {
				t.Errorf("journal: %v %+v", err, recs)
			}
		})
	}
}

// listAs GETs a list route as account ("" for the default one) and
// returns its data.
func listAs(t *testing.T, u, account string) []any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if account != "" {
		req.Header.Set("X-Account", account)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct {
		Data []any `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &b) != nil {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, raw)
	}
	return b.Data
}
