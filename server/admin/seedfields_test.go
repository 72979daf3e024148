package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// renamed is a real builtin (roll_dice) under another name: a builtin
// that came after an account's tools of that name.
type renamed struct {
	tools.Tool
	name string
}

func (r renamed) Spec() catalog.Spec {
	s := r.Tool.Spec()
	s.Name = r.name
	return s
}

// fieldsWorld is an account with every kind of tool toolhost has and
// every shadowing pair among them, served by the REST API on one store.
type fieldsWorld struct {
	url string
	ex  *tools.Executor
	// ids are the generated ids and what the golden files call them.
	ids *strings.Replacer
}

// newFieldsWorld builds the world on db: the builtins (and roll_dice as
// demo__add, random_choice as demo__greet: they shadow the remote tools of
// those names), a preset lookup_npc, the remote server demo (the go-sdk
// test server: echo, add, write, fail, …) and these definitions of the
// account: custom lookup_npc (shadowed by the preset), custom demo__fail
// (shadows the remote one), custom and character demo__write (the
// session's character's wins, over the remote one too), custom demo__add
// (the builtin wins over it and the remote one), and a custom roll_dice
// written before the builtin existed.
func newFieldsWorld(t *testing.T, db *store.DB, upURL string) *fieldsWorld {
	t.Helper()
	ctx := context.Background()
	base := time.UnixMilli(1_790_000_000_000)
	var ticks atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	rules := tooldef.Rules{Slots: session.DefaultSlots, CheckSchema: func(raw []byte) error { return tools.CheckSchema("preset", raw) }}
	presets, err := rules.Presets([]tooldef.Input{{Name: ptr("lookup_npc"), Description: ptr("Finds an NPC (the operator's)")}}, base)
	if err != nil {
		t.Fatal(err)
	}
	defs := tooldef.WithPresets(db, presets)
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: db, Sealer: seal, Dial: dial, ProbeTimeout: 2 * time.Second})
	t.Cleanup(gw.Close)
	jr := journal.New(db, journal.Options{InstanceID: "fields"})
	ex, err := tools.NewExecutor(tools.Options{Sessions: db, Definitions: defs, Variables: db, Journal: jr, Remote: gw, Clock: clock},
		append(builtin.All(), renamed{builtin.NewRollDice(), "demo__add"}, renamed{builtin.NewRandomChoice(), "demo__greet"})...)
	if err != nil {
		t.Fatal(err)
	}
	routes := (&admin.Sessions{Store: db, Account: accountHeader,
		Runtime: func(ctx context.Context, a, id, slot string) (any, error) { return ex.Runtime(ctx, a, id, slot) }}).Routes()
	d := &admin.Definitions{Store: defs, Account: accountHeader, Builtins: func() []catalog.Spec { return ex.Catalog().List() },
		Rules:          tooldef.Rules{Slots: session.DefaultSlots, CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) }},
		ScriptsEnabled: func() bool { return true }}
	m := &admin.MCPServers{Store: db, Sealer: seal, Gateway: gw, Rules: mcpremote.Rules{Slots: session.DefaultSlots},
		CheckHost: func(ctx context.Context, host string) error {
			return egress.CheckHost(ctx, []string{"127.0.0.1"}, host)
		},
		Account: accountHeader, CallbackURL: "http://127.0.0.1/mcp-servers/oauth/callback"}
	for _, rs := range []map[string]http.Handler{d.Routes(), m.Routes(), (&admin.Journal{Store: jr.Store(), Account: accountHeader}).Routes()} {
		for p, h := range rs {
			routes[p] = h
		}
	}
	srv := tenantServer(t, routes)
	var pairs []string
	do(t, srv, call{method: "POST", path: "/sessions", body: `{"id":"sess_f","character":{"id":"char_ana","name":"Ana"}}`, status: 201})
	do(t, srv, call{method: "POST", path: "/mcp-servers", body: `{"name":"demo","url":"` + upURL + `"}`, status: 201,
		check: func(t *testing.T, d map[string]any) { pairs = append(pairs, d["id"].(string), "mcpsrv_demo") }})
	for _, def := range []struct{ name, source string }{
		{"lookup_npc", "custom"}, {"demo__fail", "custom"}, {"demo__write", "custom"}, {"demo__write", "character"}, {"demo__add", "custom"},
	} {
		body := fmt.Sprintf(`{"name":%q,"source":%q}`, def.name, def.source)
		if def.source == "character" {
			body = fmt.Sprintf(`{"name":%q,"source":"character","source_id":"char_ana"}`, def.name)
		}
		do(t, srv, call{method: "POST", path: "/tools/definitions", body: body, status: 201,
			check: func(t *testing.T, d map[string]any) {
				pairs = append(pairs, d["id"].(string), "tooldef_"+def.name+"_"+def.source)
			}})
	}
	// The REST API refuses a builtin's name; the store took it before
	// the builtin existed.
	late := tooldef.Definition{ID: "tooldef_roll_dice_custom", AccountID: "local", Name: "roll_dice", Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		SideEffectLevel: "none", Source: tooldef.SourceCustom, Enabled: true, CreatedAt: base, UpdatedAt: base}
	if err := db.CreateDefinition(ctx, late, 0); err != nil {
		t.Fatal(err)
	}
	return &fieldsWorld{url: srv.URL, ex: ex, ids: strings.NewReplacer(pairs...)}
}

