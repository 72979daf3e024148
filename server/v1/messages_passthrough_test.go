package v1_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
	"github.com/toolhost/toolhost/tools"
)

// passThroughBlocks are an Anthropic answer using every server tool: its
// thinking, text, server_tool_use and result blocks of web search, web
// fetch and bash code execution, a cited text, a redacted_thinking, and a
// call of a hosted tool (toolhost's random_choice) so that the loop sends
// the round back upstream.
const passThroughBlocks = `[{"type":"thinking","thinking":"Search first.","signature":"sig_up"},` +
	`{"type":"text","text":"I'll search."},` +
	`{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"perovskite sealing"}},` +
	`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","url":"https://a.example/","title":"A","encrypted_content":"EqgfCioIARgBIiQ","page_age":"April 30, 2025"}]},` +
	`{"type":"text","text":"Sealed with glass.","citations":[{"type":"web_search_result_location","url":"https://a.example/","title":"A","encrypted_index":"Eo8BCioIAhgBIiQ","cited_text":"glass"}]},` +
	`{"type":"server_tool_use","id":"srvtoolu_02","name":"web_fetch","input":{"url":"https://a.example/"}},` +
	`{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_02","content":{"type":"web_fetch_result","url":"https://a.example/","retrieved_at":"2025-08-25T10:30:00Z","content":{"type":"document","source":{"type":"text","media_type":"text/plain","data":"Glass."},"title":"A"}}},` +
	`{"type":"server_tool_use","id":"srvtoolu_03","name":"bash_code_execution","input":{"command":"echo hi"}},` +
	`{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_03","content":{"type":"bash_code_execution_result","stdout":"hi\n","stderr":"","return_code":0,"content":[]}},` +
	`{"type":"redacted_thinking","data":"EmwKAhgB"},` +
	`{"type":"tool_use","id":"toolu_h","name":"random_choice","input":{"options":["six"]}}]`

// anthropicEvents is the event stream of a message with content, as the
// Messages API streams it: text and thinking from empty starts (citations
// first), inputs as input_json_delta pieces, other blocks whole.
func anthropicEvents(t *testing.T, content, stop string) string {
	t.Helper()
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &blocks); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,%s}\n\n", typ, typ, data) }
	str := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	pieces := func(s string, n int) []string {
		var out []string
		for len(s) > n {
			out = append(out, s[:n])
			s = s[n:]
		}
		return append(out, s)
	}
	ev("message_start", `"message":{"id":"msg_up","type":"message","role":"assistant","model":"fake-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}`)
	for i, blk := range blocks {
		var typ, text string
		_ = json.Unmarshal(blk["type"], &typ)
		delta := func(d string) { ev("content_block_delta", fmt.Sprintf(`"index":%d,"delta":%s`, i, d)) }
		switch typ {
		case "text", "thinking":
			_ = json.Unmarshal(blk[typ], &text)
			ev("content_block_start", fmt.Sprintf(`"index":%d,"content_block":{"type":%q,%q:""}`, i, typ, typ))
			var cites []json.RawMessage
			_ = json.Unmarshal(blk["citations"], &cites)
			for _, c := range cites {
				delta(`{"type":"citations_delta","citation":` + string(c) + `}`)
			}
			for _, p := range pieces(text, 5) {
				delta(fmt.Sprintf(`{"type":"%s_delta",%q:%s}`, typ, typ, str(p)))
			}
			if sig, ok := blk["signature"]; ok {
				delta(`{"type":"signature_delta","signature":` + string(sig) + `}`)
			}
		default:
			start := blk
			input, ok := blk["input"]
			if ok {
				start = map[string]json.RawMessage{}
				for k, v := range blk {
					start[k] = v
				}
				start["input"] = json.RawMessage(`{}`)
			}
			sb, _ := json.Marshal(start)
			ev("content_block_start", fmt.Sprintf(`"index":%d,"content_block":%s`, i, sb))
			if ok {
				for _, p := range pieces(string(input), 7) {
					delta(`{"type":"input_json_delta","partial_json":` + str(p) + `}`)
				}
			}
		}
		ev("content_block_stop", fmt.Sprintf(`"index":%d`, i))
	}
	ev("message_delta", fmt.Sprintf(`"delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":5,"server_tool_use":{"web_search_requests":1}}`, stop))
	ev("message_stop", `"x":0`)
	return strings.Replace(b.String(), `{"type":"message_stop","x":0}`, `{"type":"message_stop"}`, 1)
}

