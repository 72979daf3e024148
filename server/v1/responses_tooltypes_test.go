package v1_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/websearch"
)

// codexTools are tools of the kinds Codex CLI declares: a function, a
// namespace holding a function and a custom tool, a custom tool with a
// grammar, tool_search, and a deferred function.
const codexTools = `[
 {"type":"function","name":"shell","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},
 {"type":"namespace","name":"crm","description":"Customer records","tools":[
  {"type":"function","name":"lookup","description":"Find a customer","parameters":{"type":"object","properties":{"id":{"type":"string"}}}},
  {"type":"custom","name":"note","description":"Free-text note"}]},
 {"type":"custom","name":"apply_patch","description":"Edit files","format":{"type":"grammar","syntax":"lark","definition":"start: \"*** Begin Patch\" /(.|\\n)*/"}},
 {"type":"tool_search"},
 {"type":"function","name":"later","defer_loading":true,"parameters":{"type":"object","properties":{}}}
]`

// codexFields are request fields Codex CLI sends that Chat Completions
// does not have (or, prompt_cache_key, has).
const codexFields = `"client_metadata":{"x-codex-turn":"1"},"prompt_cache_key":"conv-1","include":["reasoning.encrypted_content"],"store":false,"reasoning":{"effort":"low","summary":"auto"},"context_management":[{"type":"compaction"}],"parallel_tool_calls":false`