func ptr[T any](v T) *T { return &v }

// fieldsStep is one request and its golden file (testdata/seedfields).
type fieldsStep struct {
	name, path string
	status     int
	// project keeps, of each item of data, these fields (all when nil):
	// what this test is about, not the fields other work adds.
	project []string
}

// The seed's enums and fields through the REST API, on every store:
// provider_type's four values for every kind of tool (and custom
// refused), the runtime catalog's conflicts for every shadowing pair with
// the winner a call then runs, page_id set by callers and filtered on,
// and every enum filter of every list refusing a value outside its enum
// like hostile text filters, each as a golden file. `go test
// ./server/admin -run TestSeedEnumsAndFields -update` rewrites them.
func TestSeedEnumsAndFields(t *testing.T) {
	upURL := mcpUpstream(t)
	for name, db := range sqlStores(t) {
		t.Run(name, func(t *testing.T) {
			w := newFieldsWorld(t, db, upURL)
			w.checkConflictWinnersRun(t)
			w.runCalls(t)
			for _, st := range fieldsSteps() {
				w.golden(t, name, st)
			}
		})
	}
}

var (
	execFields   = []string{"tool_name", "provider_type", "provider_id", "floor_id", "page_id", "run_id", "caller_slot", "status", "error_code"}
	legacyFields = []string{"tool_name", "page_id", "seq", "caller_slot", "status"}
)

