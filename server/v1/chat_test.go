package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
)

func usage(prompt, completion, cached, reasoning int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":%d,"audio_tokens":0}}`,
		prompt, completion, prompt+completion, cached, reasoning))
}

func call(id, name, args string) fakeupstream.ToolCall {
	return fakeupstream.ToolCall{ID: id, Name: name, Arguments: args}
}

const weatherFn = `{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

// chatCase is one request/answer scenario, rendered to golden files both
// as a JSON response and as a chunk stream.
type chatCase struct {
	name   string
	rounds []fakeupstream.Round
	// body is the request without "stream"; LABEL is replaced.
	body  string
	check func(t *testing.T, e *env, stream bool, body []byte)
}

var chatCases = []chatCase{
	{
		name:   "no_hosted_tools",
		rounds: []fakeupstream.Round{{Content: "Hello there.", Usage: usage(12, 3, 0, 0)}},
		body:   `{"model":"fake-1","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 1 || reqs[0]["temperature"] != 0.2 {
				t.Fatalf("upstream requests: %v", reqs)
			}
			if _, ok := reqs[0]["tools"]; ok {
				t.Error("tools sent without any declared")
			}
		},
	},
	{
		// Rules 1 and 2: hosted tools run, results in the model's order, the
		// model is called again; middle-round text flows; usage is summed
		// with nested details; cost is the sum of the rounds.
		name: "one_hosted_round",
		rounds: []fakeupstream.Round{
			{Content: "Let me roll.", ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["two"]}`), call("call_b", "random_choice", `{"options":["three"]}`)}, Usage: usage(100, 20, 40, 5)},
			{Content: "You got two.", Usage: usage(150, 10, 100, 2)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"roll"}],"tools":[` + weatherFn + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","sleep"],"require_approval":"never","headers":{"X":"y"},"server_description":"ignored"}],"LABEL":{"max_tool_rounds":3},"max_tool_calls":1}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("want 2 upstream calls, got %d", len(reqs))
			}
			if _, ok := reqs[0]["max_tool_calls"]; ok {
				t.Error("max_tool_calls was passed upstream")
			}
			msgs := reqs[1]["messages"].([]any)
			if len(msgs) != 4 {
				t.Fatalf("second round messages: %v", msgs)
			}
			for i, id := range []string{"call_a", "call_b"} {
				m := msgs[2+i].(map[string]any)
				if m["role"] != "tool" || m["tool_call_id"] != id {
					t.Errorf("message %d = %v, want the result of %s", 2+i, m, id)
				}
			}
			if !strings.Contains(msgs[2].(map[string]any)["content"].(string), "two (option 1 of 1)") {
				t.Errorf("random_choice result not passed back: %v", msgs[2])
			}
		},
	},
	{
		// A failed tool goes back to the model as a result; the loop
		// continues to a second hosted round.
		name: "two_rounds_with_failed_tool",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_t", "get_time", `{"timezone":"Mars/Base"}`)}, Usage: usage(50, 5, 0, 0)},
			{ToolCalls: []fakeupstream.ToolCall{call("call_c", "random_choice", `{"options":["tea"]}`)}, Usage: usage(70, 5, 0, 0)},
			{Content: "Tea it is.", Usage: usage(90, 4, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"pick"}],"tools":[{"type":"mcp","server_label":"LABEL","require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 3 {
				t.Fatalf("want 3 upstream calls, got %d", len(reqs))
			}
			failed := reqs[1]["messages"].([]any)[2].(map[string]any)
			if !strings.Contains(failed["content"].(string), "Mars/Base") {
				t.Errorf("failure not given to the model: %v", failed)
			}
		},
	},
	{
		// Rule 3: a caller function ends the loop; the hosted call of the
		// same round is skipped and hidden from tool_calls.
		name: "caller_function_skips_hosted",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_h", "random_choice", `{"options":["six"]}`), call("call_w", "get_weather", `{"city":"Paris"}`)}, Usage: usage(40, 8, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"weather"}],"tools":[` + weatherFn + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			if n := len(e.upstreamRequests()); n != 1 {
				t.Fatalf("want 1 upstream call, got %d", n)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Fatalf("hosted tool executed %d times, want skipped", n)
			}
		},
	},
	{
		// A name the model invents (§6.14: rejected at lookup, no near-name
		// matching) is a failed hosted call: the model gets unknown_tool
		// with the names it may use, the valid hosted call of the same
		// round runs, the loop goes on; no tool_calls delta of either
		// reaches the caller.
		name: "invented_tool_name_fails",
		rounds: []fakeupstream.Round{
			{Content: "Checking.", ToolCalls: []fakeupstream.ToolCall{call("call_tiem", "get_tiem", `{"timezone":"Europe/Paris"}`), call("call_time", "get_time", `{"timezone":"UTC"}`)}, ArgsChunk: 5, Usage: usage(40, 8, 0, 0)},
			{Content: "It is noon UTC.", Usage: usage(60, 5, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"time?"}],"tools":[` + weatherFn + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			checkInventedRound(t, e, loop.DialectOpenAI, `unknown_tool: unknown tool "get_tiem"; available tools: get_time, get_weather`)
			if n := chatToolCalls(t, body, stream); n != 0 {
				t.Errorf("%d tool calls reached the caller: %s", n, body)
			}
		},
	},
	{
		// An invented name in a round with a caller function: the loop ends
		// there as for any caller round, the hosted call is skipped, the
		// invented call goes back to the caller in the model's order, as
		// it would without hosted tools.
		name: "invented_tool_with_caller_function",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_tiem", "get_tiem", `{"timezone":"Europe/Paris"}`), call("call_time", "get_time", `{}`), call("call_w", "get_weather", `{"city":"Paris"}`)}, ArgsChunk: 4, Usage: usage(40, 8, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"weather"}],"tools":[` + weatherFn + `,{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"}]}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			if n := len(e.upstreamRequests()); n != 1 {
				t.Fatalf("want 1 upstream call, got %d", n)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Fatalf("%d calls executed, want none", n)
			}
			if n := chatToolCalls(t, body, stream); n != 2 {
				t.Errorf("%d tool calls reached the caller, want get_tiem and get_weather", n)
			}
		},
	},
	{
		// Rule 5: after max_tool_rounds one last call with tool choice none;
		// a hosted call it still asks for is skipped.
		name: "max_tool_rounds_reached",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_1", "random_choice", `{"options":["six"]}`)}, Usage: usage(30, 5, 0, 0)},
			{Content: "Enough.", ToolCalls: []fakeupstream.ToolCall{call("call_2", "random_choice", `{"options":["six"]}`)}, Usage: usage(40, 6, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"roll forever"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"never"}],"LABEL":{"max_tool_rounds":1}}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 2 {
				t.Fatalf("want 2 upstream calls, got %d", len(reqs))
			}
			if reqs[1]["tool_choice"] != "none" {
				t.Errorf("final call tool_choice = %v, want none", reqs[1]["tool_choice"])
			}
			if len(reqs[1]["tools"].([]any)) != 1 {
				t.Errorf("final call must still carry the tool definitions")
			}
			if n := len(e.exec.Proposals()); n != 1 {
				t.Errorf("executed %d calls, want 1", n)
			}
		},
	},
	{
		// Fields of the upstream's dialect the loop does not read
		// (reasoning_content) reach the caller, streamed and not.
		name: "reasoning_passes_through",
		rounds: []fakeupstream.Round{
			{Reasoning: "Think first.", ToolCalls: []fakeupstream.ToolCall{call("call_r", "random_choice", `{"options":["x"]}`)}, Usage: usage(10, 3, 0, 0)},
			{Reasoning: "Now answer.", Content: "x", Usage: usage(20, 3, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"think"}],"tools":[{"type":"mcp","server_label":"LABEL"}]}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			if !strings.Contains(string(body), `"reasoning_content":"Now`) {
				t.Errorf("reasoning missing from the response")
			}
			// The hosted round's assistant message goes back upstream with
			// its reasoning.
			msgs := e.upstreamRequests()[1]["messages"].([]any)
			if msgs[1].(map[string]any)["reasoning_content"] != "Think first." {
				t.Errorf("assistant message sent back: %v", msgs[1])
			}
		},
	},
	{
		// Rule 5 with max_tool_rounds 0: the first call is already the
		// final one.
		name: "max_tool_rounds_zero",
		rounds: []fakeupstream.Round{
			{Content: "No tools today.", ToolCalls: []fakeupstream.ToolCall{call("call_z", "random_choice", `{"options":["six"]}`)}, Usage: usage(20, 4, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"no tools"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"]}],"LABEL":{"max_tool_rounds":0}}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			if len(reqs) != 1 || reqs[0]["tool_choice"] != "none" {
				t.Fatalf("upstream requests %v", reqs)
			}
			if n := len(e.exec.Proposals()); n != 0 {
				t.Errorf("executed %d calls", n)
			}
		},
	},
	{
		// Rule 4 with the mcp tool_choice form: forced on the first call,
		// auto after the hosted round; the response echoes tool_choice.
		name: "forced_tool_choice_relaxed",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_f", "random_choice", `{"options":["six"]}`)}, Usage: usage(30, 5, 0, 0)},
			{Content: "Rolled.", Usage: usage(40, 2, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"roll"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","get_time"],"require_approval":"never"}],"tool_choice":{"type":"mcp","server_label":"LABEL","name":"random_choice"}}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			first, _ := json.Marshal(reqs[0]["tool_choice"])
			if string(first) != `{"function":{"name":"random_choice"},"type":"function"}` {
				t.Errorf("first tool_choice = %s", first)
			}
			if reqs[1]["tool_choice"] != "auto" {
				t.Errorf("second tool_choice = %v, want auto", reqs[1]["tool_choice"])
			}
		},
	},
	{
		// Rule 4 with "required" and the mcp form without a name.
		name: "required_tool_choice_relaxed",
		rounds: []fakeupstream.Round{
			{ToolCalls: []fakeupstream.ToolCall{call("call_r", "random_choice", `{"options":["six"]}`)}, Usage: usage(30, 5, 0, 0)},
			{Content: "Rolled.", Usage: usage(40, 2, 0, 0)},
		},
		body: `{"model":"fake-1","messages":[{"role":"user","content":"roll"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"]}],"tool_choice":{"type":"mcp","server_label":"LABEL"}}`,
		check: func(t *testing.T, e *env, stream bool, body []byte) {
			reqs := e.upstreamRequests()
			if reqs[0]["tool_choice"] != "required" || reqs[1]["tool_choice"] != "auto" {
				t.Errorf("tool_choice = %v then %v, want required then auto", reqs[0]["tool_choice"], reqs[1]["tool_choice"])
			}
		},
	},
}

func TestChatCompletionsGolden(t *testing.T) {
	for _, label := range labels {
		for _, tc := range chatCases {
			for _, stream := range []bool{false, true} {
				mode := "json"
				if stream {
					mode = "stream"
				}
				t.Run(label+"/"+tc.name+"/"+mode, func(t *testing.T) {
					e := newEnv(t, label, tc.rounds)
					body := tc.body
					if stream {
						body = strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1)
					}
					resp := e.post(context.Background(), body, nil)
					if resp.status != http.StatusOK {
						t.Fatalf("status %d: %s", resp.status, resp.body)
					}
					if stream {
						if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
							t.Fatalf("content type %q", ct)
						}
						golden(t, tc.name+".stream.golden", normalizedStream(t, resp.body, label))
						checkStreamInvariants(t, resp.body, label)
					} else {
						golden(t, tc.name+".json.golden", normalizedBody(t, resp.body, label))
					}
					if tc.check != nil {
						tc.check(t, e, stream, resp.body)
					}
				})
			}
		}
	}
}