var toolTypeCases = []responsesCase{
	{
		// The model calls a namespaced function and a custom tool: they
		// come back as a function_call with its namespace apart and a
		// custom_tool_call whose input is the string; the upstream got
		// plain functions and none of the Responses-only fields.
		name: "namespace_and_custom_calls",
		rounds: []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{
			call("call_l", "crm__lookup", `{"id":"c-7"}`),
			call("call_p", "apply_patch", `{"input":"*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"}`),
		}, ArgsChunk: 5, Usage: usage(30, 9, 0, 0)}},
		body: `{"model":"fake-1","instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox: none"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}],"tools":` + codexTools + `,"tool_choice":"auto",` + codexFields + `}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "function_call custom_tool_call" {
				t.Fatalf("output items %s", got)
			}
			items := out["output"].([]any)
			fc, ct := items[0].(map[string]any), items[1].(map[string]any)
			if fc["name"] != "lookup" || fc["namespace"] != "crm" || fc["arguments"] != `{"id":"c-7"}` || fc["call_id"] != "call_l" {
				t.Errorf("function_call %v", fc)
			}
			if ct["name"] != "apply_patch" || ct["input"] != "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch" || ct["call_id"] != "call_p" || ct["namespace"] != nil {
				t.Errorf("custom_tool_call %v", ct)
			}
			checkUpstreamTools(t, e, p)
		},
	},
	{
		// A continuation carrying those calls, their outputs, a web search
		// and reasoning: the model sees the calls under their upstream
		// names (a custom tool's input as its one argument) and the
		// outputs as tool results.
		name: "namespace_and_custom_continuation",
		// The fake answers a request by its assistant turns: one here.
		rounds: []fakeupstream.Round{{Content: "unused"}, {Content: "Patched; customer c-7 noted.", Usage: usage(60, 7, 0, 0)}},
		body: `{"model":"fake-1","input":[
 {"type":"message","role":"user","content":"fix it"},
 {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"},
 {"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}},
 {"type":"function_call","call_id":"call_l","name":"lookup","namespace":"crm","arguments":"{\"id\":\"c-7\"}"},
 {"type":"custom_tool_call","call_id":"call_p","name":"apply_patch","input":"*** Begin Patch"},
 {"type":"function_call_output","call_id":"call_l","output":"{\"name\":\"Ada\"}"},
 {"type":"custom_tool_call_output","call_id":"call_p","output":[{"type":"input_text","text":"Done!"}]}
],"tools":` + codexTools + `,` + codexFields + `}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "message" {
				t.Fatalf("output items %s", got)
			}
			if p != loop.DialectOpenAI {
				return
			}
			msgs := e.upstreamRequests()[0]["messages"].([]any)
			golden(t, "responses_namespace_and_custom_continuation.upstream_messages.golden", encodeJSON(msgs, true))
		},
	},
	{
		// The tools the caller runs with an item type of their own: the
		// model calls apply_patch and shell as functions, the calls come
		// back as apply_patch_call and shell_call items.
		name: "apply_patch_and_shell_calls",
		rounds: []fakeupstream.Round{{Content: "Editing.", ToolCalls: []fakeupstream.ToolCall{
			call("call_ap", "apply_patch", `{"type":"update_file","path":"a.go","diff":"@@\n-a\n+b"}`),
			call("call_sh", "shell", `{"commands":["go test ./..."],"timeout_ms":60000}`),
		}, ArgsChunk: 7, Usage: usage(20, 9, 0, 0)}},
		body: `{"model":"fake-1","input":"fix it","tools":[{"type":"apply_patch"},{"type":"shell","environment":{"type":"local"}}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "message apply_patch_call shell_call" {
				t.Fatalf("output items %s", got)
			}
			items := out["output"].([]any)
			ap, sh := items[1].(map[string]any), items[2].(map[string]any)
			if op := ap["operation"].(map[string]any); op["type"] != "update_file" || op["path"] != "a.go" || op["diff"] != "@@\n-a\n+b" || ap["call_id"] != "call_ap" || ap["id"] != "apc_call_ap" {
				t.Errorf("apply_patch_call %v", ap)
			}
			if a := sh["action"].(map[string]any); fmt.Sprint(a["commands"]) != "[go test ./...]" || jsonInt(a["timeout_ms"]) != 60000 || a["max_output_length"] != nil || sh["call_id"] != "call_sh" {
				t.Errorf("shell_call %v", sh)
			}
			names := []string{}
			for _, tl := range e.upstreamRequests()[0]["tools"].([]any) {
				m := tl.(map[string]any)
				if f, ok := m["function"].(map[string]any); ok {
					names = append(names, f["name"].(string))
				} else {
					names = append(names, m["name"].(string))
				}
			}
			if strings.Join(names, " ") != "apply_patch shell" {
				t.Errorf("upstream tools %v", names)
			}
		},
	},
	{
		// codex-mini's legacy local_shell: a function whose arguments are
		// the exec action, its call a local_shell_call item; the item and
		// its local_shell_call_output sent back are the function's round
		// trip.
		name: "local_shell_call",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_ls", "local_shell", `{"command":["ls","-la"],"working_directory":"/tmp"}`)}, Usage: usage(20, 5, 0, 0)},
			{Content: "Listed.", Usage: usage(40, 3, 0, 0)},
		},
		body: `{"model":"fake-1","input":"list files","tools":[{"type":"local_shell"}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "local_shell_call" {
				t.Fatalf("output items %s", got)
			}
			ls := out["output"].([]any)[0].(map[string]any)
			a := ls["action"].(map[string]any)
			if ls["id"] != "lsh_call_ls" || ls["call_id"] != "call_ls" || a["type"] != "exec" || fmt.Sprint(a["command"]) != "[ls -la]" || a["working_directory"] != "/tmp" || a["timeout_ms"] != nil || len(a["env"].(map[string]any)) != 0 {
				t.Errorf("local_shell_call %v", ls)
			}
			if stream {
				return
			}
			// Sent back with its output (by the call's id, as the API's
			// local_shell_call_output names it), the model reads the round
			// trip and answers.
			next := `{"model":"fake-1","tools":[{"type":"local_shell"}],"input":[{"role":"user","content":"list files"},` + string(encodeJSON(ls, false)) +
				`,{"type":"local_shell_call_output","id":"call_ls","output":"a.txt\nb.txt"}]}`
			resp := e.postTo("/v1/responses", next, nil)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			reqs := e.upstreamRequests()
			msgs := reqs[len(reqs)-1]["messages"].([]any)
			if p == loop.DialectOpenAI && (len(msgs) != 3 || msgs[2].(map[string]any)["content"] != "a.txt\nb.txt" || msgs[2].(map[string]any)["tool_call_id"] != "call_ls") {
				t.Errorf("upstream messages %v", msgs)
			}
		},
	},
	{
		// Their calls and outputs sent back: the model sees the function
		// round trips.
		name:   "apply_patch_and_shell_continuation",
		rounds: []fakeupstream.Round{{Content: "unused"}, {Content: "Tests pass.", Usage: usage(40, 3, 0, 0)}},
		body: `{"model":"fake-1","input":[
 {"role":"user","content":"fix it"},
 {"type":"apply_patch_call","id":"apc_1","call_id":"call_ap","status":"completed","operation":{"type":"update_file","path":"a.go","diff":"@@\n-a\n+b"}},
 {"type":"shell_call","id":"sh_1","call_id":"call_sh","status":"completed","environment":null,"action":{"commands":["go test ./..."],"timeout_ms":60000,"max_output_length":null}},
 {"type":"apply_patch_call_output","call_id":"call_ap","status":"failed","output":"a.go: no such file"},
 {"type":"shell_call_output","call_id":"call_sh","max_output_length":null,"output":[{"stdout":"ok","stderr":"","outcome":{"type":"exit","exit_code":0}}]}
],"tools":[{"type":"apply_patch"},{"type":"shell"}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "message" {
				t.Fatalf("output items %s", got)
			}
			if p != loop.DialectOpenAI {
				return
			}
			msgs := e.upstreamRequests()[0]["messages"].([]any)
			golden(t, "responses_apply_patch_and_shell_continuation.upstream_messages.golden", encodeJSON(msgs, true))
		},
	},
}

// checkUpstreamTools checks what the upstream got for codexTools and
// codexFields: functions under their upstream names, the grammar told in
// the custom tool's input description, prompt_cache_key kept, the
// Responses-only fields left out (the body as a golden file).
func checkUpstreamTools(t *testing.T, e *env, p loop.Dialect) {
	t.Helper()
	reqs := e.upstreamRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream calls", len(reqs))
	}
	r := reqs[0]
	var names []string
	for _, tl := range r["tools"].([]any) {
		m := tl.(map[string]any)
		if f, ok := m["function"].(map[string]any); ok {
			names = append(names, f["name"].(string))
		} else {
			names = append(names, m["name"].(string))
		}
	}
	if got := strings.Join(names, " "); got != "shell crm__lookup crm__note apply_patch later" {
		t.Errorf("upstream tools %s", got)
	}
	if p != loop.DialectOpenAI {
		return
	}
	for _, k := range []string{"client_metadata", "include", "store", "context_management", "reasoning"} {
		if _, ok := r[k]; ok {
			t.Errorf("%s sent to a Chat Completions upstream", k)
		}
	}
	if r["prompt_cache_key"] != "conv-1" || r["reasoning_effort"] != "low" || r["parallel_tool_calls"] != false {
		t.Errorf("forwarded fields: prompt_cache_key=%v reasoning_effort=%v parallel_tool_calls=%v", r["prompt_cache_key"], r["reasoning_effort"], r["parallel_tool_calls"])
	}
	delete(r, "stream")
	delete(r, "stream_options")
	golden(t, "responses_namespace_and_custom_calls.upstream.golden", encodeJSON(r, true))
}

func TestResponsesToolTypesGolden(t *testing.T) {
	for _, p := range protocols {
		for _, tc := range toolTypeCases {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%s", p, tc.name, modeName(stream)), func(t *testing.T) {
					e := newProtocolEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
					runResponsesCase(t, e, p, tc, stream)
				})
			}
		}
	}
}

// The stream of a custom tool call: added (input ""), the input whole in
// one delta, input done, then output_item.done; a namespaced function's
// deltas and done event carry its own name.
func TestResponsesStreamsCustomAndNamespacedCalls(t *testing.T) {
	tc := toolTypeCases[0]
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
			resp := e.postTo("/v1/responses", withStream(tc.body), nil)
			steps := map[string][]string{}
			for _, ev := range namedEvents(t, resp.body) {
				id, _ := ev.data["item_id"].(string)
				if item, ok := ev.data["item"].(map[string]any); ok {
					id, _ = item["id"].(string)
				}
				steps[id] = append(steps[id], strings.TrimPrefix(ev.name, "response."))
				if ev.name == "response.function_call_arguments.done" && ev.data["name"] != "lookup" {
					t.Errorf("arguments.done names %v", ev.data["name"])
				}
				if ev.name == "response.custom_tool_call_input.done" && !strings.HasPrefix(fmt.Sprint(ev.data["input"]), "*** Begin Patch\n") {
					t.Errorf("input.done %v", ev.data["input"])
				}
			}
			if got := strings.Join(steps["ctc_call_p"], " "); got != "output_item.added custom_tool_call_input.delta custom_tool_call_input.done output_item.done" {
				t.Errorf("custom tool call events: %s", got)
			}
			if got := steps["fc_call_l"]; len(got) < 4 || got[1] != "function_call_arguments.delta" || got[len(got)-2] != "function_call_arguments.done" {
				t.Errorf("namespaced function call events: %v", got)
			}
		})
	}
}

// Tools Responses defines that neither the upstream nor toolhost can run
// are refused by name and reason; hostile tool lists are refused clearly.
func TestResponsesRefusesToolsItCannotExpress(t *testing.T) {
	const user = `"model":"fake-1","input":"hi"`
	long := strings.Repeat("n", 70)
	cases := []struct {
		name, tools, reason, contains string
	}{
		{"file_search", `[{"type":"file_search","vector_store_ids":["vs_1"]}]`, "tool_type_unsupported", "vector stores"},
		{"computer", `[{"type":"computer_use_preview","display_width":1,"display_height":1,"environment":"linux"}]`, "tool_type_unsupported", `"computer_use_preview"`},
		{"image_generation", `[{"type":"image_generation"}]`, "tool_type_unsupported", "image model"},
		{"code_interpreter", `[{"type":"code_interpreter","container":{"type":"auto"}}]`, "tool_type_unsupported", "run_code"},
		{"shell_and_function_named_shell", `[{"type":"shell"},{"type":"function","name":"shell","parameters":{}}]`, "invalid_request", `"shell"`},
		{"namespace_of_mcp", `[{"type":"namespace","name":"x","description":"","tools":[{"type":"mcp","server_label":"a"}]}]`, "tool_type_unsupported", `not "mcp"`},
		{"namespace_without_name", `[{"type":"namespace","tools":[]}]`, "invalid_request", "namespace tool needs a name"},
		{"custom_without_name", `[{"type":"custom"}]`, "invalid_request", "custom tool needs a name"},
		{"custom_bad_format", `[{"type":"custom","name":"c","format":{"type":"xml"}}]`, "invalid_request", `"xml"`},
		{"two_tools_one_upstream_name", `[{"type":"function","name":"a__b","parameters":{}},{"type":"namespace","name":"a","description":"","tools":[{"type":"function","name":"b"}]}]`, "invalid_request", `"a__b"`},
		{"function_and_custom_same_name", `[{"type":"function","name":"x","parameters":{}},{"type":"custom","name":"x"}]`, "invalid_request", `"x"`},
		{"namespace_name_too_long", `[{"type":"namespace","name":"` + long + `","description":"","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}]`, "invalid_request", "two tools"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "toolhost", nil)
			resp := e.postTo("/v1/responses", `{`+user+`,"tools":`+tc.tools+`}`, nil)
			if resp.status != http.StatusBadRequest {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			body := string(resp.body)
			if !strings.Contains(body, `"reason":"`+tc.reason+`"`) || !strings.Contains(body, jsonQuoted(tc.contains)) {
				t.Errorf("body %s, want reason %s and %s", body, tc.reason, tc.contains)
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Errorf("%d upstream calls", n)
			}
		})
	}
}

// jsonQuoted is s as it appears inside a JSON string.
func jsonQuoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// A namespaced name that is too long or not a function name still maps
// to one function name of at most 64 characters, and back.
func TestResponsesLongNamespacedNameRoundTrips(t *testing.T) {
	ns, fn := strings.Repeat("é", 40), "lookup.v2"
	e := newEnv(t, "toolhost", []fakeupstream.Round{{Content: "ok"}})
	body := `{"model":"fake-1","input":"hi","tools":[{"type":"namespace","name":"` + ns + `","description":"","tools":[{"type":"function","name":"` + fn + `"}]}]}`
	_ = e.postTo("/v1/responses", body, nil)
	reqs := e.upstreamRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream calls", len(reqs))
	}
	name := reqs[0]["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["name"].(string)
	if len(name) > 64 || strings.ContainsAny(name, ".é") {
		t.Fatalf("upstream name %q", name)
	}
	e2 := newEnv(t, "toolhost", []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{call("c1", name, `{}`)}}})
	resp := e2.postTo("/v1/responses", body, nil)
	out := decodeJSON(t, resp.body).(map[string]any)
	fc := out["output"].([]any)[0].(map[string]any)
	if fc["name"] != fn || fc["namespace"] != ns {
		t.Errorf("function_call %v", fc)
	}
}