// anthropicTurns is an Anthropic API that answers the first turn of a
// conversation with first and later turns with "Done."; streamed when
// asked. Each request body goes to the channel.
func anthropicTurns(t *testing.T, first string) (url string, bodies <-chan map[string]any) {
	t.Helper()
	got := make(chan map[string]any, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- body
		content, stop := first, "tool_use"
		if len(body["messages"].([]any)) > 1 {
			content, stop = `[{"type":"text","text":"Done."}]`, "end_turn"
		}
		if body["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, anthropicEvents(t, content, stop))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_up","type":"message","role":"assistant","model":"fake-1","content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":1}}}`, content, stop)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// Streamed on an Anthropic route, the server tools' blocks pass through as
// the API streamed them (a golden of the stream); the stream adds up to the
// JSON answer; and the round the stream assembled goes back upstream with
// every block as it came (server_tool_use with its streamed input).
func TestMessagesServerToolsStreamPassThrough(t *testing.T) {
	const label = "toolhost"
	url, bodies := anthropicTurns(t, passThroughBlocks)
	decl := `{"type":"web_search_20250305","name":"web_search","max_uses":3},{"type":"web_fetch_20250910","name":"web_fetch"},{"type":"code_execution_20250825","name":"code_execution"}`
	e := newToolsEnv(t, label, loop.DialectAnthropic, fakeupstream.Script{}, tools.Options{}, searxngTools(t), withAnthropicRoute(t, url))
	body := `{` + messagesPrefix + `,"messages":[{"role":"user","content":"seal?"}],` + mcpServers + `,"tools":[` + decl + `,` + toolsetDice + `]}`
	want := decodeJSON(t, []byte(passThroughBlocks))
	var answers []map[string]any
	for _, stream := range []bool{false, true} {
		b := body
		if stream {
			b = withStream(body)
		}
		resp := e.postTo("/v1/messages", b, nil)
		if resp.status != http.StatusOK {
			t.Fatalf("stream %v: status %d: %s", stream, resp.status, resp.body)
		}
		<-bodies
		sent := (<-bodies)["messages"].([]any)[1].(map[string]any)
		if got := encodeJSON(sent["content"], false); string(got) != string(encodeJSON(want, false)) {
			t.Errorf("stream %v: the round went back upstream as\n%s\nwant the blocks as they came\n%s", stream, got, encodeJSON(want, false))
		}
		if !stream {
			answers = append(answers, normalize(decodeJSON(t, resp.body), label).(map[string]any))
			continue
		}
		golden(t, "messages_server_tools_pass_through.anthropic.stream.golden", normalizedEvents(t, resp.body, label))
		answers = append(answers, normalize(assembleStream(t, resp.body, label), label).(map[string]any))
	}
	for _, k := range []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage", "LABEL"} {
		if w, g := encodeJSON(answers[0][k], false), encodeJSON(answers[1][k], false); string(w) != string(g) {
			t.Errorf("%s differs:\nstream %s\njson   %s", k, g, w)
		}
	}
	content := answers[1]["content"].([]any)
	if n := len(content); n != 13 {
		t.Fatalf("%d blocks, want the upstream's 10 blocks, mcp_tool_use, mcp_tool_result and the last text", n)
	}
	if got, want := encodeJSON(content[:10], false), encodeJSON(normalize(want, label).([]any)[:10], false); string(got) != string(want) {
		t.Errorf("streamed blocks\n%s\nwant the upstream's\n%s", got, want)
	}
}

// anthropicRaw is an Anthropic API that streams sse as it is.
func anthropicRaw(t *testing.T, sse string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, sse)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A stream the upstream breaks ends in a clear upstream error event, never
// a panic; a block of a type nobody knows yet passes through with its
// deltas.
func TestMessagesAnthropicStreamHostile(t *testing.T) {
	const start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_up\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake-1\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
	const end = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	ev := func(data string) string { return "data: " + data + "\n\n" }
	huge := `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + strings.Repeat("x", upstream.MaxEventBytes) + `"}}`
	cases := []struct {
		name     string
		sse      string
		contains []string // in the stream, in order
	}{
		{"unknown_block_type_passes",
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"future_tool_result","tool_use_id":"srvtoolu_9","content":{"a":1}}}`) +
				ev(`{"type":"content_block_delta","index":0,"delta":{"type":"future_delta","b":[2]}}`) +
				ev(`{"type":"content_block_stop","index":0}`),
			[]string{`"content_block":{"type":"future_tool_result","tool_use_id":"srvtoolu_9","content":{"a":1}}`, `"delta":{"type":"future_delta","b":[2]}`, `content_block_stop`, `message_stop`}},
		{"stop_without_start", ev(`{"type":"content_block_stop","index":3}`),
			[]string{`event: error`, `content_block_stop for block 3, which never started`}},
		{"stop_twice",
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`) +
				ev(`{"type":"content_block_stop","index":0}`) + ev(`{"type":"content_block_stop","index":0}`),
			[]string{`event: error`, `content_block_stop for block 0, which has stopped already`}},
		{"started_twice",
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
				ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			[]string{`event: error`, `content_block_start for block 0, which has started already`}},
		{"input_not_json",
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`) +
				ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}`) +
				ev(`{"type":"content_block_stop","index":0}`),
			[]string{`event: error`, `server_tool_use 0: input is not JSON`}},
		{"huge_input_json_delta",
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`) + ev(huge),
			[]string{`event: error`, `over the size limit`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := anthropicRaw(t, start+tc.sse+end)
			e := newToolsEnv(t, "toolhost", loop.DialectAnthropic, fakeupstream.Script{}, tools.Options{}, nil, withAnthropicRoute(t, url))
			resp := e.postTo("/v1/messages", withStream(`{`+messagesPrefix+`,"messages":[{"role":"user","content":"hi"}]}`), nil)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			rest := string(resp.body)
			for _, s := range tc.contains {
				at := strings.Index(rest, s)
				if at < 0 {
					t.Fatalf("stream lacks %s (in order):\n%.2000s", s, resp.body)
				}
				rest = rest[at+len(s):]
			}
			if testing.Verbose() {
				t.Logf("%s", resp.body)
			}
		})
	}
}
