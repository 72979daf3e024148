package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/runcode"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// customEnv is a /v1 server whose executor has definitions, sessions and
// the JavaScript sandbox for script handlers, with the journal's routes
// beside it. The account is the X-Test-Account header (what the auth
// middleware would establish from a key), "local" without it.
type customEnv struct {
	*env
	defs     *tooldef.MemStore
	sessions *session.MemStore
}

func newCustomEnv(t *testing.T, rounds ...fakeupstream.Round) *customEnv {
	t.Helper()
	rtDir := t.TempDir()
	js, err := os.ReadFile(filepath.Join("..", "..", "runtimes", sandbox.JavaScriptFile))
	if err != nil {
		t.Fatalf("%v (run make runtimes)", err)
	}
	if err := os.WriteFile(filepath.Join(rtDir, sandbox.JavaScriptFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(context.Background(), sandbox.Options{RuntimesDir: rtDir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	defs, sessions := tooldef.NewMemStore(), session.NewMemStore()
	ex, err := tools.NewExecutor(tools.Options{Definitions: defs, Sessions: sessions, Variables: sessions,
		Scripts: runcode.NewScripts(sb), ScriptsEnabled: true}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	return &customEnv{env: serveAccountLoop(t, ex, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}}), defs: defs, sessions: sessions}
}

// serveAccountLoop serves ex's hosted loops against a fake upstream
// playing script, with the journal's routes; a request's X-Test-Account
// header sets the caller's account.
func serveAccountLoop(t *testing.T, ex *tools.Executor, script fakeupstream.Script) *env {
	t.Helper()
	fake, err := fakeupstream.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	router, _ := loop.NewRouter(&loop.Route{Name: "fake", SupportsTools: true, Upstream: openai.New(openai.Config{Name: "fake", BaseURL: fake.URL()})})
	h := v1.New(v1.Options{Label: "toolhost", Enabled: true, Router: router, Runner: loop.NewRunner(ex, loop.RunnerOptions{})})
	routes := h.Routes()
	for p, hd := range (&admin.Journal{Store: ex.Journal().Store()}).Routes() {
		routes[p] = hd
	}
	inner := pinnedRequestIDs(server.New(server.Options{Routes: routes}).Handler())
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("X-Test-Account"); a != "" {
			r = r.WithContext(identity.NewContext(r.Context(), identity.Identity{AccountID: a}))
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return &env{t: t, label: "toolhost", url: hs.URL, fake: fake}
}

// define stores an enabled script definition of the account.
func (e *customEnv) define(account, name, source, sourceID, script string, slots ...string) {
	e.t.Helper()
	now := time.Now()
	d := tooldef.Definition{ID: "tooldef_" + name + "_" + source, AccountID: account, Name: name, Description: "looks up an NPC",
		Parameters:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":40}},"required":["name"]}`),
		SideEffectLevel: "none", AllowedSlots: slots, Source: source, SourceID: sourceID, Enabled: true,
		HandlerType: tooldef.HandlerScript, Handler: json.RawMessage(`{"script":` + quote(script) + `}`), CreatedAt: now, UpdatedAt: now}
	if err := e.defs.CreateDefinition(context.Background(), d, 0); err != nil {
		e.t.Fatal(err)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (e *customEnv) getJSON(path string) map[string]any {
	e.t.Helper()
	resp, err := http.Get(e.url + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// A definition named with capitals and a dash is declared on the /v1 wire
// by exactly its own name, given to the model with its schema, run in
// the sandbox through the pipeline, and journaled provider_type custom,
// face hosted.
func TestHostedLoopRunsCustomScriptTool(t *testing.T) {
	e := newCustomEnv(t,
		fakeupstream.Round{ToolCalls: []fakeupstream.ToolCall{call("call_npc", "Lookup-NPC", `{"name":"Ana"}`)}},
		fakeupstream.Round{Content: "Ana is here."})
	e.define(tools.LocalAccount, "Lookup-NPC", tooldef.SourceCustom, "", "return { found: true, info: args.name };")
	resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"who?"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["Lookup-NPC"],"require_approval":"never"}]}`,
		map[string]string{"X-Request-Id": "req_custom"})
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	reqs := e.upstreamRequests()
	fn := reqs[0]["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "Lookup-NPC" || fn["description"] != "looks up an NPC" || fn["parameters"].(map[string]any)["required"].([]any)[0] != "name" {
		t.Errorf("definition given to the model: %v", fn)
	}
	result := reqs[1]["messages"].([]any)[2].(map[string]any)["content"].(string)
	if !strings.Contains(result, `"found":true`) || !strings.Contains(result, `"info":"Ana"`) {
		t.Errorf("script result given to the model: %s", result)
	}
	list := e.getJSON("/tool-executions?floor_id=req_custom")
	recs := list["data"].([]any)
	if len(recs) != 1 {
		t.Fatalf("%d records: %v", len(recs), recs)
	}
	r := recs[0].(map[string]any)
	if r["tool_name"] != "Lookup-NPC" || r["provider_type"] != "preset" || r["provider_id"] != "tooldef:tooldef_Lookup-NPC_custom" ||
		r["face"] != "hosted" || r["status"] != "success" {
		t.Errorf("record %v", r)
	}
}

// The session's slot deny list refuses the custom tool in the hosted loop:
// the model sees a failed result naming permission_denied, the journal
// says denied and so does the legacy projection.
func TestHostedCustomToolDeniedBySlotDenyList(t *testing.T) {
	e := newCustomEnv(t,
		fakeupstream.Round{ToolCalls: []fakeupstream.ToolCall{call("call_npc", "Lookup-NPC", `{"name":"Ana"}`)}},
		fakeupstream.Round{Content: "I may not look."})
	e.define(tools.LocalAccount, "Lookup-NPC", tooldef.SourceCustom, "", "return { found: true };")
	p := session.Default()
	p.SlotDenyList = map[string][]string{"verifier": {"Lookup-NPC"}}
	if err := e.sessions.CreateSession(context.Background(), session.Session{ID: "sess_deny", AccountID: tools.LocalAccount, Metadata: json.RawMessage(`{}`), Permissions: p}); err != nil {
		t.Fatal(err)
	}
	resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"who?"}],"metadata":{"session_id":"sess_deny"},"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["Lookup-NPC"]}]}`,
		map[string]string{"X-Request-Id": "req_deny", v1.SlotHeader: "verifier"})
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	var body map[string]any
	_ = json.Unmarshal(resp.body, &body)
	calls := body["toolhost"].(map[string]any)["tool_calls"].([]any)
	if c := calls[0].(map[string]any); c["status"] != "failed" || c["name"] != "Lookup-NPC" {
		t.Errorf("tool_calls %v", calls)
	}
	result := e.upstreamRequests()[1]["messages"].([]any)[2].(map[string]any)["content"].(string)
	if !strings.Contains(result, "[tool error]") || !strings.Contains(result, "deny list of slot verifier") {
		t.Errorf("the model was not told the denial: %s", result)
	}
	r := e.getJSON("/tool-executions?floor_id=req_deny")["data"].([]any)[0].(map[string]any)
	if r["status"] != "denied" || r["caller_slot"] != "verifier" || r["provider_type"] != "preset" || r["session_id"] != "sess_deny" {
		t.Errorf("record %v", r)
	}
	cr := e.getJSON("/tools/call-records?floor_id=req_deny")["data"].([]any)[0].(map[string]any)
	if cr["status"] != "denied" || cr["tool_name"] != "Lookup-NPC" {
		t.Errorf("call record %v", cr)
	}
}

// A character's definition can be declared only in a session playing that
// character; elsewhere, and for another account, it is an unknown hosted
// tool. Names that only look alike are unknown too.
func TestHostedCharacterToolsFollowTheSession(t *testing.T) {
	e := newCustomEnv(t,
		fakeupstream.Round{ToolCalls: []fakeupstream.ToolCall{call("call_secret", "secret_of", `{"name":"Ana"}`)}},
		fakeupstream.Round{Content: "done"})
	e.define("acct_a", "secret_of", tooldef.SourceCharacter, "char_ana", "return { secret: 'owl', of: args.name };")
	ctx := context.Background()
	for _, s := range []session.Session{
		{ID: "sess_ana", AccountID: "acct_a", Character: &session.Character{ID: "char_ana", Name: "Ana", Attributes: json.RawMessage(`{}`)}},
		{ID: "sess_bob", AccountID: "acct_a", Character: &session.Character{ID: "char_bob", Name: "Bob", Attributes: json.RawMessage(`{}`)}},
		{ID: "sess_ana", AccountID: "acct_b", Character: &session.Character{ID: "char_ana", Name: "Ana", Attributes: json.RawMessage(`{}`)}},
	} {
		s.Metadata, s.Permissions = json.RawMessage(`{}`), session.Default()
		if err := e.sessions.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	decl := func(name string) string {
		return `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":[` + quote(name) + `]}]}`
	}
	for _, c := range []struct{ account, session, name string }{
		{"acct_a", "", "secret_of"},
		{"acct_a", "sess_bob", "secret_of"},
		{"acct_a", "sess_nobody", "secret_of"},
		{"acct_b", "sess_ana", "secret_of"},
		{"acct_a", "sess_ana", "secret\u200b_of"},
		{"acct_a", "sess_ana", "ѕecret_of"}, // Cyrillic dze
		{"acct_a", "sess_ana", "SECRET_OF"},
		{"acct_a", "sess_ana", strings.Repeat("s", 100000)},
	} {
		resp := e.post(ctx, decl(c.name), map[string]string{"X-Test-Account": c.account, "X-Session-Id": c.session})
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "unknown_hosted_tool") {
			t.Errorf("%s/%s/%.20q: status %d: %.300s", c.account, c.session, c.name, resp.status, resp.body)
		}
	}
	if n := len(e.upstreamRequests()); n != 0 {
		t.Fatalf("%d upstream calls for refused requests", n)
	}
	resp := e.post(ctx, decl("secret_of"), map[string]string{"X-Test-Account": "acct_a", "X-Session-Id": "sess_ana", "X-Request-Id": "req_char"})
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if got := e.upstreamRequests()[1]["messages"].([]any)[2].(map[string]any)["content"].(string); !strings.Contains(got, `"secret":"owl"`) {
		t.Errorf("character tool result %s", got)
	}
}

// Without allowed_tools a declaration enables every tool of the caller:
// the published ones, the session builtins of a named session, and the
// account's custom tools after them.
func TestHostedDeclarationWithoutAllowedToolsIncludesCustomTools(t *testing.T) {
	e := newCustomEnv(t, fakeupstream.Round{Content: "hi"})
	e.define(tools.LocalAccount, "Lookup-NPC", tooldef.SourceCustom, "", "return {};")
	e.define("other", "Not-Mine", tooldef.SourceCustom, "", "return {};")
	resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"session_id":"s1"},"tools":[{"type":"mcp","server_label":"toolhost"}]}`, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	var names []string
	for _, f := range e.upstreamRequests()[0]["tools"].([]any) {
		names = append(names, f.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	got := strings.Join(names, ",")
	if !strings.HasSuffix(got, ",get_character_info,get_variable,query_memory,set_variable,Lookup-NPC") || strings.Contains(got, "Not-Mine") {
		t.Errorf("hosted tools %s", got)
	}
}

// Hostile declarations of custom tools: a huge allowed_tools list, a name
// repeated, a definition name in a toolset's configs of another account.
// Each is answered at once, and the error quotes a bounded list.
func TestHostedCustomToolHostileDeclarations(t *testing.T) {
	e := newCustomEnv(t, fakeupstream.Round{Content: "ok"})
	e.define(tools.LocalAccount, "Lookup-NPC", tooldef.SourceCustom, "", "return {};")
	names := make([]string, 50000)
	for i := range names {
		names[i] = fmt.Sprintf("Lookup-NPC-%d", i)
	}
	huge, _ := json.Marshal(names)
	resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":`+string(huge)+`}]}`, nil)
	if resp.status != http.StatusBadRequest || len(resp.body) > 8<<10 || !strings.Contains(string(resp.body), "unknown_hosted_tool") {
		t.Errorf("huge allowed_tools: %d, %d bytes: %.300s", resp.status, len(resp.body), resp.body)
	}
	// The same name twice is one tool, given to the model once.
	resp = e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["Lookup-NPC","Lookup-NPC"]}]}`, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("repeated name: %d %s", resp.status, resp.body)
	}
	if fns := e.upstreamRequests()[0]["tools"].([]any); len(fns) != 1 {
		t.Errorf("the model got %d definitions: %v", len(fns), fns)
	}
}

// The other two formats host custom tools the same way: Responses lists
// the definition in mcp_list_tools and reports its mcp_call; Messages
// enables it through an mcp_toolset's configs and returns its
// mcp_tool_use and mcp_tool_result blocks.
func TestHostedCustomToolInResponsesAndMessages(t *testing.T) {
	rounds := []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_npc", "Lookup-NPC", `{"name":"Ana"}`)}},
		{Content: "Ana is here."},
	}
	e := newCustomEnv(t, rounds...)
	e.define(tools.LocalAccount, "Lookup-NPC", tooldef.SourceCustom, "", "return { found: true, info: args.name };")
	resp := e.postTo("/v1/responses", `{"model":"m","input":"who?","tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["Lookup-NPC"],"require_approval":"never"}]}`, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("responses: %d %s", resp.status, resp.body)
	}
	var rb struct {
		Output []map[string]any `json:"output"`
	}
	_ = json.Unmarshal(resp.body, &rb)
	if len(rb.Output) < 2 || rb.Output[0]["type"] != "mcp_list_tools" || rb.Output[1]["type"] != "mcp_call" || rb.Output[1]["name"] != "Lookup-NPC" ||
		!strings.Contains(fmt.Sprint(rb.Output[1]["output"]), `"info":"Ana"`) {
		t.Errorf("responses output %v", rb.Output)
	}
	if listed := rb.Output[0]["tools"].([]any)[0].(map[string]any); listed["name"] != "Lookup-NPC" || listed["description"] != "looks up an NPC" {
		t.Errorf("mcp_list_tools %v", listed)
	}

	e2 := newCustomEnv(t, rounds...)
	e2.define(tools.LocalAccount, "Lookup-NPC", tooldef.SourceCustom, "", "return { found: true, info: args.name };")
	resp = e2.postTo("/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"who?"}],`+
		`"mcp_servers":[{"type":"url","url":"https://example.invalid/mcp","name":"toolhost"}],`+
		`"tools":[{"type":"mcp_toolset","mcp_server_name":"toolhost","default_config":{"enabled":false},"configs":{"Lookup-NPC":{"enabled":true}}}]}`, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("messages: %d %s", resp.status, resp.body)
	}
	if b := string(resp.body); !strings.Contains(b, `"type":"mcp_tool_use"`) || !strings.Contains(b, `"name":"Lookup-NPC"`) || !strings.Contains(b, `"type":"mcp_tool_result"`) {
		t.Errorf("messages body %s", b)
	}
	if fns := e2.upstreamRequests()[0]["tools"].([]any); len(fns) != 1 {
		t.Errorf("the model got %d definitions: %v", len(fns), fns)
	}
}