func fieldsSteps() []fieldsStep {
	huge := strings.Repeat("x", admin.MaxFilterBytes+1)
	steps := []fieldsStep{
		{name: "runtime-conflicts", path: "/sessions/sess_f/tools/runtime?slot=narrator", status: 200},
		{name: "executions-all", path: "/tool-executions?session_id=sess_f&sort_by=created_at&sort_order=asc", status: 200, project: execFields},
		{name: "call-records-floor", path: "/tools/call-records?floor_id=floor_1&sort_order=asc", status: 200, project: legacyFields},
		{name: "call-records-page", path: "/tools/call-records?page_id=page_1b", status: 200, project: legacyFields},
		{name: "call-records-page-in-floor", path: "/tools/call-records?floor_id=floor_1&page_id=page_1a&sort_order=asc", status: 200, project: legacyFields},
		{name: "executions-page", path: "/tool-executions?session_id=sess_f&page_id=page_1b", status: 200, project: execFields},
	}
	for _, pt := range journal.ProviderTypes {
		steps = append(steps, fieldsStep{name: "executions-provider-" + pt, status: 200, project: execFields,
			path: "/tool-executions?session_id=sess_f&sort_by=created_at&sort_order=asc&provider_type=" + pt})
	}
	for _, slot := range session.DefaultSlots {
		steps = append(steps,
			fieldsStep{name: "executions-slot-" + slot, path: "/tool-executions?session_id=sess_f&sort_by=created_at&sort_order=asc&caller_slot=" + slot, status: 200, project: execFields},
			fieldsStep{name: "call-records-slot-" + slot, path: "/tools/call-records?floor_id=floor_1&sort_order=asc&caller_slot=" + slot, status: 200, project: legacyFields})
	}
	// Every enum filter of every list, given a value outside its enum, and
	// the text filters given hostile values: a 400 that names the field
	// and, for an enum, the values allowed.
	bad := []struct{ name, path string }{
		{"executions-provider-custom", "/tool-executions?session_id=sess_f&provider_type=custom"},
		{"executions-slot-villain", "/tool-executions?session_id=sess_f&caller_slot=villain"},
		{"floor-slot-villain", "/floors/floor_1/tool-executions?caller_slot=villain"},
		{"call-records-slot-villain", "/tools/call-records?floor_id=floor_1&caller_slot=villain"},
		{"executions-slot-lookalike", "/tool-executions?session_id=sess_f&caller_slot=n%D0%B0rrator"},
		{"executions-slot-case", "/tool-executions?session_id=sess_f&caller_slot=Narrator"},
		{"executions-slot-empty", "/tool-executions?session_id=sess_f&caller_slot="},
		{"executions-slot-nul", "/tool-executions?session_id=sess_f&caller_slot=narrator%00"},
		{"executions-slot-twice", "/tool-executions?session_id=sess_f&caller_slot=narrator&caller_slot=director"},
		{"executions-slot-huge", "/tool-executions?session_id=sess_f&caller_slot=" + huge},
		{"executions-status", "/tool-executions?session_id=sess_f&status=SUCCESS"},
		{"executions-lifecycle", "/tool-executions?session_id=sess_f&lifecycle_state=closed"},
		{"executions-commit", "/tool-executions?session_id=sess_f&commit_outcome=%E2%80%8Bcommitted"},
		{"executions-face", "/tool-executions?session_id=sess_f&face=narrator"},
		{"executions-sort-by", "/tool-executions?session_id=sess_f&sort_by=seq"},
		{"executions-sort-order", "/tool-executions?session_id=sess_f&sort_order=%EF%BD%81sc"},
		{"executions-limit-huge", "/tool-executions?session_id=sess_f&limit=" + strings.Repeat("9", 400)},
		{"executions-session-nul", "/tool-executions?session_id=sess%00f"},
		{"executions-session-huge", "/tool-executions?session_id=" + huge},
		{"executions-tool-bad-utf8", "/tool-executions?session_id=sess_f&tool_name=%FF%FE"},
		{"executions-floor-empty", "/tool-executions?floor_id="},
		{"executions-page-space", "/tool-executions?session_id=sess_f&page_id=page%201"},
		{"call-records-status", "/tools/call-records?floor_id=floor_1&status=timeout"},
		{"call-records-sort-by", "/tools/call-records?floor_id=floor_1&sort_by=started_at"},
		{"call-records-page-huge", "/tools/call-records?page_id=" + huge},
		{"call-records-page-bidi", "/tools/call-records?page_id=page_%E2%80%AE1a"},
		{"call-records-page-twice", "/tools/call-records?page_id=page_1a&page_id=page_1b"},
		{"definitions-source", "/tools/definitions?source=mcp"},
		{"definitions-enabled", "/tools/definitions?enabled=yes"},
		{"definitions-sort-by", "/tools/definitions?sort_by=created_at"},
		{"definitions-sort-order", "/tools/definitions?sort_order=DESC"},
		{"definitions-source-id-nul", "/tools/definitions?source=character&source_id=char%00ana"},
	}
	for _, b := range bad {
		steps = append(steps, fieldsStep{name: "bad-" + b.name, path: b.path, status: 400})
	}
	return steps
}

// fieldsCall is one call the test makes through the pipeline.
type fieldsCall struct {
	tool, args   string
	slot, page   string
	floor, run   string
	wantProvider string // the journal's provider_id after the ids' replacer
}

