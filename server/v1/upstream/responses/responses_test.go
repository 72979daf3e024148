package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got (JSON, indented here) with testdata/NAME.golden.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", name, err, got)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("%s differs from %s (go test -update rewrites it)\ngot:\n%s", name, path, buf.Bytes())
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// conversation is a hosted round trip in canonical form: a system prompt,
// a user turn with an image, an assistant turn that reasoned (its native
// reasoning item), spoke, called a hosted tool, a namespaced function and a
// custom tool, and the results.
func conversation() []loop.Message {
	return []loop.Message{
		{Role: loop.RoleSystem, Text: "Be brief."},
		{Role: loop.RoleUser, Text: "what is new?", Parts: []loop.Part{
			{Type: "text", Text: "what is new?", Raw: raw(`{"type":"text","text":"what is new?"}`)},
			{Type: "image_url", Raw: raw(`{"type":"image_url","image_url":{"url":"https://example.org/a.png","detail":"low"}}`)},
		}},
		{Role: loop.RoleAssistant, Text: "Searching.", NativeItems: []json.RawMessage{
			raw(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"look it up"}],"encrypted_content":"enc_1"}`),
		}, ToolCalls: []loop.ToolCall{
			{ID: "call_1", Name: "web_search", Args: raw(`{"query":"news"}`)},
			{ID: "call_2", Name: "repo__read_file", Args: raw(`{"path":"a.go"}`)},
			{ID: "call_3", Name: "apply_diff", Args: raw(`{"input":"*** Begin Patch"}`)},
		}},
		{Role: loop.RoleTool, ToolCallID: "call_1", Text: "3 results"},
		{Role: loop.RoleTool, ToolCallID: "call_2", Text: "no such file", IsError: true},
		{Role: loop.RoleTool, ToolCallID: "call_3", Text: "applied"},
	}
}

func functions() []loop.Function {
	return []loop.Function{
		{Name: "web_search", Description: "Searches the web.", Parameters: raw(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
		{Name: "repo__read_file", Parameters: raw(`{"type":"object"}`), Dialect: loop.DialectOpenAI,
			Raw: raw(`{"type":"function","function":{"name":"repo__read_file","parameters":{"type":"object"},"strict":true}}`)},
	}
}

// The canonical conversation becomes input items in order (the reasoning
// item before the turn's text and calls), the functions Responses
// function tools (strict written out), and the options of each face their
// Responses spelling; a caller's own Responses members and built-in tools
// go as they came.
func TestEncodeRequestGolden(t *testing.T) {
	tests := []struct {
		name string
		req  loop.UpstreamRequest
	}{
		{"encode_chat_options", loop.UpstreamRequest{
			Model: "m", Messages: conversation(), Tools: functions(), Stream: true,
			ToolChoice:     loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: "web_search"},
			OptionsDialect: loop.DialectOpenAI,
			Options: map[string]json.RawMessage{"max_tokens": raw("300"), "temperature": raw("0.2"), "reasoning_effort": raw(`"low"`),
				"response_format": raw(`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}`), "stop": raw(`["\n"]`), "stream": raw("true")},
		}},
		{"encode_messages_options", loop.UpstreamRequest{
			Model: "m", Tools: functions(), ToolChoice: loop.ToolChoice{Mode: loop.ToolChoiceAuto},
			Messages: []loop.Message{{Role: loop.RoleUser, Text: "see", Parts: []loop.Part{
				{Type: "text", Text: "see", Raw: raw(`{"type":"text","text":"see"}`)},
				{Type: "image", Raw: raw(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}`)},
				{Type: "document", Raw: raw(`{"type":"document","source":{"type":"text","data":"x"}}`)},
			}}},
			OptionsDialect: loop.DialectAnthropic,
			Options:        map[string]json.RawMessage{"max_tokens": raw("1024"), "top_p": raw("0.9"), "metadata": raw(`{"user_id":"u"}`), "thinking": raw(`{"type":"enabled"}`)},
		}},
		{"encode_native", loop.UpstreamRequest{
			Model: "m", Messages: conversation()[1:3], Tools: functions(),
			ToolChoice: loop.ToolChoice{Mode: loop.ToolChoiceNone},
			Options:    map[string]json.RawMessage{"max_tokens": raw("5")}, OptionsDialect: loop.DialectOpenAI,
			Native: &loop.Native{Dialect: loop.DialectResponses,
				Fields: map[string]json.RawMessage{"include": raw(`["reasoning.encrypted_content"]`), "store": raw("false"),
					"reasoning": raw(`{"effort":"high","summary":"auto"}`), "prompt_cache_key": raw(`"k"`), "client_metadata": raw(`{"x":"y"}`),
					"text": raw(`{"verbosity":"low"}`), "truncation": raw(`"auto"`), "stream": raw("true"), "stream_options": raw(`{"include_obfuscation":false}`)},
				Tools: []json.RawMessage{raw(`{"type":"web_search","filters":{"allowed_domains":["example.org"]}}`)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodeRequest(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b)
		})
	}
}

// A native request's members are the caller's: encoding must not change
// the map the request shares with later rounds.
func TestEncodeRequestLeavesTheCallersMembers(t *testing.T) {
	fields := map[string]json.RawMessage{"stream": raw("true"), "store": raw("false")}
	req := loop.UpstreamRequest{Model: "m", Messages: conversation()[1:2], Native: &loop.Native{Dialect: loop.DialectResponses, Fields: fields}}
	if _, err := EncodeRequest(&req); err != nil {
		t.Fatal(err)
	}
	if len(fields) != 2 {
		t.Fatalf("the caller's members were changed: %v", fields)
	}
}

