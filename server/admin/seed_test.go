package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/seed")

// seedStep is one request of the seed's examples and the golden file its
// answer is compared with (testdata/seed/NAME.json: the request, the
// status and the body, ids and times masked).
type seedStep struct {
	name, method, path, body string
	// before runs ahead of the request (a call through the pipeline).
	before func(t *testing.T)
}

// Every example of the seed's tools API sections, replayed in order on
// every store: the runtime catalog, the builtin list, definitions CRUD
// and toggle with their errors, the execution journal of the seed's
// roll_dice call (also per floor), its legacy projection, and the tool
// permissions (GET, PUT, the PATCH merge, errors). `go test ./server/admin
// -run TestSeedExamples -update` rewrites the golden files.
func TestSeedExamples(t *testing.T) {
	for name, db := range sqlStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scripts := true
			jr := journal.New(db, journal.Options{InstanceID: "seed"})
			ex, err := tools.NewExecutor(tools.Options{Sessions: db, Definitions: db, Variables: db, Journal: jr}, builtin.All()...)
			if err != nil {
				t.Fatal(err)
			}
			var specs []catalog.Spec
			for _, s := range ex.Catalog().List() {
				specs = append(specs, s)
				if s.Name == "get_time" {
					specs = append(specs, ex.SessionSpecs()[0]) // get_character_info
				}
			}
			routes := (&admin.Sessions{Store: db, Slots: session.DefaultSlots,
				Runtime: func(ctx context.Context, a, id, slot string) (any, error) { return ex.Runtime(ctx, a, id, slot) }}).Routes()
			defs := &admin.Definitions{Store: db, Builtins: func() []catalog.Spec { return specs },
				Rules: tooldef.Rules{Slots: session.DefaultSlots, Reserved: func(n string) bool {
					_, ok := ex.Catalog().Lookup(n)
					return ok
				}, CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) }},
				ScriptsEnabled: func() bool { return scripts }}
			for p, h := range defs.Routes() {
				routes[p] = h
			}
			for p, h := range (&admin.Journal{Store: jr.Store()}).Routes() {
				routes[p] = h
			}
			srv := tenantServer(t, routes)
			var defID string
			roll := func(t *testing.T) {
				out, err := ex.Execute(ctx, tools.Proposal{Tool: "roll_dice", Args: json.RawMessage(`{ "sides": 20, "count": 1 }`), CallID: "call_001",
					Caller: tools.Caller{Slot: "narrator", Face: "hosted", SessionID: "sess_001", FloorID: "floor_001", RunID: "floorrun_001"}})
				if err != nil || out.IsError {
					t.Fatalf("roll_dice: %v %+v", err, out)
				}
			}
			steps := []seedStep{
				{name: "runtime-session-create", method: "POST", path: "/sessions", body: `{"id":"sess_001"}`},
				{name: "runtime", method: "GET", path: "/sessions/sess_001/tools/runtime?slot=narrator"},
				{name: "builtin", method: "GET", path: "/tools/builtin"},
				{name: "definitions-create", method: "POST", path: "/tools/definitions", body: seedCreateExample},
				{name: "definitions-create-conflict", method: "POST", path: "/tools/definitions", body: seedCreateExample},
				{name: "definitions-create-invalid", method: "POST", path: "/tools/definitions", body: `{"name":"lookup npc"}`},
				{name: "definitions-list", method: "GET", path: "/tools/definitions"},
				{name: "definitions-get", method: "GET", path: "/tools/definitions/{def}"},
				{name: "definitions-get-404", method: "GET", path: "/tools/definitions/tooldef_missing"},
				{name: "definitions-patch", method: "PATCH", path: "/tools/definitions/{def}", body: `{"allowed_slots":["narrator"]}`},
				{name: "definitions-patch-empty", method: "PATCH", path: "/tools/definitions/{def}", body: `{}`},
				{name: "definitions-patch-404", method: "PATCH", path: "/tools/definitions/tooldef_missing", body: `{"description":"x"}`},
				{name: "definitions-toggle", method: "PATCH", path: "/tools/definitions/{def}/toggle", body: `{"enabled": false}`},
				{name: "definitions-toggle-invalid", method: "PATCH", path: "/tools/definitions/{def}/toggle", body: `{"enabled": "no"}`},
				{name: "definitions-toggle-gate-off", method: "PATCH", path: "/tools/definitions/{def}/toggle", body: `{"enabled": true}`,
					before: func(*testing.T) { scripts = false }},
				{name: "definitions-patch-gate-off", method: "PATCH", path: "/tools/definitions/{def}", body: `{"handler":{"script":"return 1;"}}`},
				{name: "definitions-create-gate-off", method: "POST", path: "/tools/definitions", body: strings.Replace(seedCreateExample, "lookup_npc", "lookup_npc2", 1)},
				{name: "definitions-delete", method: "DELETE", path: "/tools/definitions/{def}", before: func(*testing.T) { scripts = true }},
				{name: "definitions-delete-404", method: "DELETE", path: "/tools/definitions/{def}"},
				{name: "executions", method: "GET", path: "/tool-executions?session_id=sess_001", before: roll},
				{name: "executions-floor", method: "GET", path: "/floors/floor_001/tool-executions?caller_slot=narrator"},
				{name: "executions-unfiltered", method: "GET", path: "/tool-executions"},
				{name: "call-records", method: "GET", path: "/tools/call-records?floor_id=floor_001"},
				{name: "call-records-unfiltered", method: "GET", path: "/tools/call-records"},
				{name: "permissions-put", method: "PUT", path: "/sessions/sess_001/tool-permissions", body: seedPermissionsExample},
				{name: "permissions-get", method: "GET", path: "/sessions/sess_001/tool-permissions"},
				{name: "permissions-patch", method: "PATCH", path: "/sessions/sess_001/tool-permissions", body: seedPatchExample},
				{name: "permissions-patch-invalid", method: "PATCH", path: "/sessions/sess_001/tool-permissions", body: `{"max_calls_per_turn":"many"}`},
				{name: "permissions-patch-404", method: "PATCH", path: "/sessions/sess_404/tool-permissions", body: seedPatchExample},
			}
			for _, st := range steps {
				if st.before != nil {
					st.before(t)
				}
				path := strings.ReplaceAll(st.path, "{def}", defID)
				status, body := seedDo(t, srv.URL, st.method, path, st.body)
				if st.name == "definitions-create" {
					var b struct{ Data struct{ ID string } }
					_ = json.Unmarshal(body, &b)
					defID = b.Data.ID
				}
				got := seedGolden(t, st, status, body)
				file := filepath.Join("testdata", "seed", st.name+".json")
				if *update && name == "sqlite" {
					if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: got\n%s\nwant\n%s", file, got, want)
				}
			}
		})
	}
}