// When the account's definitions cannot be read (here: the SQLite store
// is closed), a declaration is a 503 hosted_tools_unavailable, not an
// unknown_hosted_tool; a request declaring nothing is not affected.
func TestHostedDeclarationWithUnreadableDefinitions(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ex, err := tools.NewExecutor(tools.Options{Definitions: db}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{{Content: "hi"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	router, _ := loop.NewRouter(&loop.Route{Name: "fake", SupportsTools: true, Upstream: openai.New(openai.Config{Name: "fake", BaseURL: fake.URL()})})
	h := v1.New(v1.Options{Label: "toolhost", Enabled: true, Router: router, Runner: loop.NewRunner(ex, loop.RunnerOptions{})})
	hs := httptest.NewServer(pinnedRequestIDs(server.New(server.Options{Routes: h.Routes()}).Handler()))
	t.Cleanup(hs.Close)
	e := &env{t: t, label: "toolhost", url: hs.URL, fake: fake}
	resp := e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"toolhost","allowed_tools":["get_time"]}]}`, nil)
	if resp.status != http.StatusServiceUnavailable || !strings.Contains(string(resp.body), "hosted_tools_unavailable") || strings.Contains(string(resp.body), "toolhost.db") {
		t.Errorf("declaration: %d %s", resp.status, resp.body)
	}
	resp = e.post(context.Background(), `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.status != http.StatusOK {
		t.Errorf("no declaration: %d %s", resp.status, resp.body)
	}
}