// checkStreamInvariants: every chunk has the first upstream chunk's id,
// created and model; extension chunks have empty choices; [DONE] is last.
func checkStreamInvariants(t *testing.T, body []byte, label string) {
	t.Helper()
	evs := sseEvents(t, body)
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]")
	}
	var first map[string]any
	for _, ev := range evs[:len(evs)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = c
		}
		for _, k := range []string{"id", "created", "model"} {
			if c[k] != first[k] {
				t.Errorf("chunk %s = %v, want %v (the first chunk's)", k, c[k], first[k])
			}
		}
		if c["object"] != "chat.completion.chunk" {
			t.Errorf("object = %v", c["object"])
		}
		if _, ok := c[label]; ok && len(c["choices"].([]any)) != 0 {
			t.Errorf("extension chunk with choices: %s", ev)
		}
	}
	// Each hosted call: one start notice (status "", ms 0) before one end
	// notice with a status.
	seen := map[string]string{}
	for _, ev := range evs[:len(evs)-1] {
		var c map[string]any
		_ = json.Unmarshal([]byte(ev), &c)
		tool := toolNotice(c, label)
		if tool == nil {
			continue
		}
		id := tool["id"].(string)
		switch st := tool["status"].(string); {
		case st == "" && seen[id] == "":
			if tool["ms"] != 0.0 {
				t.Errorf("start notice with ms %v", tool["ms"])
			}
			seen[id] = "started"
		case st != "" && seen[id] == "started":
			seen[id] = "ended"
		default:
			t.Errorf("tool notice %s out of order (state %q)", ev, seen[id])
		}
	}
	for id, st := range seen {
		if st != "ended" {
			t.Errorf("call %s never ended", id)
		}
	}
	if first["id"] != "chatcmpl-fake-0" {
		t.Errorf("stream id %v, want the first upstream chunk's", first["id"])
	}
}

