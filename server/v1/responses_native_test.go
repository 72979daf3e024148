package v1_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/server/v1/upstream/responses"
)

// responsesProtocols are the upstream protocols /v1/responses is tested
// over: the two canonical translations and a Responses provider.
var responsesProtocols = append(protocols[:len(protocols):len(protocols)], loop.DialectResponses)

// providerSearch is a web search the provider ran itself.
const providerSearch = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"noon"}}`

// nativeRounds: the model reasons, the provider searches, the model calls
// a hosted tool; then it reasons and calls the caller's function; then,
// once the caller answered, it speaks.
var nativeRounds = []fakeupstream.Round{
	{Reasoning: "plan", Items: []json.RawMessage{json.RawMessage(providerSearch)}, ToolCalls: []fakeupstream.ToolCall{call("call_t", "get_time", `{"timezone":"UTC"}`)},
		Usage: json.RawMessage(`{"input_tokens":50,"input_tokens_details":{"cached_tokens":10},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":59}`)},
	{Reasoning: "answer", Content: "It is noon.", Annotations: []json.RawMessage{json.RawMessage(`{"type":"url_citation","start_index":6,"end_index":10,"url":"https://example.org/time","title":"Time"}`)}, ToolCalls: []fakeupstream.ToolCall{call("call_w", "get_weather", `{"city":"Paris"}`)}, Usage: usage(80, 6, 0, 2)},
	{Content: "Noon and sunny.", Usage: usage(120, 4, 0, 0)},
}

// nativeBody is a Codex-like request: earlier reasoning in the input,
// built-in tools, and members only a Responses provider reads.
const nativeBody = `{"model":"fake-1","input":[{"role":"user","content":"hello"},` +
	`{"type":"reasoning","id":"rs_prev","summary":[],"encrypted_content":"enc_prev"},` +
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi."}]},` +
	`{"role":"user","content":"time and weather?"}],` +
	`"tools":[` + weatherFnFlat + `,{"type":"web_search","filters":{"allowed_domains":["example.org"]}},{"type":"file_search","vector_store_ids":["vs_1"]},` +
	`{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"}],` +
	`"include":["reasoning.encrypted_content"],"store":false,"reasoning":{"effort":"low","summary":"auto"},"prompt_cache_key":"k1",` +
	`"client_metadata":{"x":"y"},"text":{"verbosity":"low"},"truncation":"auto","max_output_tokens":500}`

