package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// The provider's event stream is outside input: no bytes may panic the
// assembler, and whatever assembles is an assistant message whose calls
// have ids and names, with Raw a JSON list.
func FuzzResponsesStreamAssembler(f *testing.F) {
	f.Add([]byte(created + "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"\"}}\n\n" +
		"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{}\"}\n\n" +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"))
	f.Add([]byte(created + "data: {\"type\":\"response.output_item.done\",\"output_index\":7,\"item\":{\"type\":\"reasoning\",\"id\":\"rs\",\"summary\":[]}}\n\ndata: {\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n"))
	f.Add([]byte("data: {\"type\":\"error\",\"message\":\"x\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"custom_tool_call\",\"call_id\":\"c\",\"name\":\"n\",\"input\":\"x\"}]}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		asm := NewStreamAssembler()
		err := upstream.ReadSSE(bytes.NewReader(body), func(data []byte) error {
			_, err := asm.Add(data)
			return err
		})
		if err != nil {
			return
		}
		resp, err := asm.Finish()
		if err != nil {
			return
		}
		checkAssembled(t, resp)
	})
}

// A whole answer is outside input too.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"id":"resp_1","status":"completed","output":[{"type":"reasoning","id":"rs","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"usage":{"input_tokens":1,"output_tokens":2}}`))
	f.Add([]byte(`{"id":"resp_1","status":"failed","error":{"message":"x"}}`))
	f.Add([]byte(`{"output":[null]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := DecodeResponse(body)
		if err != nil {
			return
		}
		checkAssembled(t, resp)
	})
}

func checkAssembled(t *testing.T, resp *loop.UpstreamResponse) {
	t.Helper()
	if resp.Message.Role != loop.RoleAssistant || resp.Dialect != loop.DialectResponses {
		t.Fatalf("assembled message with role %q, dialect %q", resp.Message.Role, resp.Dialect)
	}
	for _, c := range resp.Message.ToolCalls {
		if c.ID == "" || c.Name == "" {
			t.Fatalf("a call without id or name: %+v", c)
		}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(resp.Message.Raw, &items); err != nil {
		t.Fatalf("Raw is no list: %v", err)
	}
	// What assembled encodes again for the next round.
	if _, err := EncodeMessage(resp.Message); err != nil {
		t.Fatalf("the assembled message does not encode: %v", err)
	}
}
