package admin_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

func defStores(t *testing.T) map[string]tooldef.Store {
	out := map[string]tooldef.Store{"memory": tooldef.NewMemStore()}
	for name, db := range sqlStores(t) {
		out[name] = db
	}
	return out
}

func defsServer(t *testing.T, st tooldef.Store, scripts *bool, changed *[]string) *httptestServer {
	t.Helper()
	now := time.UnixMilli(1_735_689_600_000)
	var specs []catalog.Spec
	for _, tl := range builtin.All() {
		specs = append(specs, tl.Spec())
	}
	d := &admin.Definitions{
		Store:    st,
		Builtins: func() []catalog.Spec { return specs },
		Rules: tooldef.Rules{Slots: session.DefaultSlots,
			Reserved:    func(n string) bool { return n == "roll_dice" || n == "get_time" || n == "random_choice" },
			CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) }},
		ScriptsEnabled: func() bool { return *scripts },
		Changed:        func(a string) { *changed = append(*changed, a) },
		Account:        accountHeader,
		Now: func() time.Time {
			now = now.Add(time.Minute)
			return now
		},
	}
	return tenantServer(t, d.Routes())
}

var masked = regexp.MustCompile(`"(id|created_at|updated_at)":("tooldef_[0-9a-f-]+"|\d+)`)

func mask(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return masked.ReplaceAllString(string(b), `"$1":"…"`)
}