// Over a Responses route, /v1/responses keeps what the provider gives
// natively: the caller's members and built-in tools reach it as they came,
// the earlier reasoning item goes back in its place, the provider's
// reasoning and web_search_call items come back to the caller and, within
// the run, to the provider in the next round, its url_citation on the
// text with it; the hosted tool still runs
// here and the caller's function call ends the run.
func TestResponsesNativeGolden(t *testing.T) {
	tc := responsesCase{
		name:   "native_reasoning_and_builtin",
		rounds: nativeRounds,
		body:   nativeBody,
		check: func(t *testing.T, e *env, _ loop.Dialect, _ bool, out map[string]any) {
			if got := itemTypes(out); got != "mcp_list_tools reasoning web_search_call mcp_call reasoning message function_call" {
				t.Errorf("output items %s", got)
			}
			text := out["output"].([]any)[5].(map[string]any)["content"].([]any)[0].(map[string]any)
			if notes := fmt.Sprint(text["annotations"]); notes != "[map[end_index:10 start_index:6 title:Time type:url_citation url:https://example.org/time]]" {
				t.Errorf("annotations %s", notes)
			}
			if u := out["usage"].(map[string]any); fmt.Sprint(u["output_tokens_details"]) != "map[reasoning_tokens:6]" {
				t.Errorf("usage %v", u)
			}
			var names []string
			for _, p := range e.exec.Proposals() {
				names = append(names, p.Tool)
			}
			if !slices.Equal(names, []string{"get_time"}) {
				t.Errorf("hosted calls %v: the provider's web search is not toolhost's", names)
			}
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("%d upstream calls", len(reqs))
			}
			first := reqs[0]
			for k, want := range map[string]string{"include": `["reasoning.encrypted_content"]`, "store": "false", "reasoning": `{"effort":"low","summary":"auto"}`,
				"prompt_cache_key": `"k1"`, "client_metadata": `{"x":"y"}`, "text": `{"verbosity":"low"}`, "truncation": `"auto"`, "max_output_tokens": "500"} {
				if got := string(encodeJSON(first[k], false)); strings.TrimSpace(got) != want {
					t.Errorf("upstream %s = %s, want %s as sent", k, got, want)
				}
			}
			if _, ok := first["max_tokens"]; ok {
				t.Errorf("a Chat Completions translation reached the provider: %v", first)
			}
			if got := inputTypes(first); got != "message reasoning message message" {
				t.Errorf("first input %s", got)
			}
			if got := toolTypes(first); got != "function:get_weather function:get_time web_search file_search" {
				t.Errorf("first tools %s", got)
			}
			if got := inputTypes(reqs[1]); got != "message reasoning message message reasoning web_search_call function_call function_call_output" {
				t.Errorf("second input %s", got)
			}
			if s := string(encodeJSON(reqs[1]["input"], false)); !strings.Contains(s, `"encrypted_content":"enc_fake:plan"`) || !strings.Contains(s, `"id":"ws_1"`) {
				t.Errorf("second input lost the provider's items: %s", s)
			}
		},
	}
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
			runResponsesCase(t, e, loop.DialectResponses, tc, stream)
		})
	}
}

// The output sent back as input continues the run: the reasoning and
// web_search_call items go back to the provider in their turns, the
// mcp_call becomes the function call round trip, mcp_list_tools is left
// out.
func TestResponsesNativeContinuation(t *testing.T) {
	e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: nativeRounds}}})
	first := e.postTo("/v1/responses", nativeBody, nil)
	if first.status != http.StatusOK {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	var resp struct {
		Output []json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(first.body, &resp); err != nil {
		t.Fatal(err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.ReplaceAll(nativeBody, "LABEL", e.label)), &body); err != nil {
		t.Fatal(err)
	}
	var input []json.RawMessage
	_ = json.Unmarshal(body["input"], &input)
	input = append(input, resp.Output...)
	input = append(input, json.RawMessage(`{"type":"function_call_output","call_id":"call_w","output":"sunny"}`))
	body["input"], _ = json.Marshal(input)
	next, _ := json.Marshal(body)
	second := e.postTo("/v1/responses", string(next), nil)
	if second.status != http.StatusOK {
		t.Fatalf("status %d: %s", second.status, second.body)
	}
	if !strings.Contains(string(second.body), "Noon and sunny.") {
		t.Fatalf("answer %s", second.body)
	}
	reqs := e.upstreamRequests()
	last := reqs[len(reqs)-1]
	want := "message reasoning message message reasoning web_search_call function_call function_call_output reasoning message function_call function_call_output"
	if got := inputTypes(last); got != want {
		t.Errorf("continued input %s,\nwant %s", got, want)
	}
}

// The Chat Completions and Messages faces work over a Responses route
// through the canonical translation: the provider gets input items, the
// hosted tool runs, the answer is the face's own format, and the
// reasoning item of a round goes back to the provider in the next.
func TestCanonicalFacesOverAResponsesRoute(t *testing.T) {
	rounds := []fakeupstream.Round{
		{Reasoning: "plan", ToolCalls: []fakeupstream.ToolCall{call("call_t", "get_time", `{"timezone":"UTC"}`)}, Usage: usage(20, 5, 0, 1)},
		{Content: "It is noon.", Usage: usage(40, 3, 0, 0), ChunkRunes: 100},
	}
	bodies := map[string]string{
		"/v1/chat/completions": `{"model":"fake-1","messages":[{"role":"user","content":"time?"}],"max_tokens":100,"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"}]}`,
		"/v1/messages":         `{"model":"fake-1","max_tokens":100,"messages":[{"role":"user","content":"time?"}],"mcp_servers":[{"type":"url","url":"https://example.org/mcp","name":"LABEL"}],"tools":[{"type":"mcp_toolset","mcp_server_name":"LABEL"}]}`,
	}
	for path, body := range bodies {
		for _, stream := range []bool{false, true} {
			t.Run(path+"/"+modeName(stream), func(t *testing.T) {
				e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}})
				b := body
				if stream {
					b = withStream(b)
				}
				resp := e.postTo(path, b, nil)
				if resp.status != http.StatusOK || !strings.Contains(string(resp.body), "noon") {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				reqs := e.upstreamRequests()
				if len(reqs) != 2 {
					t.Fatalf("%d upstream calls", len(reqs))
				}
				if got := inputTypes(reqs[1]); got != "message reasoning function_call function_call_output" {
					t.Errorf("second input %s", got)
				}
				if fmt.Sprint(reqs[0]["max_output_tokens"]) != "100" {
					t.Errorf("max_tokens reached the provider as %v", reqs[0]["max_output_tokens"])
				}
			})
		}
	}
}

