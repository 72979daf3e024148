package v1_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

const weatherFnFlat = `{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

// responsesCase is one request/answer scenario of the Responses format,
// rendered to golden files as a JSON response and as an event stream, over
// both upstream protocols.
type responsesCase struct {
	name   string
	rounds []fakeupstream.Round
	// body is the request without "stream"; LABEL is replaced.
	body  string
	check func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any)
}

var responsesCases = []responsesCase{
	{
		// No hosted tools: no mcp_list_tools item, just the message.
		name:   "no_hosted_tools",
		rounds: []fakeupstream.Round{{Content: "Hello there.", Usage: usage(12, 3, 0, 0)}},
		body:   `{"model":"fake-1","input":"hi","temperature":0.2}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "message" {
				t.Errorf("output items %s, want message", got)
			}
			if n := len(e.fake.Requests()); n != 1 {
				t.Errorf("%d upstream calls", n)
			}
		},
	},
	{
		// One hosted round: mcp_list_tools, the round's text, one mcp_call
		// per execution, then the answer; the caller's flat function, the
		// instructions and max_output_tokens reach the model translated.
		name: "one_hosted_round",
		rounds: []fakeupstream.Round{
			{Content: "Let me roll.", ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["two"]}`), call("call_b", "random_choice", `{"options":["three"]}`)}, Usage: usage(100, 20, 40, 5)},
			{Content: "You got two.", Usage: usage(150, 10, 100, 2)},
		},
		body: `{"model":"fake-1","instructions":"Be brief.","max_output_tokens":300,"input":[{"role":"user","content":[{"type":"input_text","text":"roll"}]}],"tools":[` + weatherFnFlat + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","sleep"],"require_approval":"never","headers":{"X":"y"},"server_description":"ignored"}],"LABEL":{"max_tool_rounds":3},"max_tool_calls":1}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			// The first round's text is a message item before its calls.
			if got := itemTypes(out); got != "mcp_list_tools message mcp_call mcp_call message" {
				t.Errorf("output items %s", got)
			}
			items := out["output"].([]any)
			list := items[0].(map[string]any)["tools"].([]any)
			if len(list) != 2 || list[0].(map[string]any)["name"] != "random_choice" {
				t.Errorf("mcp_list_tools tools %v", list)
			}
			if ann := list[0].(map[string]any)["annotations"].(map[string]any); ann["readOnlyHint"] != true {
				t.Errorf("annotations %v", ann)
			}
			c := items[2].(map[string]any)
			if c["arguments"] != `{"options":["two"]}` || c["status"] != "completed" || !strings.Contains(c["output"].(string), "two") || c["error"] != nil {
				t.Errorf("mcp_call %v", c)
			}
			if strings.Contains(fmt.Sprint(out["tools"]), "headers") {
				t.Errorf("the mcp tool's headers were echoed: %v", out["tools"])
			}
			if out["output_text"] != nil {
				t.Errorf("output_text is an SDK convenience, not a wire field")
			}
			if p != loop.DialectOpenAI {
				return
			}
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("want 2 upstream calls, got %d", len(reqs))
			}
			r0 := reqs[0]
			if r0["max_tokens"] != 300.0 || r0["max_tool_calls"] != nil || r0["instructions"] != nil {
				t.Errorf("options sent upstream: max_tokens=%v max_tool_calls=%v instructions=%v", r0["max_tokens"], r0["max_tool_calls"], r0["instructions"])
			}
			msgs := r0["messages"].([]any)
			if sys := msgs[0].(map[string]any); sys["role"] != "system" || sys["content"] != "Be brief." {
				t.Errorf("instructions became %v", sys)
			}
			fn := r0["tools"].([]any)[0].(map[string]any)
			if fn["function"].(map[string]any)["name"] != "get_weather" {
				t.Errorf("caller function sent as %v", fn)
			}
			if len(r0["tools"].([]any)) != 3 {
				t.Errorf("tools sent: %v", r0["tools"])
			}
		},
	},
	{
		// Two hosted rounds, the first with a failed tool: the mcp_call is
		// failed with error set, and the loop continues.
		name: "two_rounds_with_failed_tool",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_t", "get_time", `{"timezone":"Mars/Base"}`)}, Usage: usage(50, 5, 0, 0)},
			{ToolCalls: []fakeupstream.ToolCall{call("call_c", "random_choice", `{"options":["tea"]}`)}, Usage: usage(70, 5, 0, 0)},
			{Content: "Tea it is.", Usage: usage(90, 4, 0, 0)},
		},
		body: `{"model":"fake-1","input":"pick","tools":[{"type":"mcp","server_label":"LABEL","require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "mcp_list_tools mcp_call mcp_call message" {
				t.Errorf("output items %s", got)
			}
			failed := out["output"].([]any)[1].(map[string]any)
			if failed["status"] != "failed" || failed["output"] != nil || !strings.Contains(fmt.Sprint(failed["error"]), "Mars/Base") {
				t.Errorf("failed call %v", failed)
			}
			u := out["usage"].(map[string]any)
			if jsonInt(u["input_tokens"]) != 210 || jsonInt(u["output_tokens"]) != 14 || jsonInt(u["total_tokens"]) != 224 {
				t.Errorf("usage not summed: %v", u)
			}
		},
	},
	{
		// A caller function in the same round as a hosted call: the hosted
		// call is skipped and left out; the function_call is returned.
		name: "caller_function_skips_hosted",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_h", "random_choice", `{"options":["six"]}`), call("call_w", "get_weather", `{"city":"Paris"}`)}, Usage: usage(40, 8, 0, 0)},
		},
		body: `{"model":"fake-1","input":"weather","tools":[` + weatherFnFlat + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "mcp_list_tools function_call" {
				t.Errorf("output items %s", got)
			}
			fc := out["output"].([]any)[1].(map[string]any)
			if fc["call_id"] != "call_w" || fc["name"] != "get_weather" || fc["arguments"] != `{"city":"Paris"}` {
				t.Errorf("function_call %v", fc)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Errorf("hosted tool executed %d times, want skipped", n)
			}
		},
	},
	{
		// A tool name the model invents is a failed hosted call (§6.14): a
		// failed mcp_call whose error is unknown_tool with the names the
		// model may use; the valid hosted call of the round runs and the
		// loop goes on.
		name: "invented_tool_name_fails",
		rounds: []fakeupstream.Round{
			{Content: "Checking.", ToolCalls: []fakeupstream.ToolCall{call("call_tiem", "get_tiem", `{"timezone":"Europe/Paris"}`), call("call_time", "get_time", `{"timezone":"UTC"}`)}, ArgsChunk: 5, Usage: usage(40, 8, 0, 0)},
			{Content: "It is noon UTC.", Usage: usage(60, 5, 0, 0)},
		},
		body: `{"model":"fake-1","input":"time?","tools":[` + weatherFnFlat + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			const refusal = `unknown_tool: unknown tool "get_tiem"; available tools: get_time, get_weather`
			checkInventedRound(t, e, p, refusal)
			if got := itemTypes(out); got != "mcp_list_tools message mcp_call mcp_call message" {
				t.Errorf("output items %s", got)
			}
			items := out["output"].([]any)
			failed, done := items[2].(map[string]any), items[3].(map[string]any)
			if failed["name"] != "get_tiem" || failed["status"] != "failed" || failed["output"] != nil || failed["error"] != refusal {
				t.Errorf("invented call %v", failed)
			}
			if done["name"] != "get_time" || done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["output"]), "2026-05-01T12:00:00Z") {
				t.Errorf("get_time call %v", done)
			}
			calls := out["LABEL"].(map[string]any)["tool_calls"].([]any)
			if len(calls) != 2 || calls[0].(map[string]any)["status"] != "failed" || calls[1].(map[string]any)["status"] != "done" {
				t.Errorf("extension tool_calls %v", calls)
			}
		},
	},
	{
		// An invented name in a round with a caller function: the loop
		// ends, the hosted call is skipped and left out, the invented call
		// is a function_call for the caller, in the model's order.
		name: "invented_tool_with_caller_function",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_tiem", "get_tiem", `{"timezone":"Europe/Paris"}`), call("call_time", "get_time", `{}`), call("call_w", "get_weather", `{"city":"Paris"}`)}, ArgsChunk: 4, Usage: usage(40, 8, 0, 0)},
		},
		body: `{"model":"fake-1","input":"weather","tools":[` + weatherFnFlat + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "mcp_list_tools function_call function_call" {
				t.Errorf("output items %s", got)
			}
			items := out["output"].([]any)
			if a, b := items[1].(map[string]any), items[2].(map[string]any); a["name"] != "get_tiem" || a["arguments"] != `{"timezone":"Europe/Paris"}` || b["name"] != "get_weather" {
				t.Errorf("function calls %v, %v", a, b)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Errorf("%d calls executed, want none", n)
			}
		},
	},
	{
		// max_tool_rounds reached: one last call with tool choice none; the
		// hosted call it still asks for is skipped and left out.
		name: "max_tool_rounds_reached",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_1", "random_choice", `{"options":["six"]}`)}, Usage: usage(30, 5, 0, 0)},
			{Content: "Enough.", ToolCalls: []fakeupstream.ToolCall{call("call_2", "random_choice", `{"options":["six"]}`)}, Usage: usage(40, 6, 0, 0)},
		},
		body: `{"model":"fake-1","input":"roll forever","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"never"}],"LABEL":{"max_tool_rounds":1}}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if got := itemTypes(out); got != "mcp_list_tools mcp_call message" {
				t.Errorf("output items %s", got)
			}
			if n := len(e.exec.Proposals()); n != 1 {
				t.Errorf("executed %d calls, want 1", n)
			}
			ext := out["LABEL"].(map[string]any)
			calls := ext["tool_calls"].([]any)
			if len(calls) != 2 || calls[1].(map[string]any)["status"] != "skipped" {
				t.Errorf("extension tool_calls %v", calls)
			}
		},
	},
	{
		// tool_choice in the mcp form forces the tool on the first call,
		// auto after; the response echoes it as sent.
		name: "forced_tool_choice_echoed",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_f", "random_choice", `{"options":["six"]}`)}, Usage: usage(30, 5, 0, 0)},
			{Content: "Rolled.", Usage: usage(40, 2, 0, 0)},
		},
		body: `{"model":"fake-1","input":"roll","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","get_time"],"require_approval":"never"}],"tool_choice":{"type":"mcp","server_label":"LABEL","name":"random_choice"}}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			tc, _ := json.Marshal(out["tool_choice"])
			if string(tc) != `{"name":"random_choice","server_label":"LABEL","type":"mcp"}` {
				t.Errorf("tool_choice echoed as %s", tc)
			}
			if p != loop.DialectOpenAI {
				return
			}
			reqs := e.upstreamRequests()
			first, _ := json.Marshal(reqs[0]["tool_choice"])
			if string(first) != `{"function":{"name":"random_choice"},"type":"function"}` || reqs[1]["tool_choice"] != "auto" {
				t.Errorf("tool_choice upstream %s then %v", first, reqs[1]["tool_choice"])
			}
		},
	},
	{
		// The model stops at the token limit: response.incomplete.
		name: "incomplete_at_token_limit",
		rounds: []fakeupstream.Round{
			{Content: "Cut sho", FinishReason: "length", Usage: usage(10, 3, 0, 0)},
		},
		body: `{"model":"fake-1","input":"long","max_output_tokens":3,"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"]}]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, stream bool, out map[string]any) {
			if out["status"] != "incomplete" {
				t.Errorf("status %v", out["status"])
			}
			d, _ := out["incomplete_details"].(map[string]any)
			if d["reason"] != "max_output_tokens" {
				t.Errorf("incomplete_details %v", out["incomplete_details"])
			}
		},
	},
}

// clockFree replaces created_at by 0 for an Anthropic upstream, whose
// responses carry no creation time (the client uses its clock).
func clockFree(t *testing.T, p loop.Dialect, b []byte) []byte {
	t.Helper()
	if p != loop.DialectAnthropic {
		return b
	}
	return createdAt.ReplaceAll(b, []byte("${1}0"))
}

var createdAt = regexp.MustCompile(`("created_at": ?)[0-9]+`)

// itemTypes lists the output item types of a response.
func itemTypes(resp map[string]any) string {
	var ts []string
	for _, it := range resp["output"].([]any) {
		ts = append(ts, it.(map[string]any)["type"].(string))
	}
	return strings.Join(ts, " ")
}

func TestResponsesGolden(t *testing.T) {
	for _, label := range labels {
		for _, p := range responsesProtocols {
			for _, tc := range responsesCases {
				for _, stream := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", label, p, tc.name, modeName(stream)), func(t *testing.T) {
						e := newProtocolEnv(t, label, p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
						runResponsesCase(t, e, p, tc, stream)
					})
				}
			}
		}
	}
}

// runResponsesCase posts the case's request to e, compares the answer
// with its golden file, checks the stream's sequence rules and the
// extension field, then runs the case's own checks. It returns the body.
func runResponsesCase(t *testing.T, e *env, p loop.Dialect, tc responsesCase, stream bool) []byte {
	t.Helper()
	label := e.label
	body := tc.body
	if stream {
		body = withStream(body)
	}
	resp := e.postTo("/v1/responses", body, nil)
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	name := fmt.Sprintf("responses_%s.%s.%s.golden", tc.name, p, modeName(stream))
	var out map[string]any
	if stream {
		if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content type %q", ct)
		}
		golden(t, name, clockFree(t, p, normalizedEvents(t, resp.body, label)))
		out = checkResponsesStream(t, resp.body, label)
	} else {
		golden(t, name, clockFree(t, p, normalizedBody(t, resp.body, label)))
		out = decodeJSON(t, resp.body).(map[string]any)
	}
	out = normalize(out, label).(map[string]any)
	if ext, ok := out["LABEL"].(map[string]any); !ok || ext["request_id"] != "req_golden" {
		t.Errorf("extension field %v", out["LABEL"])
	}
	if tc.check != nil {
		tc.check(t, e, p, stream, out)
	}
	return resp.body
}

// checkResponsesStream checks the seed's sequence rules and returns the
// terminal event's response:
//   - response.created then response.in_progress, once each, first;
//   - sequence_number 0, 1, 2, ... strictly increasing;
//   - output_item.added with output_index 0, 1, 2, ... in sending order,
//     each item done once, after its added;
//   - mcp_list_tools: added → mcp_list_tools.in_progress → completed → done;
//   - mcp_call: added → arguments.delta → arguments.done → in_progress →
//     completed/failed → done, the done item's status matching;
//   - one terminal event, last, whose response.output is every done item
//     in order, whose id is created's, with the extension field at the
//     event's top level.
func checkResponsesStream(t *testing.T, body []byte, label string) map[string]any {
	t.Helper()
	evs := namedEvents(t, body)
	if len(evs) < 3 || evs[0].name != "response.created" || evs[1].name != "response.in_progress" {
		t.Fatalf("stream does not start with response.created, response.in_progress")
	}
	var (
		added  []map[string]any // by output_index
		done   = map[int]map[string]any{}
		steps  = map[int][]string{}
		final  map[string]any
		termEv map[string]any
	)
	for i, ev := range evs {
		if got := jsonInt(ev.data["sequence_number"]); got != i {
			t.Fatalf("event %d (%s) has sequence_number %d", i, ev.name, got)
		}
		if i > 1 && (ev.name == "response.created" || ev.name == "response.in_progress") {
			t.Errorf("%s sent again at %d", ev.name, i)
		}
		idx := -1
		if v, ok := ev.data["output_index"]; ok {
			idx = jsonInt(v)
		}
		switch ev.name {
		case "response.output_item.added":
			if idx != len(added) {
				t.Fatalf("output_item.added with output_index %d, want %d", idx, len(added))
			}
			added = append(added, ev.data["item"].(map[string]any))
		case "response.output_item.done":
			if idx < 0 || idx >= len(added) || done[idx] != nil {
				t.Fatalf("output_item.done %d without added or twice", idx)
			}
			done[idx] = ev.data["item"].(map[string]any)
		case "response.completed", "response.incomplete":
			if i != len(evs)-1 {
				t.Fatalf("terminal event %s at %d of %d", ev.name, i, len(evs))
			}
			termEv = ev.data
			final = ev.data["response"].(map[string]any)
		}
		if idx >= 0 && idx < len(added) {
			steps[idx] = append(steps[idx], strings.TrimPrefix(ev.name, "response."))
		}
	}
	if final == nil {
		t.Fatalf("no terminal event")
	}
	if len(done) != len(added) {
		t.Errorf("%d items added, %d done", len(added), len(done))
	}
	for i, it := range added {
		got := strings.Join(steps[i], " → ")
		var want string
		switch it["type"] {
		case "mcp_list_tools":
			want = "output_item.added → mcp_list_tools.in_progress → mcp_list_tools.completed → output_item.done"
		case "mcp_call":
			st := "completed"
			if done[i]["status"] == "failed" {
				st = "failed"
			}
			want = "output_item.added → mcp_call_arguments.delta → mcp_call_arguments.done → mcp_call.in_progress → mcp_call." + st + " → output_item.done"
			if done[i]["id"] != it["id"] {
				t.Errorf("mcp_call id changed from %v to %v", it["id"], done[i]["id"])
			}
		default:
			continue
		}
		if got != want {
			t.Errorf("item %d (%s): %s\nwant %s", i, it["type"], got, want)
		}
	}
	outs, _ := final["output"].([]any)
	if len(outs) != len(done) {
		t.Fatalf("terminal response has %d items, %d were sent", len(outs), len(done))
	}
	for i, it := range outs {
		if a, b := encodeJSON(it, false), encodeJSON(done[i], false); string(a) != string(b) {
			t.Errorf("terminal output[%d] = %s, sent %s", i, a, b)
		}
	}
	created := evs[0].data["response"].(map[string]any)
	if final["id"] != created["id"] || !strings.HasPrefix(fmt.Sprint(final["id"]), "resp_") {
		t.Errorf("terminal id %v, created id %v", final["id"], created["id"])
	}
	if _, ok := termEv[label]; !ok {
		t.Errorf("terminal event without the extension field at its top level")
	}
	return final
}

// The terminal event's response of a stream is the JSON response: same
// output items, status, usage and extension field.
func TestResponsesStreamEqualsResponse(t *testing.T) {
	for _, p := range responsesProtocols {
		for _, tc := range responsesCases {
			t.Run(fmt.Sprintf("%s/%s", p, tc.name), func(t *testing.T) {
				label := "acme_tools"
				e := newProtocolEnv(t, label, p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
				js := e.postTo("/v1/responses", tc.body, nil)
				st := e.postTo("/v1/responses", withStream(tc.body), nil)
				if js.status != 200 || st.status != 200 {
					t.Fatalf("status %d / %d", js.status, st.status)
				}
				want := normalize(decodeJSON(t, js.body), label).(map[string]any)
				got := normalize(checkResponsesStream(t, st.body, label), label).(map[string]any)
				keys := []string{"id", "object", "model", "output", "status", "incomplete_details", "usage", "tool_choice", "tools", "LABEL"}
				if p == loop.DialectOpenAI {
					// An Anthropic upstream sends no creation time.
					keys = append(keys, "created_at")
				}
				for _, k := range keys {
					w, g := encodeJSON(want[k], false), encodeJSON(got[k], false)
					if string(w) != string(g) {
						t.Errorf("%s differs:\nstream %s\njson   %s", k, g, w)
					}
				}
			})
		}
	}
}

// Every 400 case of the Responses format (the chat completions rules
// adapted, and the Responses-only ones), stream and not: the status, the
// machine-readable reason and the body as a golden file; nothing reaches
// the upstream.
func TestResponsesRejections(t *testing.T) {
	const user = `"model":"fake-1","input":"hi"`
	const decl = `{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","get_time"],"require_approval":"never"}`
	disabled := func(o *v1.Options, _ *recordingExec) { o.Enabled = false }
	cases := []struct {
		name     string
		body     string
		opt      envOption
		status   int
		reason   string
		contains string
	}{
		{"other_server_label", `{` + user + `,"tools":[{"type":"mcp","server_label":"other","server_url":"https://example.invalid/mcp","require_approval":"never"}]}`, nil, 400, "server_tool_unsupported", `"other"`},
		{"tool_choice_other_server_label", `{` + user + `,"tools":[` + decl + `],"tool_choice":{"type":"mcp","server_label":"other","name":"get_time"}}`, nil, 400, "server_tool_unsupported", `"other"`},
		{"unknown_extension_key", `{` + user + `,"tools":[` + decl + `],"LABEL":{"max_tool_rounds":2,"temperature":1}}`, nil, 400, "unknown_extension_key", `"temperature"`},
		{"max_tool_rounds_too_large", `{` + user + `,"tools":[` + decl + `],"LABEL":{"max_tool_rounds":1000}}`, nil, 400, "invalid_max_tool_rounds", "32"},
		{"max_tool_rounds_without_hosted_tools", `{` + user + `,"LABEL":{"max_tool_rounds":2}}`, nil, 400, "max_tool_rounds_without_hosted_tools", "declares no hosted tools"},
		{"hosted_tools_disabled", `{` + user + `,"tools":[` + decl + `]}`, disabled, 400, "hosted_tools_disabled", "not enabled"},
		{"caller_function_named_like_hosted_tool", `{` + user + `,"tools":[{"type":"function","name":"get_time","parameters":{"type":"object"}},` + decl + `]}`, nil, 400, "tool_name_conflict", `"get_time"`},
		{"tool_choice_names_tool_not_enabled", `{` + user + `,"tools":[` + decl + `],"tool_choice":{"type":"mcp","server_label":"LABEL","name":"roll_dice"}}`, nil, 400, "tool_choice_not_enabled", `"roll_dice"`},
		{"tool_choice_mcp_without_declaration", `{` + user + `,"tool_choice":{"type":"mcp","server_label":"LABEL","name":"get_time"}}`, nil, 400, "tool_choice_not_enabled", "enables none"},
		{"unknown_hosted_tool", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time","teleport"]}]}`, nil, 400, "unknown_hosted_tool", `"teleport"`},
		{"require_approval_unknown_value", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","require_approval":"sometimes"}]}`, nil, 400, "require_approval_invalid", `"always"`},
		{"require_approval_unknown_tool", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","require_approval":{"always":{"tool_names":["teleport"]}}}]}`, nil, 400, "unknown_hosted_tool", `"teleport"`},
		{"approval_response_without_hosted_tools", `{"model":"fake-1","input":[{"role":"user","content":"hi"},{"type":"mcp_approval_response","approval_request_id":"apr_000000000000000000000000","approve":true}]}`, nil, 400, "approvals_without_hosted_tools", "declares none"},
		{"approval_response_without_approve", `{"model":"fake-1","input":[{"role":"user","content":"hi"},{"type":"mcp_approval_response","approval_request_id":"apr_000000000000000000000000"}],"tools":[` + decl + `]}`, nil, 400, "approval_response_invalid", "approve"},
		{"approval_response_twice", `{"model":"fake-1","input":[{"role":"user","content":"hi"},{"type":"mcp_approval_response","approval_request_id":"apr_000000000000000000000000","approve":true},{"type":"mcp_approval_response","approval_request_id":"apr_000000000000000000000000","approve":true}],"tools":[` + decl + `]}`, nil, 400, "approval_response_invalid", "twice"},
		{"approval_request_of_other_server", `{"model":"fake-1","input":[{"role":"user","content":"hi"},{"type":"mcp_approval_request","id":"apr_000000000000000000000000","server_label":"other","name":"x","arguments":"{}"}],"tools":[` + decl + `]}`, nil, 400, "server_tool_unsupported", `"other"`},
		{"approval_request_unknown", `{"model":"fake-1","input":[{"role":"user","content":"hi"},{"type":"mcp_approval_response","approval_request_id":"apr_000000000000000000000000","approve":true}],"tools":[` + decl + `]}`, nil, 400, "approval_request_unknown", "apr_000000000000000000000000"},
		{"builtin_tool_type", `{` + user + `,"tools":[{"type":"file_search","vector_store_ids":["vs_1"]},` + decl + `]}`, nil, 400, "tool_type_unsupported", `"file_search"`},
		{"unknown_tool_type", `{` + user + `,"tools":[{"type":"teleporter"}]}`, nil, 400, "tool_type_unsupported", `"teleporter"`},
		{"web_search_without_provider", `{` + user + `,"tools":[{"type":"web_search"}]}`, nil, 400, "tool_type_unsupported", "no search provider"},
		{"previous_response_id", `{` + user + `,"previous_response_id":"resp_1"}`, nil, 400, "stateful_responses_unsupported", "previous output as input"},
		{"continuation_of_other_server", `{"model":"fake-1","input":[{"role":"user","content":"hi"},{"type":"mcp_call","id":"c1","server_label":"other","name":"x","arguments":"{}","output":"y"}]}`, nil, 400, "server_tool_unsupported", `"other"`},
		{"unknown_input_item", `{"model":"fake-1","input":[{"type":"item_reference","id":"msg_1"}]}`, nil, 400, "input_item_unsupported", `"item_reference"`},
		{"invalid_json", `{"model":`, nil, 400, "invalid_json", "JSON"},
		{"missing_input", `{"model":"fake-1"}`, nil, 400, "invalid_request", "input"},
		{"no_tool_capable_route", `{"model":"text-1","input":"hi","tools":[` + decl + `]}`, nil, 503, "model_unavailable", "tool calling"},
	}
	for _, label := range labels {
		for _, tc := range cases {
			for _, stream := range []bool{false, true} {
				t.Run(label+"/"+tc.name+"/"+modeName(stream), func(t *testing.T) {
					var opts []envOption
					if tc.opt != nil {
						opts = append(opts, tc.opt)
					}
					e := newEnv(t, label, []fakeupstream.Round{{Content: "unused"}}, opts...)
					body := tc.body
					if stream && strings.HasPrefix(body, `{"model":"`) && strings.HasSuffix(body, "}") {
						body = `{"stream":true,` + body[1:]
					}
					resp := e.postTo("/v1/responses", body, nil)
					if resp.status != tc.status {
						t.Fatalf("status %d, want %d: %s", resp.status, tc.status, resp.body)
					}
					var got struct {
						Error struct {
							Message string         `json:"message"`
							Code    string         `json:"code"`
							Details map[string]any `json:"details"`
						} `json:"error"`
					}
					if err := json.Unmarshal(resp.body, &got); err != nil {
						t.Fatal(err)
					}
					if got.Error.Details["reason"] != tc.reason || got.Error.Code != tc.reason {
						t.Errorf("reason %v code %q, want %s", got.Error.Details["reason"], got.Error.Code, tc.reason)
					}
					if !strings.Contains(got.Error.Message, strings.ReplaceAll(tc.contains, "LABEL", label)) {
						t.Errorf("message %q does not say %s", got.Error.Message, tc.contains)
					}
					if n := len(e.fake.Requests()); n != 0 {
						t.Errorf("a refused request reached the upstream %d times", n)
					}
					golden(t, "responses_reject_"+tc.name+".golden", normalizedBody(t, resp.body, label))
				})
			}
		}
	}
}

// Continuation: the previous response's output sent back as input (with a
// new user message) reaches the model as ordinary tool-call round trips:
// mcp_call items become an assistant message with tool_calls and the tool
// results (a failed call's error marked), mcp_list_tools is dropped, the
// caller's function_call and function_call_output pass as they are.
func TestResponsesContinuation(t *testing.T) {
	for _, label := range labels {
		for _, p := range protocols {
			t.Run(fmt.Sprintf("%s/%s", label, p), func(t *testing.T) {
				script := fakeupstream.Script{Conversations: []fakeupstream.Conversation{
					{Match: "and now", Rounds: []fakeupstream.Round{{Content: "Continued.", Usage: usage(5, 1, 0, 0)}}},
					{Match: "weather", Rounds: []fakeupstream.Round{
						{Content: "Checking.", ToolCalls: []fakeupstream.ToolCall{call("call_t", "get_time", `{"timezone":"Mars/Base"}`), call("call_c", "random_choice", `{"options":["tea"]}`)}, Usage: usage(10, 2, 0, 0)},
						{ToolCalls: []fakeupstream.ToolCall{call("call_w", "get_weather", `{"city":"Paris"}`)}, Usage: usage(20, 2, 0, 0)},
					}},
				}}
				e := newProtocolEnv(t, label, p, script)
				tools := `[` + weatherFnFlat + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","get_time"]}]`
				first := e.postTo("/v1/responses", `{"model":"fake-1","input":"weather please","tools":`+tools+`}`, nil)
				if first.status != 200 {
					t.Fatalf("first: %d %s", first.status, first.body)
				}
				var prev struct {
					Output []json.RawMessage `json:"output"`
				}
				if err := json.Unmarshal(first.body, &prev); err != nil {
					t.Fatal(err)
				}
				var types []string
				for _, it := range prev.Output {
					var h struct{ Type string }
					_ = json.Unmarshal(it, &h)
					types = append(types, h.Type)
				}
				if strings.Join(types, " ") != "mcp_list_tools message mcp_call mcp_call function_call" {
					t.Fatalf("first output %v", types)
				}
				input := append([]json.RawMessage{json.RawMessage(`{"role":"user","content":"weather please"}`)}, prev.Output...)
				input = append(input,
					json.RawMessage(`{"type":"function_call_output","call_id":"call_w","output":"Sunny, 21°C"}`),
					json.RawMessage(`{"role":"user","content":[{"type":"input_text","text":"and now?"}]}`))
				in, _ := json.Marshal(input)
				n0 := len(e.fake.Requests())
				second := e.postTo("/v1/responses", `{"model":"fake-1","input":`+string(in)+`,"tools":`+tools+`}`, nil)
				if second.status != 200 {
					t.Fatalf("second: %d %s", second.status, second.body)
				}
				if !strings.Contains(string(second.body), "Continued.") {
					t.Errorf("second answer: %s", second.body)
				}
				reqs := e.fake.Requests()
				if len(reqs) != n0+1 {
					t.Fatalf("%d upstream calls for the continuation", len(reqs)-n0)
				}
				got := string(reqs[n0])
				if p == loop.DialectOpenAI {
					var body struct {
						Messages []map[string]any `json:"messages"`
					}
					if err := json.Unmarshal(reqs[n0], &body); err != nil {
						t.Fatal(err)
					}
					var shape []string
					for _, m := range body.Messages {
						s := m["role"].(string)
						if tc, ok := m["tool_calls"].([]any); ok {
							s += fmt.Sprintf("+%dcalls", len(tc))
						}
						if id, ok := m["tool_call_id"].(string); ok {
							s += ":" + id
						}
						shape = append(shape, s)
					}
					want := "user assistant+2calls tool:call_t tool:call_c assistant+1calls tool:call_w user"
					if strings.Join(shape, " ") != want {
						t.Errorf("messages sent upstream: %s\nwant %s", strings.Join(shape, " "), want)
					}
					if c := body.Messages[1]["content"]; c != "Checking." {
						t.Errorf("assistant text %v", c)
					}
					if c := body.Messages[2]["content"].(string); !strings.HasPrefix(c, "[tool error] ") || !strings.Contains(c, "Mars/Base") {
						t.Errorf("failed call result %q", c)
					}
				}
				for _, s := range []string{"call_t", "call_c", "Sunny, 21°C", "tea (option 1 of 1)", "and now?"} {
					if !strings.Contains(got, s) {
						t.Errorf("continuation sent upstream lacks %q: %s", s, got)
					}
				}
				if strings.Contains(got, "mcp_list_tools") || strings.Contains(got, "mcpl_") {
					t.Errorf("mcp_list_tools reached the model: %s", got)
				}
			})
		}
	}
}

// An upstream failure after hosted tools ran: the JSON answer is the
// error; a started stream ends with an error event (no terminal event).
func TestResponsesUpstreamFailureAfterHostedRound(t *testing.T) {
	rounds := []fakeupstream.Round{
		{Content: "Rolling.", ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["x"]}`)}, Usage: usage(10, 2, 0, 0)},
		{Status: 500, Error: json.RawMessage(`{"error":{"message":"overloaded","type":"server_error"}}`)},
	}
	body := `{"model":"fake-1","input":"roll","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"]}]}`
	e := newEnv(t, "acme_tools", rounds)
	js := e.postTo("/v1/responses", body, nil)
	if js.status != http.StatusBadGateway || !strings.Contains(string(js.body), "upstream_error") {
		t.Errorf("JSON answer %d %s", js.status, js.body)
	}
	st := e.postTo("/v1/responses", withStream(body), nil)
	if st.status != http.StatusOK {
		t.Fatalf("stream status %d", st.status)
	}
	evs := namedEvents(t, st.body)
	last := evs[len(evs)-1]
	if last.name != "error" || last.data["code"] != "upstream_error" || jsonInt(last.data["sequence_number"]) != len(evs)-1 {
		t.Errorf("last event %s %v", last.name, last.data)
	}
	for _, ev := range evs {
		if ev.name == "response.completed" || ev.name == "response.incomplete" {
			t.Errorf("terminal event after a failure")
		}
	}
	var doneCalls int
	for _, ev := range evs {
		if ev.name == "response.mcp_call.completed" {
			doneCalls++
		}
	}
	if doneCalls != 1 {
		t.Errorf("%d mcp_call.completed events before the failure, want 1", doneCalls)
	}
}

// Idempotency-Key replays the whole Responses answer without a second run,
// and mcp_list_tools describes the tools in the Accept-Language language.
func TestResponsesIdempotencyAndLanguage(t *testing.T) {
	e := newEnv(t, "toolhost", []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["x"]}`)}, Usage: usage(10, 2, 0, 0)},
		{Content: "x", Usage: usage(12, 1, 0, 0)},
	})
	body := `{"model":"fake-1","input":"roll","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"]}]}`
	hdr := map[string]string{"Idempotency-Key": "k-1", "Accept-Language": "en-US"}
	first := e.postTo("/v1/responses", body, hdr)
	second := e.postTo("/v1/responses", body, hdr)
	if first.status != 200 || second.status != 200 {
		t.Fatalf("status %d / %d", first.status, second.status)
	}
	if string(first.body) != string(second.body) || second.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("second answer not a replay: %s", second.header)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("%d upstream calls, want 2 (one run)", n)
	}
	out := decodeJSON(t, first.body).(map[string]any)
	list := out["output"].([]any)[0].(map[string]any)["tools"].([]any)
	desc := list[0].(map[string]any)["description"].(string)
	if !strings.HasPrefix(desc, "Picks one of options") {
		t.Errorf("description not in English: %q", desc)
	}
}