// The seed's create example, then its list example, id and times masked.
func TestDefinitionsReplayTheSeed(t *testing.T) {
	seedCreate := `{
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
	wantItem := `{"allowed_slots":["narrator","director"],"created_at":"…","description":"根据名字查找 NPC 信息","enabled":true,` +
		`"handler":{"script":"return { found: true, info: args.name };"},"handler_type":"script","id":"…","name":"lookup_npc",` +
		`"parameters":{"properties":{"name":{"description":"NPC 名字","type":"string"}},"required":["name"],"type":"object"},` +
		`"side_effect_level":"none","source":"custom","source_id":null,"updated_at":"…"}`
	for name, st := range defStores(t) {
		t.Run(name, func(t *testing.T) {
			on := true
			var changed []string
			srv := defsServer(t, st, &on, &changed)
			got := do(t, srv, call{method: "POST", path: "/tools/definitions", body: seedCreate, status: 201})
			if m := mask(t, got); m != wantItem {
				t.Errorf("201 body:\n got %s\nwant %s", m, wantItem)
			}
			id := got["id"].(string)
			do(t, srv, call{method: "PATCH", path: "/tools/definitions/" + id, body: `{"description":"根据名字查找 NPC 信息"}`, status: 200})
			list := doRaw(t, srv, "GET", "/tools/definitions", "")
			wantList := `{"data":[` + wantItem + `],"meta":{"has_more":false,"limit":50,"offset":0,"sort_by":"updated_at","sort_order":"desc","total":1}}`
			if m := mask(t, list); m != wantList {
				t.Errorf("list:\n got %s\nwant %s", m, wantList)
			}
			one := do(t, srv, call{method: "GET", path: "/tools/definitions/" + id, status: 200})
			if one["created_at"].(float64) >= one["updated_at"].(float64) {
				t.Errorf("times: %v", one)
			}
			del := do(t, srv, call{method: "DELETE", path: "/tools/definitions/" + id, status: 200})
			if mask(t, del) != `{"deleted":true,"id":"…"}` || del["id"] != id {
				t.Errorf("delete: %v", del)
			}
			do(t, srv, call{method: "GET", path: "/tools/definitions/" + id, status: 404, code: "not_found"})
			if len(changed) != 3 {
				t.Errorf("changes announced: %v", changed)
			}
		})
	}
}

func TestDefinitionRules(t *testing.T) {
	for name, st := range defStores(t) {
		t.Run(name, func(t *testing.T) {
			scripts := false
			var changed []string
			srv := defsServer(t, st, &scripts, &changed)
			// Defaults from the seed.
			def := do(t, srv, call{method: "POST", path: "/tools/definitions", body: `{"name":"plain"}`, status: 201})
			if mask(t, def) != `{"allowed_slots":[],"created_at":"…","description":"","enabled":true,"handler":null,"handler_type":null,"id":"…","name":"plain","parameters":{"properties":{},"type":"object"},"side_effect_level":"none","source":"custom","source_id":null,"updated_at":"…"}` {
				t.Errorf("defaults: %s", mask(t, def))
			}
			id := def["id"].(string)
			script := `{"name":"s","handler_type":"script","handler":{"script":"return 1;"}}`
			cases := []call{
				// The script gate.
				{method: "POST", path: "/tools/definitions", body: script, status: 403, code: "tool_script_handler_disabled"},
				{method: "PATCH", path: "/tools/definitions/" + id, body: `{"handler_type":"script","handler":{"script":"return 1;"}}`, status: 403, code: "tool_script_handler_disabled"},
				// Uniqueness per account on (name, source, source_id).
				{method: "POST", path: "/tools/definitions", body: `{"name":"plain"}`, status: 409, code: "tool_definition_conflict"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"plain","source":"character","source_id":"c1"}`, status: 201},
				{method: "POST", path: "/tools/definitions", body: `{"name":"plain","source":"character","source_id":"c1"}`, status: 409, code: "tool_definition_conflict"},
				{method: "POST", path: "/tools/definitions", account: "acme", body: `{"name":"plain"}`, status: 201},
				{method: "POST", path: "/tools/definitions", body: `{"name":"other"}`, status: 201},
				{method: "PATCH", path: "/tools/definitions/" + id, body: `{"name":"other"}`, status: 409, code: "tool_definition_conflict"},
				// Tenancy: 404, never 403.
				{method: "GET", path: "/tools/definitions/" + id, account: "acme", status: 404, code: "not_found"},
				{method: "PATCH", path: "/tools/definitions/" + id, account: "acme", body: `{"enabled":false}`, status: 404, code: "not_found"},
				{method: "DELETE", path: "/tools/definitions/" + id, account: "acme", status: 404, code: "not_found"},
				{method: "PATCH", path: "/tools/definitions/" + id + "/toggle", account: "acme", body: `{"enabled":false}`, status: 404, code: "not_found"},
				// PATCH needs a field; toggle needs enabled.
				{method: "PATCH", path: "/tools/definitions/" + id, body: `{}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/tools/definitions/" + id + "/toggle", body: `{}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/tools/definitions/" + id + "/toggle", body: `{"enabled":"no"}`, status: 400, code: "validation_error"},
				{method: "PATCH", path: "/tools/definitions/" + id + "/toggle", body: `{"enabled":false}`, status: 200, check: func(t *testing.T, d map[string]any) {
					if d["enabled"] != false {
						t.Errorf("toggle: %v", d)
					}
				}},
				{method: "PATCH", path: "/tools/definitions/nope/toggle", body: `{"enabled":true}`, status: 404, code: "not_found"},
				// Hostile and invalid bodies.
				{method: "POST", path: "/tools/definitions", body: `{"name":"a","name":"b"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"ｌｏｏｋｕｐ"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"look\u200bup"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"` + strings.Repeat("a", 65) + `"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"roll_dice"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","parameters":{"type":"string"}}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","parameters":{"type":"object","properties":{"a":{"type":"strung"}}}}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","parameters":{"type":"object","minProperties":-1}}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","parameters":[]}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","side_effect_level":"some"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","allowed_slots":["villain"]}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","source":"preset"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","source":"character"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","source_id":7}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","handler_type":"python"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","handler":{"script":"x"}}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","description":"` + strings.Repeat("描", 4097) + `"}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","extra":1}`, status: 400, code: "validation_error"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"p","parameters":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`, status: 400, code: "validation_error"},
				// Query parameters.
				{method: "GET", path: "/tools/definitions?source=mcp", status: 400, code: "validation_error"},
				{method: "GET", path: "/tools/definitions?enabled=yes", status: 400, code: "validation_error"},
				{method: "GET", path: "/tools/definitions?sort_by=created_at", status: 400, code: "validation_error"},
				{method: "GET", path: "/tools/definitions?limit=0", status: 400, code: "validation_error"},
				{method: "GET", path: "/tools/definitions?limt=5", status: 400, code: "validation_error"},
			}
			for _, c := range cases {
				do(t, srv, c)
			}
			e := do(t, srv, call{method: "POST", path: "/tools/definitions", body: `{"name":"p","side_effect_level":"some"}`, status: 400, code: "validation_error"})
			if e["field"] != "side_effect_level" {
				t.Errorf("the error names no field: %v", e)
			}
			// Filters, sort and paging.
			list := doRaw(t, srv, "GET", "/tools/definitions?sort_by=name&sort_order=asc&limit=2", "")
			var names []string
			for _, d := range list["data"].([]any) {
				names = append(names, d.(map[string]any)["name"].(string))
			}
			if strings.Join(names, ",") != "other,plain" || list["meta"].(map[string]any)["total"] != float64(3) || list["meta"].(map[string]any)["has_more"] != true {
				t.Errorf("sorted page: %v %v", names, list["meta"])
			}
			for q, want := range map[string]float64{"source=character": 1, "source=custom": 2, "source_id=c1": 1, "enabled=false": 1, "enabled=true": 2, "source=preset": 0} {
				if got := doRaw(t, srv, "GET", "/tools/definitions?"+q, "")["meta"].(map[string]any)["total"]; got != want {
					t.Errorf("%s: total %v, want %v", q, got, want)
				}
			}
			// With the gate open, a script tool is written; closed again,
			// enabling it is refused but disabling is not.
			scripts = true
			s := do(t, srv, call{method: "POST", path: "/tools/definitions", body: script, status: 201})
			scripts = false
			sid := s["id"].(string)
			do(t, srv, call{method: "PATCH", path: "/tools/definitions/" + sid + "/toggle", body: `{"enabled":false}`, status: 200})
			do(t, srv, call{method: "PATCH", path: "/tools/definitions/" + sid + "/toggle", body: `{"enabled":true}`, status: 403, code: "tool_script_handler_disabled"})
			do(t, srv, call{method: "PATCH", path: "/tools/definitions/" + sid, body: `{"description":"x"}`, status: 403, code: "tool_script_handler_disabled"})
			do(t, srv, call{method: "DELETE", path: "/tools/definitions/" + sid, status: 200})
		})
	}
}

func TestBuiltinListFollowsTheSeed(t *testing.T) {
	off := false
	var changed []string
	srv := defsServer(t, tooldef.NewMemStore(), &off, &changed)
	b := doRaw(t, srv, "GET", "/tools/builtin", "")
	items := b["data"].([]any)
	var roll map[string]any
	for _, it := range items {
		m := it.(map[string]any)
		if m["source"] != "builtin" || m["allowed_slots"] == nil || m["side_effect_level"] == nil || m["parameters"] == nil || m["description"] == "" {
			t.Errorf("item %v", m)
		}
		if m["name"] == "roll_dice" {
			roll = m
		}
	}
	if roll == nil || len(roll) != 6 {
		t.Fatalf("roll_dice: %v", roll)
	}
	if len(b) != 1 {
		t.Errorf("envelope %v: want data only", b)
	}
}

// Presets from the config: every account lists and reads them, nobody
// writes them, and the filters of the list see them as source preset.
func TestPresetDefinitionsAreReadOnlyAndShared(t *testing.T) {
	rules := tooldef.Rules{Slots: session.DefaultSlots,
		Reserved:    func(n string) bool { return n == "roll_dice" },
		CheckSchema: func(raw []byte) error { return tools.CheckSchema("preset", raw) }}
	name, desc := "lookup_npc", "operator's NPC lookup"
	presets, err := rules.Presets([]tooldef.Input{{Name: &name, Description: &desc}}, time.UnixMilli(1_735_689_600_000))
	if err != nil {
		t.Fatal(err)
	}
	for sname, st := range defStores(t) {
		t.Run(sname, func(t *testing.T) {
			scripts := true
			var changed []string
			srv := defsServer(t, tooldef.WithPresets(st, presets), &scripts, &changed)
			pid := tooldef.PresetID("lookup_npc")
			do(t, srv, call{method: "POST", path: "/tools/definitions", body: `{"name":"lookup_npc"}`, status: 201})
			do(t, srv, call{method: "POST", path: "/tools/definitions", body: `{"name":"mine"}`, status: 201})
			for _, account := range []string{"", "acme"} {
				one := do(t, srv, call{method: "GET", path: "/tools/definitions/" + pid, account: account, status: 200})
				if one["source"] != "preset" || one["description"] != desc || one["source_id"] != nil {
					t.Errorf("preset as %q: %v", account, one)
				}
			}
			list := doRaw(t, srv, "GET", "/tools/definitions?source=preset", "")
			if m := mask(t, list["meta"]); !strings.Contains(m, `"total":1`) {
				t.Errorf("source=preset: %s", mask(t, list))
			}
			all := doRaw(t, srv, "GET", "/tools/definitions?sort_by=name&sort_order=asc&limit=2", "")
			var names []string
			for _, d := range all["data"].([]any) {
				m := d.(map[string]any)
				names = append(names, m["name"].(string)+"/"+m["source"].(string))
			}
			if fmt.Sprint(names) != "[lookup_npc/preset lookup_npc/custom]" || all["meta"].(map[string]any)["total"] != float64(3) {
				t.Errorf("list with presets: %v %v", names, all["meta"])
			}
			if n := doRaw(t, srv, "GET", "/tools/definitions?source=custom", ""); n["meta"].(map[string]any)["total"] != float64(2) {
				t.Errorf("source=custom: %v", n["meta"])
			}
			if n := doRaw(t, srv, "GET", "/tools/definitions?source_id=x", ""); n["meta"].(map[string]any)["total"] != float64(0) {
				t.Errorf("source_id=x: %v", n["meta"])
			}
			for _, c := range []call{
				{method: "PATCH", path: "/tools/definitions/" + pid, body: `{"description":"mine now"}`, status: 403, code: "tool_definition_read_only"},
				{method: "PATCH", path: "/tools/definitions/" + pid + "/toggle", body: `{"enabled":false}`, status: 403, code: "tool_definition_read_only"},
				{method: "DELETE", path: "/tools/definitions/" + pid, status: 403, code: "tool_definition_read_only"},
				{method: "DELETE", path: "/tools/definitions/" + pid, account: "acme", status: 403, code: "tool_definition_read_only"},
				{method: "POST", path: "/tools/definitions", body: `{"name":"x","source":"preset"}`, status: 400, code: "validation_error"},
			} {
				do(t, srv, c)
			}
			if one := do(t, srv, call{method: "GET", path: "/tools/definitions/" + pid, status: 200}); one["description"] != desc || one["enabled"] != true {
				t.Errorf("a refused write changed the preset: %v", one)
			}
		})
	}
}