// inputTypes lists the input item types of a Responses request.
func inputTypes(req map[string]any) string {
	var ts []string
	for _, it := range req["input"].([]any) {
		ts = append(ts, fmt.Sprint(it.(map[string]any)["type"]))
	}
	return strings.Join(ts, " ")
}

// toolTypes lists the tools of a Responses request (functions with their
// names).
func toolTypes(req map[string]any) string {
	var ts []string
	for _, it := range req["tools"].([]any) {
		m := it.(map[string]any)
		s := fmt.Sprint(m["type"])
		if s == "function" {
			s += ":" + fmt.Sprint(m["name"])
		}
		ts = append(ts, s)
	}
	return strings.Join(ts, " ")
}

// Hostile or wrong requests over a Responses route are refused as on the
// others, with the same status and reason, and nothing reaches the
// provider; members the face consumes cannot be overridden from the
// caller's own (they are not forwarded), and the provider's errors map to
// the codes the other routes give.
func TestResponsesNativeRefusalsAndErrors(t *testing.T) {
	const user = `"model":"fake-1","input":"hi"`
	cases := []struct {
		name   string
		body   string
		round  fakeupstream.Round
		status int
		code   string
		says   string
	}{
		{"unknown tool type", `{` + user + `,"tools":[{"type":"teleport"}]}`, fakeupstream.Round{}, 400, "tool_type_unsupported", `"teleport"`},
		{"stateful", `{` + user + `,"previous_response_id":"resp_1"}`, fakeupstream.Round{}, 400, "stateful_responses_unsupported", "previous_response_id"},
		{"unknown input item", `{"model":"fake-1","input":[{"type":"teleport_call"}]}`, fakeupstream.Round{}, 400, "input_item_unsupported", `"teleport_call"`},
		{"other mcp server", `{` + user + `,"tools":[{"type":"mcp","server_label":"other","server_url":"https://example.org/mcp"}]}`, fakeupstream.Round{}, 400, "server_tool_unsupported", `"other"`},
		{"provider 4xx", `{` + user + `}`, fakeupstream.Round{Status: 400, Error: json.RawMessage(`{"message":"Unsupported parameter: 'truncation'.","type":"invalid_request_error"}`)}, 400, "upstream_rejected", "Unsupported parameter"},
		{"provider 5xx", `{` + user + `}`, fakeupstream.Round{Status: 503}, 502, "upstream_error", "scripted error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{tc.round}}}})
			resp := e.postTo("/v1/responses", tc.body, nil)
			var got struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal(resp.body, &got)
			if resp.status != tc.status || got.Error.Code != tc.code || !strings.Contains(got.Error.Message, tc.says) {
				t.Fatalf("status %d code %q: %s; want %d %s saying %s", resp.status, got.Error.Code, resp.body, tc.status, tc.code, tc.says)
			}
			if n := len(e.fake.Requests()); (tc.round.Status == 0) != (n == 0) {
				t.Fatalf("%d upstream calls", n)
			}
		})
	}
	// The consumed members go as the face decided, whatever the caller's
	// members say.
	e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{{Content: "ok"}}}}})
	resp := e.postTo("/v1/responses", `{`+user+`,"instructions":"Be brief.","stream_options":{"include_obfuscation":false},"LABEL":{}}`, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	req := e.upstreamRequests()[0]
	if req["model"] != "fake-1" || req["instructions"] != "Be brief." || req["stream"] != nil || req["stream_options"] != nil || req["toolhost"] != nil {
		t.Fatalf("upstream request %v", req)
	}
}