// checkInventedRound checks a run whose first round asked for get_tiem
// (call_tiem) and get_time (call_time) and whose second answered: both
// were executed, the second upstream request carries the refusal (refusal,
// in full) for get_tiem and the fixed clock's time for get_time, in the
// model's order, and the refusal is an error result in protocol p.
func checkInventedRound(t *testing.T, e *env, p loop.Dialect, refusal string) {
	t.Helper()
	if n := len(e.upstreamRequests()); n != 2 {
		t.Fatalf("want 2 upstream calls, got %d", n)
	}
	var names []string
	for _, pr := range e.exec.Proposals() {
		names = append(names, pr.Tool)
		if !slices.Contains(pr.Visible, "get_time") || slices.Contains(pr.Visible, "get_tiem") {
			t.Errorf("proposal of %s with visible names %v", pr.Tool, pr.Visible)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"get_tiem", "get_time"}) {
		t.Errorf("executed %v, want get_tiem and get_time", names)
	}
	for _, o := range e.exec.outcomes {
		if o.Tool == "get_tiem" && (o.Code != tools.CodeUnknownTool || !o.IsError) {
			t.Errorf("get_tiem outcome %+v", o)
		}
	}
	type result struct {
		id, text string
		isError  bool
	}
	var got []result
	for _, m := range upstreamMessages(t, e, 1) {
		m := m.(map[string]any)
		switch {
		case m["role"] == "tool":
			got = append(got, result{id: m["tool_call_id"].(string), text: m["content"].(string), isError: strings.HasPrefix(m["content"].(string), "[tool error] ")})
		case m["type"] == "function_call_output":
			got = append(got, result{id: m["call_id"].(string), text: m["output"].(string), isError: strings.HasPrefix(m["output"].(string), "[tool error] ")})
		case p == loop.DialectAnthropic && m["role"] == "user":
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				b := b.(map[string]any)
				if b["type"] != "tool_result" {
					continue
				}
				isErr, _ := b["is_error"].(bool)
				got = append(got, result{id: b["tool_use_id"].(string), text: fmt.Sprint(b["content"]), isError: isErr})
			}
		}
	}
	if len(got) != 2 || got[0].id != "call_tiem" || got[1].id != "call_time" {
		t.Fatalf("tool results sent to the model: %+v", got)
	}
	if !got[0].isError || !strings.Contains(got[0].text, refusal) {
		t.Errorf("get_tiem result %+v, want an error holding %q", got[0], refusal)
	}
	if got[1].isError || !strings.Contains(got[1].text, "2026-05-01T12:00:00Z (UTC, UTC+00:00, unix 1777636800)") {
		t.Errorf("get_time result %+v", got[1])
	}
}

// chatToolCalls counts the tool calls a Chat Completions answer gives the
// caller: in the message, or started in stream deltas.
func chatToolCalls(t *testing.T, body []byte, stream bool) int {
	t.Helper()
	type calls struct {
		ToolCalls []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	var chunks []string
	if stream {
		chunks = sseEvents(t, body)
	} else {
		chunks = []string{string(body)}
	}
	n := 0
	for _, c := range chunks {
		var v struct {
			Choices []struct {
				Message calls `json:"message"`
				Delta   calls `json:"delta"`
			} `json:"choices"`
		}
		if c == "[DONE]" {
			continue
		}
		if err := json.Unmarshal([]byte(c), &v); err != nil {
			t.Fatal(err)
		}
		for _, ch := range v.Choices {
			for _, tc := range append(ch.Message.ToolCalls, ch.Delta.ToolCalls...) {
				if tc.Function.Name != "" {
					n++
				}
			}
		}
	}
	return n
}
