package v1_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

const (
	mcpServers     = `"mcp_servers":[{"type":"url","url":"https://example.invalid/mcp","name":"LABEL"}]`
	toolsetAll     = `{"type":"mcp_toolset","mcp_server_name":"LABEL"}`
	toolsetSome    = `{"type":"mcp_toolset","mcp_server_name":"LABEL","default_config":{"enabled":false},"configs":{"random_choice":{"enabled":true},"sleep":{"enabled":true}}}`
	toolsetDice    = `{"type":"mcp_toolset","mcp_server_name":"LABEL","default_config":{"enabled":false},"configs":{"random_choice":{"enabled":true}}}`
	toolsetTime    = `{"type":"mcp_toolset","mcp_server_name":"LABEL","default_config":{"enabled":false},"configs":{"get_time":{"enabled":true}}}`
	weatherTool    = `{"name":"get_weather","description":"Weather for a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	messagesPrefix = `"model":"fake-1","max_tokens":256`
)

// messagesCase is one scenario of /v1/messages, rendered to golden files as
// a JSON message and as an event stream, for each upstream protocol.
type messagesCase struct {
	name   string
	rounds []fakeupstream.Round
	body   string // without "stream"; LABEL is replaced
	check  func(t *testing.T, e *env, protocol loop.Dialect, body []byte)
}

// upstreamMessages returns the messages of upstream request i.
func upstreamMessages(t *testing.T, e *env, i int) []any {
	t.Helper()
	reqs := e.upstreamRequests()
	if i >= len(reqs) {
		t.Fatalf("no upstream request %d", i)
	}
	msgs, ok := reqs[i]["messages"].([]any)
	if !ok {
		// A Responses upstream's input items.
		msgs, _ = reqs[i]["input"].([]any)
	}
	return msgs
}

func toolNames(req map[string]any) []string {
	var out []string
	for _, t := range req["tools"].([]any) {
		m := t.(map[string]any)
		if f, ok := m["function"].(map[string]any); ok {
			out = append(out, f["name"].(string))
			continue
		}
		out = append(out, m["name"].(string))
	}
	return out
}

var messagesCases = []messagesCase{
	{
		name:   "no_hosted_tools",
		rounds: []fakeupstream.Round{{Content: "Hello there.", Usage: usage(12, 3, 0, 0)}},
		body:   `{` + messagesPrefix + `,"messages":[{"role":"user","content":"hi"}],"temperature":0.2}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 1 || reqs[0]["temperature"] != 0.2 || reqs[0]["max_tokens"] != 256.0 {
				t.Fatalf("upstream requests: %v", reqs)
			}
			if _, ok := reqs[0]["tools"]; ok {
				t.Error("tools sent without any declared")
			}
		},
	},
	{
		// One hosted round with two calls; caller tool first, hosted
		// definitions appended; system carried to either protocol.
		name: "one_hosted_round",
		rounds: []fakeupstream.Round{
			{Content: "Let me roll.", ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["two"]}`), call("call_b", "random_choice", `{"options":["three"]}`)}, Usage: usage(100, 20, 40, 5)},
			{Content: "You got two.", Usage: usage(150, 10, 100, 2)},
		},
		body: `{` + messagesPrefix + `,"system":"Be brief.","messages":[{"role":"user","content":"roll"}],` + mcpServers + `,"tools":[` + weatherTool + `,` + toolsetSome + `],"LABEL":{"max_tool_rounds":3}}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("want 2 upstream calls, got %d", len(reqs))
			}
			if got := toolNames(reqs[0]); !reflect.DeepEqual(got, []string{"get_weather", "random_choice", "sleep"}) {
				t.Errorf("tools offered %v", got)
			}
			msgs := upstreamMessages(t, e, 1)
			switch p {
			case loop.DialectAnthropic:
				if reqs[0]["system"] != "Be brief." {
					t.Errorf("system = %v", reqs[0]["system"])
				}
				if len(msgs) != 3 {
					t.Fatalf("second round messages: %v", msgs)
				}
				res := msgs[2].(map[string]any)["content"].([]any)
				for i, id := range []string{"call_a", "call_b"} {
					b := res[i].(map[string]any)
					if b["type"] != "tool_result" || b["tool_use_id"] != id {
						t.Errorf("block %d = %v, want the result of %s", i, b, id)
					}
				}
				if !strings.Contains(res[0].(map[string]any)["content"].(string), "two (option 1 of 1)") {
					t.Errorf("result not passed back: %v", res[0])
				}
			default:
				if m := msgs[0].(map[string]any); m["role"] != "system" || m["content"] != "Be brief." {
					t.Errorf("system message %v", m)
				}
				if len(msgs) != 5 {
					t.Fatalf("second round messages: %v", msgs)
				}
				for i, id := range []string{"call_a", "call_b"} {
					m := msgs[3+i].(map[string]any)
					if m["role"] != "tool" || m["tool_call_id"] != id {
						t.Errorf("message %d = %v, want the result of %s", 3+i, m, id)
					}
				}
			}
		},
	},
	{
		// Two hosted rounds; the first call fails and goes back to the
		// model as an error result.
		name: "two_rounds_with_failed_tool",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_t", "get_time", `{"timezone":"Mars/Base"}`)}, Usage: usage(50, 5, 0, 0)},
			{ToolCalls: []fakeupstream.ToolCall{call("call_c", "random_choice", `{"options":["tea"]}`)}, Usage: usage(70, 5, 0, 0)},
			{Content: "Tea it is.", Usage: usage(90, 4, 0, 0)},
		},
		body: `{` + messagesPrefix + `,"messages":[{"role":"user","content":"pick"}],` + mcpServers + `,"tools":[` + toolsetAll + `]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			if n := len(e.upstreamRequests()); n != 3 {
				t.Fatalf("want 3 upstream calls, got %d", n)
			}
			failed := upstreamMessages(t, e, 1)[2].(map[string]any)
			if p == loop.DialectAnthropic {
				b := failed["content"].([]any)[0].(map[string]any)
				if b["is_error"] != true || !strings.Contains(b["content"].(string), "Mars/Base") {
					t.Errorf("failure not given to the model: %v", b)
				}
			} else if !strings.Contains(failed["content"].(string), "Mars/Base") {
				t.Errorf("failure not given to the model: %v", failed)
			}
		},
	},
	{
		// A caller tool in the same round as a hosted one: the loop ends,
		// the hosted call is skipped and absent from content.
		name: "caller_tool_skips_hosted",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_h", "random_choice", `{"options":["six"]}`), call("call_w", "get_weather", `{"city":"Paris"}`)}, Usage: usage(40, 8, 0, 0)},
		},
		body: `{` + messagesPrefix + `,"messages":[{"role":"user","content":"weather"}],` + mcpServers + `,"tools":[` + weatherTool + `,` + toolsetDice + `]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			if n := len(e.upstreamRequests()); n != 1 {
				t.Fatalf("want 1 upstream call, got %d", n)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Fatalf("hosted tool executed %d times, want skipped", n)
			}
		},
	},
	{
		// A tool name the model invents is a failed hosted call (§6.14):
		// an mcp_tool_use with an is_error mcp_tool_result, the model gets
		// unknown_tool with the names it may use, the valid hosted call of
		// the round runs and the loop goes on.
		name: "invented_tool_name_fails",
		rounds: []fakeupstream.Round{
			{Content: "Checking.", ToolCalls: []fakeupstream.ToolCall{call("call_tiem", "get_tiem", `{"timezone":"Europe/Paris"}`), call("call_time", "get_time", `{"timezone":"UTC"}`)}, ArgsChunk: 5, Usage: usage(40, 8, 0, 0)},
			{Content: "It is noon UTC.", Usage: usage(60, 5, 0, 0)},
		},
		body: `{` + messagesPrefix + `,"messages":[{"role":"user","content":"time?"}],` + mcpServers + `,"tools":[` + weatherTool + `,` + toolsetTime + `]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			checkInventedRound(t, e, p, `unknown_tool: unknown tool "get_tiem"; available tools: get_time, get_weather`)
			var msg map[string]any
			if json.Valid(body) {
				msg = decodeJSON(t, body).(map[string]any)
			} else {
				msg = assembleStream(t, body, e.label)
			}
			var got []string
			for _, b := range msg["content"].([]any) {
				b := b.(map[string]any)
				got = append(got, fmt.Sprintf("%v:%v:%v", b["type"], b["name"], b["is_error"]))
			}
			want := "text:<nil>:<nil> mcp_tool_use:get_tiem:<nil> mcp_tool_use:get_time:<nil> mcp_tool_result:<nil>:true mcp_tool_result:<nil>:false text:<nil>:<nil>"
			if strings.Join(got, " ") != want {
				t.Errorf("content blocks\n got %s\nwant %s", strings.Join(got, " "), want)
			}
		},
	},
	{
		// An invented name in a round with a caller tool: the loop ends,
		// the hosted call is skipped, the invented call goes back to the
		// caller as a tool_use, in the model's order.
		name: "invented_tool_with_caller_tool",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_tiem", "get_tiem", `{"timezone":"Europe/Paris"}`), call("call_time", "get_time", `{}`), call("call_w", "get_weather", `{"city":"Paris"}`)}, ArgsChunk: 4, Usage: usage(40, 8, 0, 0)},
		},
		body: `{` + messagesPrefix + `,"messages":[{"role":"user","content":"weather"}],` + mcpServers + `,"tools":[` + weatherTool + `,` + toolsetTime + `]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			if n := len(e.upstreamRequests()); n != 1 {
				t.Fatalf("want 1 upstream call, got %d", n)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Fatalf("%d calls executed, want none", n)
			}
		},
	},
	{
		// max_tool_rounds reached: the last call has tool choice none and
		// its hosted call is skipped; stop_reason becomes end_turn.
		name: "max_tool_rounds_reached",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_1", "random_choice", `{"options":["six"]}`)}, Usage: usage(30, 5, 0, 0)},
			{Content: "Enough.", ToolCalls: []fakeupstream.ToolCall{call("call_2", "random_choice", `{"options":["six"]}`)}, Usage: usage(40, 6, 0, 0)},
		},
		body: `{` + messagesPrefix + `,"messages":[{"role":"user","content":"roll forever"}],` + mcpServers + `,"tools":[` + toolsetDice + `],"LABEL":{"max_tool_rounds":1}}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("want 2 upstream calls, got %d", len(reqs))
			}
			tc, _ := json.Marshal(reqs[1]["tool_choice"])
			want := `"none"`
			if p == loop.DialectAnthropic {
				want = `{"type":"none"}`
			}
			if string(tc) != want {
				t.Errorf("final tool_choice = %s, want %s", tc, want)
			}
			if n := len(e.exec.Proposals()); n != 1 {
				t.Errorf("executed %d calls, want 1", n)
			}
		},
	},
	{
		// Thinking (Anthropic) / reasoning_content (OpenAI-compatible) of a
		// hosted round goes back to the upstream untouched.
		name: "thinking_round_trips",
		rounds: []fakeupstream.Round{
			{Reasoning: "Think first.", ToolCalls: []fakeupstream.ToolCall{call("call_r", "random_choice", `{"options":["x"]}`)}, Usage: usage(10, 3, 0, 0)},
			{Reasoning: "Now answer.", Content: "x", Usage: usage(20, 3, 0, 0)},
		},
		body: `{` + messagesPrefix + `,"messages":[{"role":"user","content":"think"}],` + mcpServers + `,"tools":[` + toolsetAll + `]}`,
		check: func(t *testing.T, e *env, p loop.Dialect, body []byte) {
			sent := upstreamMessages(t, e, 1)[1].(map[string]any)
			if p == loop.DialectAnthropic {
				b := sent["content"].([]any)[0].(map[string]any)
				if b["type"] != "thinking" || b["thinking"] != "Think first." || b["signature"] != "sig_fake" {
					t.Errorf("thinking block sent back: %v", b)
				}
				if !strings.Contains(string(body), `"type":"thinking"`) {
					t.Errorf("final thinking missing from the response")
				}
			} else if sent["reasoning_content"] != "Think first." {
				t.Errorf("assistant message sent back: %v", sent)
			}
		},
	},
}

func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "json"
}

func withStream(body string) string {
	return strings.Replace(body, "{", `{"stream":true,`, 1)
}

func TestMessagesGolden(t *testing.T) {
	for _, label := range labels {
		for _, p := range protocols {
			for _, tc := range messagesCases {
				for _, stream := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", label, p, tc.name, modeName(stream)), func(t *testing.T) {
						e := newProtocolEnv(t, label, p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
						body := tc.body
						if stream {
							body = withStream(body)
						}
						resp := e.postTo("/v1/messages", body, nil)
						if resp.status != http.StatusOK {
							t.Fatalf("status %d: %s", resp.status, resp.body)
						}
						name := fmt.Sprintf("messages_%s.%s.%s.golden", tc.name, p, modeName(stream))
						if stream {
							if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
								t.Fatalf("content type %q", ct)
							}
							golden(t, name, normalizedEvents(t, resp.body, label))
							assembleStream(t, resp.body, label)
						} else {
							golden(t, name, normalizedBody(t, resp.body, label))
						}
						if tc.check != nil {
							tc.check(t, e, p, resp.body)
						}
					})
				}
			}
		}
	}
}

// The stream, accumulated as a client does, is the same message as the
// JSON response: content blocks, stop reason, summed usage with iterations
// and the extension field.
func TestMessagesStreamAssemblesToTheResponse(t *testing.T) {
	for _, p := range protocols {
		for _, tc := range messagesCases {
			t.Run(fmt.Sprintf("%s/%s", p, tc.name), func(t *testing.T) {
				label := "acme_tools"
				e := newProtocolEnv(t, label, p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: tc.rounds}}})
				js := e.postTo("/v1/messages", tc.body, nil)
				st := e.postTo("/v1/messages", withStream(tc.body), nil)
				if js.status != 200 || st.status != 200 {
					t.Fatalf("status %d / %d", js.status, st.status)
				}
				want := normalize(decodeJSON(t, js.body), label).(map[string]any)
				got := normalize(assembleStream(t, st.body, label), label).(map[string]any)
				for _, k := range []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage", "LABEL"} {
					w, g := encodeJSON(want[k], false), encodeJSON(got[k], false)
					if string(w) != string(g) {
						t.Errorf("%s differs:\nstream %s\njson   %s", k, g, w)
					}
				}
			})
		}
	}
}

// Every 400 case of the Messages format: the status, the machine-readable
// reason in the Anthropic error shape, and the body as a golden file.
func TestMessagesRejections(t *testing.T) {
	const user = messagesPrefix + `,"messages":[{"role":"user","content":"hi"}]`
	const decl = mcpServers + `,"tools":[` + toolsetDice + `]`
	cases := []struct {
		name     string
		body     string
		hdr      map[string]string
		disabled bool
		status   int
		reason   string
		contains string
	}{
		{"unknown_server_name", `{` + user + `,"mcp_servers":[{"type":"url","url":"https://x.invalid/mcp","name":"other"}],"tools":[{"type":"mcp_toolset","mcp_server_name":"other"}]}`, nil, false, 400, "server_tool_unsupported", `"other"`},
		{"toolset_without_server", `{` + user + `,"tools":[` + toolsetDice + `]}`, nil, false, 400, "mcp_toolset_without_server", "not in mcp_servers"},
		{"toolset_of_unknown_server", `{` + user + `,` + mcpServers + `,"tools":[` + toolsetDice + `,{"type":"mcp_toolset","mcp_server_name":"other"}]}`, nil, false, 400, "server_tool_unsupported", `"other"`},
		{"server_without_toolset", `{` + user + `,` + mcpServers + `}`, nil, false, 400, "mcp_server_without_toolset", "no mcp_toolset"},
		{"beta_header_missing", `{` + user + `,` + decl + `}`, map[string]string{"anthropic-beta": ""}, false, 400, "mcp_beta_required", "mcp-client-2025-11-20"},
		{"server_type_not_url", `{` + user + `,"mcp_servers":[{"type":"stdio","name":"LABEL"}],"tools":[` + toolsetDice + `]}`, nil, false, 400, "invalid_request", `"url"`},
		{"caller_tool_named_like_hosted_tool", `{` + user + `,` + mcpServers + `,"tools":[{"name":"random_choice","input_schema":{"type":"object"}},` + toolsetDice + `]}`, nil, false, 400, "tool_name_conflict", `"random_choice"`},
		{"unknown_tool_in_configs", `{` + user + `,` + mcpServers + `,"tools":[{"type":"mcp_toolset","mcp_server_name":"LABEL","configs":{"teleport":{"enabled":true}}}]}`, nil, false, 400, "unknown_hosted_tool", `"teleport"`},
		{"toolset_enables_nothing", `{` + user + `,` + mcpServers + `,"tools":[{"type":"mcp_toolset","mcp_server_name":"LABEL","default_config":{"enabled":false}}]}`, nil, false, 400, "no_hosted_tool_enabled", "enables no tool"},
		{"hosted_tools_disabled", `{` + user + `,` + decl + `}`, nil, true, 400, "hosted_tools_disabled", "not enabled"},
		{"unknown_extension_key", `{` + user + `,` + decl + `,"LABEL":{"max_tool_rounds":2,"temperature":1}}`, nil, false, 400, "unknown_extension_key", `"temperature"`},
		{"max_tool_rounds_too_large", `{` + user + `,` + decl + `,"LABEL":{"max_tool_rounds":1000}}`, nil, false, 400, "invalid_max_tool_rounds", "32"},
		{"max_tool_rounds_without_hosted_tools", `{` + user + `,"LABEL":{"max_tool_rounds":2}}`, nil, false, 400, "max_tool_rounds_without_hosted_tools", "declares no hosted tools"},
		{"continuation_of_other_server", `{` + messagesPrefix + `,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"mcp_tool_use","id":"toolu_1","name":"x","server_name":"other","input":{}}]},{"role":"user","content":"more"}],` + decl + `}`, nil, false, 400, "server_tool_unsupported", `"other"`},
		{"bad_tool_choice", `{` + user + `,` + decl + `,"tool_choice":{"type":"function"}}`, nil, false, 400, "invalid_request", "tool_choice.type"},
		{"invalid_json", `{"model":`, nil, false, 400, "invalid_json", "JSON"},
		{"missing_messages", `{"model":"fake-1"}`, nil, false, 400, "invalid_request", "messages"},
		{"no_tool_capable_route", `{"model":"text-1","max_tokens":10,"messages":[{"role":"user","content":"hi"}],` + decl + `}`, nil, false, 503, "model_unavailable", "tool calling"},
	}
	for _, label := range labels {
		for _, tc := range cases {
			for _, stream := range []bool{false, true} {
				t.Run(label+"/"+tc.name+"/"+modeName(stream), func(t *testing.T) {
					var opts []envOption
					if tc.disabled {
						opts = append(opts, func(o *v1.Options, _ *recordingExec) { o.Enabled = false })
					}
					e := newProtocolEnv(t, label, loop.DialectAnthropic, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{{Content: "unused"}}}}}, opts...)
					body := tc.body
					if stream && strings.HasPrefix(body, `{"model":"`) {
						body = withStream(body)
					}
					resp := e.postTo("/v1/messages", body, tc.hdr)
					if resp.status != tc.status {
						t.Fatalf("status %d, want %d: %s", resp.status, tc.status, resp.body)
					}
					var got struct {
						Type  string `json:"type"`
						Error struct {
							Type    string         `json:"type"`
							Message string         `json:"message"`
							Code    string         `json:"code"`
							Details map[string]any `json:"details"`
						} `json:"error"`
					}
					if err := json.Unmarshal(resp.body, &got); err != nil {
						t.Fatal(err)
					}
					if got.Type != "error" || got.Error.Type == "" {
						t.Errorf("not the Anthropic error shape: %s", resp.body)
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
					golden(t, "messages_reject_"+tc.name+".golden", normalizedBody(t, resp.body, label))
				})
			}
		}
	}
}