// Over a Responses route a namespace's tools are functions named
// NAMESPACE__NAME and a custom tool a function with one string input, as
// on the other routes; the provider's calls of them (a function_call, a
// custom_tool_call) come back to the caller as function_call with its
// namespace and custom_tool_call with its input, whole and streamed.
func TestResponsesNativeNamespaceAndCustomTools(t *testing.T) {
	rounds := []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{
		call("call_l", "crm__lookup", `{"id":"c-7"}`),
		{ID: "call_p", Name: "apply_diff", Arguments: "*** Begin Patch", Custom: true},
	}}}
	body := `{"model":"fake-1","input":"patch it","tools":[` +
		`{"type":"namespace","name":"crm","description":"CRM","tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}]},` +
		`{"type":"custom","name":"apply_diff","description":"Applies a diff"}]}`
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}})
			b := body
			var out map[string]any
			if stream {
				resp := e.postTo("/v1/responses", withStream(b), nil)
				out = checkResponsesStream(t, resp.body, e.label)
			} else {
				resp := e.postTo("/v1/responses", b, nil)
				if resp.status != http.StatusOK {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				out = decodeJSON(t, resp.body).(map[string]any)
			}
			if got := itemTypes(out); got != "function_call custom_tool_call" {
				t.Fatalf("output items %s", got)
			}
			items := out["output"].([]any)
			fn, custom := items[0].(map[string]any), items[1].(map[string]any)
			if fn["name"] != "lookup" || fn["namespace"] != "crm" || fn["arguments"] != `{"id":"c-7"}` {
				t.Errorf("function_call %v", fn)
			}
			if custom["name"] != "apply_diff" || custom["input"] != "*** Begin Patch" || custom["call_id"] != "call_p" {
				t.Errorf("custom_tool_call %v", custom)
			}
			if got := toolTypes(e.upstreamRequests()[0]); got != "function:crm__lookup function:apply_diff" {
				t.Errorf("upstream tools %s", got)
			}
		})
	}
}

// A model whose routes differ in protocol (a Chat Completions route
// without tool calling first, a Responses one with it) takes the canonical
// path: a built-in tool only a Responses provider runs is refused, never
// forwarded where it could be dropped.
func TestResponsesNativeOnlyWhenEveryRouteIsResponses(t *testing.T) {
	mixed := func(o *v1.Options, _ *recordingExec) {
		up := responses.New(responses.Config{Name: "resp", BaseURL: "http://127.0.0.1:9/v1"})
		chat := openai.New(openai.Config{Name: "chat", BaseURL: "http://127.0.0.1:9/v1"})
		r, err := loop.NewRouter(
			&loop.Route{Name: "chat", Protocol: loop.DialectOpenAI, Models: []string{"fake-*"}, Upstream: chat},
			&loop.Route{Name: "resp", Protocol: loop.DialectResponses, Models: []string{"fake-*"}, SupportsTools: true, Upstream: up},
		)
		if err != nil {
			panic(err)
		}
		o.Router = r
	}
	e := newProtocolEnv(t, "toolhost", loop.DialectResponses, fakeupstream.Script{}, mixed)
	resp := e.postTo("/v1/responses", `{"model":"fake-1","input":"hi","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "tool_type_unsupported") {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
}