// runCalls makes a call of every kind of tool, on two pages of floor_1
// (a regenerated turn) and on floor_2 without a page, plus calls refused
// before their tool was found.
func (w *fieldsWorld) runCalls(t *testing.T) {
	t.Helper()
	for _, c := range []fieldsCall{
		{tool: "roll_dice", slot: "narrator", page: "page_1a", floor: "floor_1", run: "run_1", wantProvider: "toolhost"},
		{tool: "lookup_npc", slot: "narrator", page: "page_1a", floor: "floor_1", run: "run_1", wantProvider: "preset:lookup_npc"},
		{tool: "demo__echo", args: `{"message":"hi"}`, slot: "director", page: "page_1a", floor: "floor_1", run: "run_1", wantProvider: "mcp:mcpsrv_demo"},
		{tool: "get_character_info", slot: "narrator", page: "page_1b", floor: "floor_1", run: "run_2", wantProvider: "toolhost"},
		{tool: "demo__fail", slot: "narrator", page: "page_1b", floor: "floor_1", run: "run_2", wantProvider: "tooldef:tooldef_demo__fail_custom"},
		{tool: "demo__write", slot: "verifier", page: "page_1b", floor: "floor_1", run: "run_2", wantProvider: "tooldef:tooldef_demo__write_character"},
		{tool: "get_weather_now", slot: "memory", floor: "floor_2", run: "run_3", wantProvider: ""},
		{tool: "roll_dice", slot: "villain", floor: "floor_2", run: "run_3", wantProvider: "toolhost"},
		{tool: "demo__echo", args: `{"message":"hi"}`, slot: "narrator", page: "page 1\x00<script>", floor: "floor_2", run: "run_3", wantProvider: ""},
	} {
		if c.args == "" {
			c.args = `{}`
		}
		out, err := w.ex.Execute(context.Background(), tools.Proposal{Tool: c.tool, Args: json.RawMessage(c.args), CallID: "call_" + c.tool,
			Caller: tools.Caller{Slot: c.slot, Face: "hosted", SessionID: "sess_f", FloorID: c.floor, PageID: c.page, RunID: c.run}})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		rec, err := w.ex.Journal().Store().Get(context.Background(), "local", out.ExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.ids.Replace(rec.ProviderID); got != c.wantProvider {
			t.Errorf("%s: journaled provider %q (%s), want %q", c.tool, got, rec.ProviderType, c.wantProvider)
		}
		if strings.ContainsRune(c.page, 0) && (out.Code != tools.CodeInvalidArgs || rec.PageID != "") {
			t.Errorf("a hostile page id: code %q, stored page %q; want invalid_arguments and none stored", out.Code, rec.PageID)
		}
	}
}

// checkConflictWinnersRun checks that every conflict's winner is what a
// call of that name runs.
func (w *fieldsWorld) checkConflictWinnersRun(t *testing.T) {
	t.Helper()
	cat, err := w.ex.Runtime(context.Background(), "local", "sess_f", "narrator")
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Conflicts) < 5 {
		t.Fatalf("conflicts: %+v", cat.Conflicts)
	}
	for _, c := range cat.Conflicts {
		out, err := w.ex.Execute(context.Background(), tools.Proposal{Tool: c.Name, Args: json.RawMessage(`{}`),
			Caller: tools.Caller{Face: "cli", SessionID: "sess_f", FloorID: "probe"}})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := w.ex.Journal().Store().Get(context.Background(), "local", out.ExecutionID)
		if err != nil || rec.ProviderID != c.Winner {
			t.Errorf("%s: the catalog says %s wins over %v, a call ran %q (%v)", c.Name, c.Winner, c.Shadowed, rec.ProviderID, err)
		}
	}
}

func (w *fieldsWorld) golden(t *testing.T, store string, st fieldsStep) {
	t.Helper()
	status, raw := seedDo(t, w.url, "GET", st.path, "")
	if status != st.status {
		t.Errorf("%s: GET %s: %d, want %d: %s", st.name, clipPath(st.path), status, st.status, raw)
		return
	}
	raw = []byte(w.ids.Replace(string(raw)))
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("%s: %v", st.name, err)
	}
	if st.name == "runtime-conflicts" {
		b = runtimeProjection(b)
	} else if st.project != nil {
		items, _ := b["data"].([]any)
		for i, it := range items {
			m := it.(map[string]any)
			p := map[string]any{}
			for _, f := range st.project {
				p[f] = m[f]
			}
			items[i] = p
		}
	}
	norm, _ := json.Marshal(b)
	got := seedGolden(t, seedStep{name: st.name, method: "GET", path: clipPath(st.path)}, status, norm)
	file := filepath.Join("testdata", "seedfields", st.name+".json")
	if *update && store == "sqlite" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got\n%s\nwant\n%s", file, got, want)
	}
}

// clipPath keeps a golden file's request path readable when a test
// sends a huge value.
func clipPath(p string) string {
	return strings.ReplaceAll(p, strings.Repeat("x", admin.MaxFilterBytes+1), fmt.Sprintf("x…(%d bytes)", admin.MaxFilterBytes+1))
}

// runtimeProjection keeps, of the runtime catalog, the conflicts and the
// tools that share a name: who they are and whether a call reaches them.
func runtimeProjection(b map[string]any) map[string]any {
	data := b["data"].(map[string]any)
	shared := map[string]bool{}
	for _, c := range data["conflicts"].([]any) {
		shared[c.(map[string]any)["name"].(string)] = true
	}
	var kept []any
	for _, it := range data["tools"].([]any) {
		m := it.(map[string]any)
		if !shared[m["name"].(string)] && m["provider_type"] == "builtin" {
			continue
		}
		p := map[string]any{}
		for _, f := range []string{"name", "provider_id", "provider_type", "source", "availability", "availability_reason"} {
			p[f] = m[f]
		}
		kept = append(kept, p)
	}
	return map[string]any{"data": map[string]any{"conflicts": data["conflicts"], "tools": kept}}
}