const (
	seedCreateExample = `{
  "name": "lookup_npc",
  "description": "根据名字查找 NPC 信息",
  "parameters": {
    "type": "object",
    "properties": {
      "name": { "type": "string", "description": "NPC 名字" }
    },
    "required": ["name"]
  },
  "side_effect_level": "none",
  "allowed_slots": ["narrator", "director"],
  "source": "custom",
  "handler_type": "script",
  "handler": {
    "script": "return { found: true, info: args.name };"
  }
}`
	seedPermissionsExample = `{
  "allow_irreversible": false,
  "max_calls_per_turn": 10,
  "max_steps_per_generation": 5,
  "slot_allow_list": {
    "narrator": ["roll_dice", "get_time"]
  },
  "slot_deny_list": {
    "verifier": ["set_variable"]
  }
}`
	seedPatchExample = `{
  "max_calls_per_turn": 20,
  "slot_allow_list": {
    "director": ["get_time"]
  }
}`
)

func seedDo(t *testing.T, base, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// maskedKeys hold ids and times, different on every run.
var maskedKeys = map[string]bool{"id": true, "created_at": true, "updated_at": true, "started_at": true, "finished_at": true,
	"generated_at": true, "duration_ms": true, "run_id_generated": true, "trace_id": true, "args_digest": true}

// seedGolden renders a step as its golden file: the request, the status
// and the body with ids, times and the dice masked, keys sorted.
func seedGolden(t *testing.T, st seedStep, status int, body []byte) []byte {
	t.Helper()
	var b any
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%s: body %q: %v", st.name, body, err)
	}
	var reqBody any
	if st.body != "" {
		if err := json.Unmarshal([]byte(st.body), &reqBody); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]any{
		"request":  map[string]any{"method": st.method, "path": st.path, "body": reqBody},
		"response": map[string]any{"status": status, "body": maskSeed(b, "")},
	}
	got, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(got, '\n')
}

func maskSeed(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch {
			case x[k] == nil:
			case maskedKeys[k]:
				x[k] = "…"
			case key == "result" || key == "data" && x["results"] != nil:
				// roll_dice's results and total: random.
				if k == "results" || k == "total" {
					x[k] = "…"
				} else {
					x[k] = maskSeed(x[k], k)
				}
			default:
				x[k] = maskSeed(x[k], k)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = maskSeed(x[i], key)
		}
		return x
	case string:
		if key == "summary" && strings.HasPrefix(x, "1d20 = ") {
			return "1d20 = …"
		}
		// Execution ids and run ids in other fields (records link to
		// them) look like UUIDs.
		if len(x) >= 36 && strings.Count(x, "-") >= 4 && (key == "run_id" || key == "replay_parent_execution_id" || key == "call_id" && x != "call_001") {
			return "…"
		}
		return x
	}
	return v
}