// answerView is an answer as the golden files show it.
type answerView struct {
	Deltas       []deltaView       `json:"deltas,omitempty"`
	ID           string            `json:"id"`
	Created      int64             `json:"created"`
	Model        string            `json:"model"`
	Text         string            `json:"text"`
	ToolCalls    []loop.ToolCall   `json:"tool_calls"`
	NativeItems  []json.RawMessage `json:"native_items"`
	Raw          json.RawMessage   `json:"raw"`
	FinishReason string            `json:"finish_reason"`
	Usage        [3]int64          `json:"usage_in_out_cached"`
	Dialect      loop.Dialect      `json:"dialect"`
}

type deltaView struct {
	Meta  *loop.Meta                 `json:"meta,omitempty"`
	Text  string                     `json:"text,omitempty"`
	Tool  *loop.ToolDelta            `json:"tool,omitempty"`
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

func view(r *loop.UpstreamResponse, deltas []loop.Delta) []byte {
	v := answerView{ID: r.ID, Created: r.Created, Model: r.Model, Text: r.Message.Text, ToolCalls: r.Message.ToolCalls,
		NativeItems: r.Message.NativeItems, Raw: r.Message.Raw, FinishReason: r.FinishReason, Dialect: r.Dialect,
		Usage: [3]int64{r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CachedInputTokens}}
	for _, d := range deltas {
		v.Deltas = append(v.Deltas, deltaView{Meta: d.Meta, Text: d.Text, Tool: d.Tool, Extra: d.Extra})
	}
	b, _ := json.Marshal(v)
	return b
}

// fakeRound is a round that reasons, runs a provider's web search, speaks
// and calls a function and a custom tool.
func fakeRound() fakeupstream.Round {
	return fakeupstream.Round{
		ID: "resp_r0", Reasoning: "think first", Content: "Here: [a](https://example.org/a)",
		Annotations: []json.RawMessage{raw(`{"type":"url_citation","start_index":6,"end_index":31,"url":"https://example.org/a","title":"a"}`)},
		Items:       []json.RawMessage{raw(`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"news"}}`)},
		ToolCalls: []fakeupstream.ToolCall{
			{ID: "call_a", Name: "web_search", Arguments: `{"query":"more news"}`},
			{ID: "call_b", Name: "apply_diff", Arguments: "*** Begin Patch", Custom: true},
		},
		Usage:      raw(`{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":40},"completion_tokens_details":{"reasoning_tokens":7}}`),
		ChunkRunes: 5, ArgsChunk: 6,
	}
}

// The fake upstream's answers, whole and streamed, assemble into the same
// canonical answer: text, function calls (the custom tool call as its
// function with {"input"}), the reasoning and web_search_call items kept
// native, the output verbatim as Raw; the stream's deltas carry text,
// arguments and the native items.
func TestCallAgainstTheFakeGolden(t *testing.T) {
	srv, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{fakeRound()}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := New(Config{Name: "r", BaseURL: srv.URL(), APIKey: "sk-test"})
	for _, stream := range []bool{false, true} {
		name := "answer_whole"
		if stream {
			name = "answer_stream"
		}
		t.Run(name, func(t *testing.T) {
			var deltas []loop.Delta
			req := &loop.UpstreamRequest{Model: "m", Messages: conversation()[:2], Tools: functions(), Stream: stream}
			resp, err := c.Call(context.Background(), req, func(d loop.Delta) error { deltas = append(deltas, d); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !stream && deltas != nil {
				t.Fatalf("a whole answer sent deltas: %v", deltas)
			}
			golden(t, name, view(resp, deltas))
		})
	}
	if got := srv.Authorizations(); len(got) != 2 || got[0] != "Bearer sk-test" {
		t.Fatalf("authorizations %q", got)
	}
}

// The reasoning item of one round goes back to the provider, verbatim,
// before the round's calls in the next request: the answer's message is
// what the loop appends to the conversation.
func TestReasoningItemsReturnInTheNextRound(t *testing.T) {
	srv, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
		{Reasoning: "plan", ToolCalls: []fakeupstream.ToolCall{{ID: "call_1", Name: "web_search", Arguments: `{"query":"q"}`}}},
		{Content: "done"},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := New(Config{Name: "r", BaseURL: srv.URL()})
	msgs := []loop.Message{{Role: loop.RoleUser, Text: "go"}}
	first, err := c.Call(context.Background(), &loop.UpstreamRequest{Model: "m", Messages: msgs, Tools: functions(), Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, first.Message, loop.Message{Role: loop.RoleTool, ToolCallID: "call_1", Text: "found"})
	second, err := c.Call(context.Background(), &loop.UpstreamRequest{Model: "m", Messages: msgs, Tools: functions()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Message.Text != "done" {
		t.Fatalf("second round answered %q", second.Message.Text)
	}
	var body struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(srv.Requests()[1], &body); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range body.Input {
		var h itemHead
		_ = json.Unmarshal(it, &h)
		types = append(types, h.Type)
	}
	if got := strings.Join(types, ","); got != "message,reasoning,function_call,function_call_output" {
		t.Fatalf("second request's input items %s", got)
	}
	if !bytes.Contains(body.Input[1], []byte(`"encrypted_content":"enc_fake:plan"`)) {
		t.Fatalf("the reasoning item lost its encrypted content: %s", body.Input[1])
	}
}
