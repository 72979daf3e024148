package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/upstream"
)

// addAll feeds events to an assembler, returning the first error.
func addAll(a *anthropicAssembler, events ...string) error {
	for _, ev := range events {
		if _, err := a.Add([]byte(ev)); err != nil {
			return err
		}
	}
	return nil
}

const testStart = `{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":1}}}`

// The blocks gathered from a stream are bounded like a whole answer: many
// deltas, each under the event limit, cannot grow one without end.
func TestAssemblerBoundsGatheredBlocks(t *testing.T) {
	a := newAssembler("r")
	a.maxSize = 64
	piece := `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + strings.Repeat("x", 20) + `"}}`
	err := addAll(a, testStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		piece, piece, piece, piece)
	if !errors.Is(err, upstream.ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

// A passed-through block is assembled as it streamed: server_tool_use with
// the input of its deltas, a result block as it started, a block of an
// unknown type as it started, a text with its citations.
func TestAssemblerKeepsPassedBlocks(t *testing.T) {
	a := newAssembler("r")
	err := addAll(a, testStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"q\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"future_block","x":1}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"future_delta"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"u"}}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"T"}}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(out.Message.Raw, &msg); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"id":"srvtoolu_1","input":{"query":"q"},"name":"web_search","type":"server_tool_use"}`,
		`{"content":[],"tool_use_id":"srvtoolu_1","type":"web_search_tool_result"}`,
		`{"type":"future_block","x":1}`,
		`{"citations":[{"type":"web_search_result_location","url":"u"}],"text":"T","type":"text"}`,
	}
	if len(msg.Content) != len(want) {
		t.Fatalf("content %s", out.Message.Raw)
	}
	for i, w := range want {
		if string(msg.Content[i]) != w {
			t.Errorf("block %d %s, want %s", i, msg.Content[i], w)
		}
	}
	if len(out.Message.ToolCalls) != 0 {
		t.Errorf("server_tool_use read as a call: %v", out.Message.ToolCalls)
	}
}

// A block event that breaks the stream's order is an error, not a panic.
func TestAssemblerRefusesBrokenBlockOrder(t *testing.T) {
	start := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	stop := `{"type":"content_block_stop","index":0}`
	cases := []struct {
		name   string
		events []string
		want   string
	}{
		{"stop_without_start", []string{stop}, "never started"},
		{"stop_twice", []string{start, stop, stop}, "stopped already"},
		{"delta_after_stop", []string{start, stop, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}, "has stopped"},
		{"start_twice", []string{start, start}, "started already"},
		{"start_without_block", []string{`{"type":"content_block_start","index":0}`}, "without a content_block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := addAll(newAssembler("r"), append([]string{testStart}, tc.events...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}
