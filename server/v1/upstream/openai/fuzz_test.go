package openai

import (
	"bytes"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// The upstream's stream and body are outside input: no bytes may panic the
// client, and whatever assembles must be a usable response.
func FuzzStreamAssembler(f *testing.F) {
	f.Add([]byte("data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":1}}}\n\n"))
	f.Add([]byte(": comment\r\ndata: {\"error\":{\"message\":\"x\"}}\r\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		asm := newStreamAssembler()
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

func FuzzDecodeOpenAIResponse(f *testing.F) {
	f.Add([]byte(`{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`))
	f.Add([]byte(`{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := decodeResponse(body)
		if err == nil && resp.Message.Role == "" {
			t.Fatal("message without a role")
		}
	})
}