// searxngTools publishes web_search over a SearXNG fixture on 127.0.0.1
// that replays the web_search package's recorded answer.
func searxngTools(t *testing.T) []tools.Tool {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "tools", "websearch", "testdata", "searxng", "search"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("q") == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	ws, err := websearch.New(websearch.Config{Providers: []websearch.ProviderConfig{{Kind: "searxng", BaseURL: srv.URL}}, Cache: websearch.CacheConfig{MemoryOnly: true}}, websearch.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return []tools.Tool{ws}
}

// citedURL is a result of the SearXNG fixture, as web_search normalizes it.
const citedURL = "https://pubs.acs.org/doi/10.1021/acsenergylett.3c00001"

// The web_search tool of the Responses API, served by the hosted
// web_search: a web_search_call item (no mcp_list_tools), the answer's link
// to a result annotated as a url_citation, the declared domain filters in
// the arguments the tool ran with whatever the model wrote, the call run
// by the executor like any hosted call.
var webSearchCases = []responsesCase{{
	name: "web_search_served",
	rounds: []fakeupstream.Round{
		{Content: "Searching.", ToolCalls: []fakeupstream.ToolCall{call("call_s", "web_search", `{"query":"perovskite encapsulation","allowed_domains":["evil.example"]}`)}, Usage: usage(40, 6, 0, 0)},
		{Content: "Édge sealing works: see " + citedURL + " (ACS).", Usage: usage(90, 12, 0, 0)},
	},
	body: `{"model":"fake-1","input":"how to seal perovskites?","tools":[{"type":"web_search","filters":{"allowed_domains":["acs.org","nature.com"]},"user_location":{"type":"approximate","country":"FR"},"search_context_size":"low"}],"include":["web_search_call.action.sources"]}`,
	check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
		if got := itemTypes(out); got != "message web_search_call message" {
			t.Fatalf("output items %s", got)
		}
		items := out["output"].([]any)
		ws := items[1].(map[string]any)
		action := ws["action"].(map[string]any)
		if ws["status"] != "completed" || action["type"] != "search" || action["query"] != "perovskite encapsulation" || !strings.Contains(fmt.Sprint(action["sources"]), citedURL) {
			t.Errorf("web_search_call %v", ws)
		}
		if strings.Contains(fmt.Sprint(action["sources"]), "wikipedia") {
			t.Errorf("a result outside the allowed domains: %v", action["sources"])
		}
		part := items[2].(map[string]any)["content"].([]any)[0].(map[string]any)
		anns := part["annotations"].([]any)
		if len(anns) != 1 {
			t.Fatalf("annotations %v", anns)
		}
		a := anns[0].(map[string]any)
		text := []rune(part["text"].(string))
		start, end := jsonInt(a["start_index"]), jsonInt(a["end_index"])
		if a["type"] != "url_citation" || a["url"] != citedURL || start < 0 || end > len(text) || string(text[start:end]) != citedURL || a["title"] == "" {
			t.Errorf("annotation %v over %q", a, string(text))
		}
		props := e.exec.Proposals()
		if len(props) != 1 || props[0].Tool != "web_search" {
			t.Fatalf("proposals %v", props)
		}
		var args struct {
			Query          string   `json:"query"`
			AllowedDomains []string `json:"allowed_domains"`
		}
		if err := json.Unmarshal(props[0].Args, &args); err != nil || strings.Join(args.AllowedDomains, ",") != "acs.org,nature.com" || args.Query != "perovskite encapsulation" {
			t.Errorf("web_search ran with %s", props[0].Args)
		}
		calls := out["LABEL"].(map[string]any)["tool_calls"].([]any)
		if len(calls) != 1 || calls[0].(map[string]any)["status"] != "done" {
			t.Errorf("extension tool_calls %v", calls)
		}
	},
}}

func TestResponsesWebSearchServed(t *testing.T) {
	for _, p := range protocols {
		for _, tc := range webSearchCases {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%s", p, tc.name, modeName(stream)), func(t *testing.T) {
					e := newToolsEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}}, tools.Options{}, searxngTools(t))
					body := runResponsesCase(t, e, p, tc, stream)
					if !stream {
						return
					}
					var seq []string
					for _, ev := range namedEvents(t, body) {
						if strings.Contains(ev.name, "web_search_call") || strings.Contains(ev.name, "annotation") {
							seq = append(seq, strings.TrimPrefix(ev.name, "response."))
						}
					}
					if got := strings.Join(seq, " "); got != "web_search_call.in_progress web_search_call.searching web_search_call.completed output_text.annotation.added" {
						t.Errorf("events %s", got)
					}
				})
			}
		}
	}
}
