package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
)

// The Anthropic upstream's event stream is outside input: no bytes may
// panic the client, and whatever assembles is a usable response.
func FuzzAnthropicStreamAssembler(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":2}}\n\n"))
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\"}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\",\"input\":{}}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"s\",\"content\":[]}}\n\n" +
		"data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		asm := newAssembler("fuzz")
		err := upstream.ReadSSE(bytes.NewReader(body), func(data []byte) error {
			_, err := asm.Add(data)
			return err
		})
		if err != nil {
			return
		}
		if resp, err := asm.Finish(); err == nil && resp.Message.Role != loop.RoleAssistant {
			t.Fatalf("assembled message with role %q", resp.Message.Role)
		}
	})
}

// Caller messages in the Messages format are outside input; decoding and
// encoding them back must not panic, and what encodes is JSON.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}],"is_error":true},{"type":"text","text":"more"}]}`))
	f.Add([]byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]}`))
	f.Add([]byte(`{"role":"user","content":"hi"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := DecodeMessage(raw)
		if err != nil {
			return
		}
		_, out, err := encodeMessages(msgs)
		if err != nil {
			return
		}
		for _, m := range out {
			if !json.Valid(m) {
				t.Fatalf("encoded message is not JSON: %s", m)
			}
		}
		if _, err := openai.EncodeMessage(msgs[0]); err != nil {
			t.Fatalf("canonical message does not encode for OpenAI: %v", err)
		}
	})
}