// A previous response sent back (JSON or assembled from the stream) turns
// into ordinary tool round trips for the model, on either protocol.
func TestMessagesContinuation(t *testing.T) {
	script := fakeupstream.Script{Conversations: []fakeupstream.Conversation{
		{Match: "and now", Rounds: []fakeupstream.Round{{Content: "Still two.", Usage: usage(300, 3, 0, 0)}}},
		{Match: "roll", Rounds: []fakeupstream.Round{
			{Content: "Let me roll.", ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["two"]}`)}, Usage: usage(100, 20, 0, 0)},
			{Content: "You got two.", Usage: usage(150, 10, 0, 0)},
		}},
	}}
	first := `{` + messagesPrefix + `,"messages":[{"role":"user","content":"roll"}],` + mcpServers + `,"tools":[` + toolsetDice + `]}`
	for _, label := range labels {
		for _, p := range protocols {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%s", label, p, modeName(stream)), func(t *testing.T) {
					e := newProtocolEnv(t, label, p, script)
					var prev map[string]any
					if stream {
						r := e.postTo("/v1/messages", withStream(first), nil)
						prev = assembleStream(t, r.body, label)
					} else {
						r := e.postTo("/v1/messages", first, nil)
						if err := json.Unmarshal(r.body, &prev); err != nil {
							t.Fatal(err)
						}
					}
					content, _ := json.Marshal(prev["content"])
					follow := `{` + messagesPrefix + `,"messages":[{"role":"user","content":"roll"},{"role":"assistant","content":` + string(content) + `},{"role":"user","content":"and now?"}],` + mcpServers + `,"tools":[` + toolsetDice + `]}`
					r := e.postTo("/v1/messages", follow, nil)
					if r.status != 200 {
						t.Fatalf("follow-up status %d: %s", r.status, r.body)
					}
					if !strings.Contains(string(r.body), "Still two.") {
						t.Errorf("follow-up answer: %s", r.body)
					}
					msgs := upstreamMessages(t, e, len(e.fake.Requests())-1)
					shape, _ := json.Marshal(msgs)
					var want string
					if p == loop.DialectAnthropic {
						want = `[{"content":"roll","role":"user"},` +
							`{"content":[{"text":"Let me roll.","type":"text"},{"id":"call_a","input":{"options":["two"]},"name":"random_choice","type":"tool_use"}],"role":"assistant"},` +
							`{"content":[{"content":[{"text":"two (option 1 of 1)","type":"text"}],"tool_use_id":"call_a","type":"tool_result"}],"role":"user"},` +
							`{"content":[{"text":"You got two.","type":"text"}],"role":"assistant"},` +
							`{"content":"and now?","role":"user"}]`
					} else {
						want = `[{"content":"roll","role":"user"},` +
							`{"content":"Let me roll.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"options\":[\"two\"]}","name":"random_choice"},"id":"call_a","type":"function"}]},` +
							`{"content":"two (option 1 of 1)","role":"tool","tool_call_id":"call_a"},` +
							`{"content":"You got two.","role":"assistant"},` +
							`{"content":"and now?","role":"user"}]`
					}
					if string(shape) != want {
						t.Errorf("upstream conversation\n got %s\nwant %s", shape, want)
					}
					if n := len(e.exec.Proposals()); n != 1 {
						t.Errorf("continuation re-ran tools: %d executions", n)
					}
				})
			}
		}
	}
}

// count_tokens counts the hosted tool definitions: declaring them counts
// exactly as much as sending the same definitions as caller tools, and more
// than no tools. With an Anthropic route the upstream counts, hosted
// definitions included in what it is sent.
func TestMessagesCountTokens(t *testing.T) {
	for _, label := range labels {
		for _, p := range protocols {
			t.Run(fmt.Sprintf("%s/%s", label, p), func(t *testing.T) {
				e := newProtocolEnv(t, label, p, fakeupstream.Script{})
				count := func(body string) (int64, string) {
					t.Helper()
					r := e.postTo("/v1/messages/count_tokens", body, nil)
					if r.status != 200 {
						t.Fatalf("status %d: %s", r.status, r.body)
					}
					var out map[string]any
					if err := json.Unmarshal(r.body, &out); err != nil {
						t.Fatal(err)
					}
					ext := out[label].(map[string]any)
					return int64(out["input_tokens"].(float64)), ext["count_method"].(string)
				}
				const msgs = `"model":"fake-1","messages":[{"role":"user","content":"What time is it in Tokyo? Then pick tea or coffee."}]`
				bare, method := count(`{` + msgs + `}`)
				hosted, _ := count(`{` + msgs + `,` + mcpServers + `,"tools":[` + toolsetSome + `]}`)
				if hosted <= bare {
					t.Fatalf("with hosted tools %d, without %d", hosted, bare)
				}
				if p == loop.DialectAnthropic {
					if method != "upstream:fake" {
						t.Errorf("count method %q", method)
					}
					reqs := e.upstreamRequests()
					if got := toolNames(reqs[1]); !reflect.DeepEqual(got, []string{"random_choice", "sleep"}) {
						t.Errorf("count_tokens sent tools %v", got)
					}
					if _, ok := reqs[1]["max_tokens"]; ok {
						t.Errorf("count_tokens body carries max_tokens")
					}
					return
				}
				if method != "estimate:cl100k_base" {
					t.Errorf("count method %q", method)
				}
				// The same definitions as caller tools count the same.
				defs, err := loop.NewRunner(e.exec, loop.RunnerOptions{}).Definitions([]string{"random_choice", "sleep"}, catalog.Chinese)
				if err != nil {
					t.Fatal(err)
				}
				var tools []string
				for _, d := range defs {
					b, _ := json.Marshal(map[string]any{"name": d.Name, "description": d.Description, "input_schema": d.Parameters})
					tools = append(tools, string(b))
				}
				asCaller, _ := count(`{` + msgs + `,"tools":[` + strings.Join(tools, ",") + `]}`)
				if asCaller != hosted {
					t.Errorf("hosted definitions count %d, the same as caller tools %d", hosted, asCaller)
				}
				if n := len(e.fake.Requests()); n != 0 {
					t.Errorf("the estimate contacted the upstream %d times", n)
				}
			})
		}
	}
}

// An OpenAI-format caller reaches an Anthropic upstream: the conversation
// is translated (tool_result blocks, input_schema, max_tokens, x-api-key)
// and the answer rendered in Chat Completions form, streaming and not.
func TestChatCompletionsOverAnthropicUpstream(t *testing.T) {
	rounds := []fakeupstream.Round{
		{Content: "Let me roll.", ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["two"]}`)}, Usage: usage(100, 20, 40, 5)},
		{Content: "You got two.", Usage: usage(150, 10, 100, 2)},
	}
	body := `{"model":"fake-1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"roll"}],"max_completion_tokens":99,"stop":"END","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"]}]}`
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", loop.DialectAnthropic, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}})
			b := body
			if stream {
				b = strings.Replace(b, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1)
			}
			r := e.post(t.Context(), b, nil)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if stream {
				evs := sseEvents(t, r.body)
				var text strings.Builder
				var usageSeen map[string]any
				for _, ev := range evs[:len(evs)-1] {
					var c map[string]any
					_ = json.Unmarshal([]byte(ev), &c)
					if u, ok := c["usage"].(map[string]any); ok {
						usageSeen = u
					}
					for _, ch := range c["choices"].([]any) {
						if d, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
							text.WriteString(d)
						}
					}
				}
				if text.String() != "Let me roll.You got two." {
					t.Errorf("streamed text %q", text.String())
				}
				if usageSeen["prompt_tokens"] != 250.0 || usageSeen["completion_tokens"] != 30.0 {
					t.Errorf("usage %v", usageSeen)
				}
			} else {
				var out struct {
					Choices []struct {
						Message struct {
							Content string `json:"content"`
						} `json:"message"`
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
					Usage map[string]any `json:"usage"`
				}
				if err := json.Unmarshal(r.body, &out); err != nil {
					t.Fatal(err)
				}
				if out.Choices[0].Message.Content != "You got two." || out.Choices[0].FinishReason != "stop" {
					t.Errorf("answer %+v", out.Choices[0])
				}
				if out.Usage["prompt_tokens"] != 250.0 || out.Usage["completion_tokens"] != 30.0 {
					t.Errorf("usage %v", out.Usage)
				}
			}
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("%d upstream calls", len(reqs))
			}
			if reqs[0]["system"] != "Be brief." || reqs[0]["max_tokens"] != 99.0 {
				t.Errorf("system/max_tokens not translated: %v %v", reqs[0]["system"], reqs[0]["max_tokens"])
			}
			if ss, _ := json.Marshal(reqs[0]["stop_sequences"]); string(ss) != `["END"]` {
				t.Errorf("stop_sequences %s", ss)
			}
			tool := reqs[0]["tools"].([]any)[0].(map[string]any)
			if tool["name"] != "random_choice" || tool["input_schema"] == nil {
				t.Errorf("tool definition %v", tool)
			}
			res := reqs[1]["messages"].([]any)[2].(map[string]any)["content"].([]any)[0].(map[string]any)
			if res["type"] != "tool_result" || res["tool_use_id"] != "call_a" {
				t.Errorf("tool result %v", res)
			}
			for _, k := range e.fake.Authorizations() {
				if k != "sk-ant-test" {
					t.Errorf("x-api-key %q", k)
				}
			}
		})
	}
}

// An upstream 4xx is relayed with its status, a 5xx becomes 502, in the
// Anthropic error shape, on either protocol, streaming or not (nothing was
// sent yet, so a stream answers with the JSON error).
func TestMessagesUpstreamErrorsAreRelayed(t *testing.T) {
	for _, p := range protocols {
		for _, tc := range []struct {
			upstream, status int
			reason           string
		}{{400, 400, "upstream_rejected"}, {500, 502, "upstream_error"}} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d/%s", p, tc.upstream, modeName(stream)), func(t *testing.T) {
					e := newProtocolEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
						{Status: tc.upstream, Error: json.RawMessage(`{"type":"invalid_request_error","message":"scripted refusal"}`)},
					}}}})
					body := `{` + messagesPrefix + `,"messages":[{"role":"user","content":"hi"}],` + mcpServers + `,"tools":[` + toolsetDice + `]}`
					if stream {
						body = withStream(body)
					}
					r := e.postTo("/v1/messages", body, nil)
					if r.status != tc.status {
						t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
					}
					var got struct {
						Type  string `json:"type"`
						Error struct {
							Message string         `json:"message"`
							Details map[string]any `json:"details"`
						} `json:"error"`
					}
					if err := json.Unmarshal(r.body, &got); err != nil {
						t.Fatal(err)
					}
					if got.Type != "error" || got.Error.Details["reason"] != tc.reason || !strings.Contains(got.Error.Message, "scripted refusal") {
						t.Errorf("error body %s", r.body)
					}
				})
			}
		}
	}
}

// metadata.session_id is the session of the hosted calls; only user_id is
// forwarded (the Messages API refuses other metadata keys).
func TestMessagesMetadataSessionStaysHere(t *testing.T) {
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			e := newProtocolEnv(t, "toolhost", p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
				{ToolCalls: []fakeupstream.ToolCall{call("call_s", "random_choice", `{"options":["a"]}`)}},
				{Content: "a"},
			}}}})
			r := e.postTo("/v1/messages", `{`+messagesPrefix+`,"metadata":{"user_id":"u1","session_id":"s1"},"messages":[{"role":"user","content":"x"}],`+mcpServers+`,"tools":[`+toolsetDice+`]}`, nil)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			props := e.exec.Proposals()
			if len(props) != 1 || props[0].Caller.SessionID != "s1" {
				t.Fatalf("proposals %+v", props)
			}
			for _, req := range e.upstreamRequests() {
				md, _ := json.Marshal(req["metadata"])
				want := `{"user_id":"u1"}`
				if p == loop.DialectOpenAI {
					want = "null" // no Chat Completions meaning
				}
				if string(md) != want {
					t.Errorf("metadata sent upstream %s, want %s", md, want)
				}
			}
		})
	}
}
