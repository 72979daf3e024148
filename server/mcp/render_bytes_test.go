package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
)

// The error object of a failed call reaches the client with the bytes the
// go-sdk writes (encoding/json, no HTML escaping), in _meta and, for a tool
// whose output schema documents it, in structuredContent: pinned.
func TestRenderErrorWireBytes(t *testing.T) {
	tests := []struct {
		name       string
		out        tools.Outcome
		structured bool
		want       string
	}{
		{
			name: "details from the journal's bytes",
			out: tools.Outcome{ExecutionID: "e1", IsError: true, Code: "timeout", Message: "a <b> & c", Text: "a <b> & c",
				Structured: json.RawMessage(`{"error":{"code":"timeout","exit_code":137,"files":[{"name":"a.txt","size":3}],"message":"a \u003cb\u003e \u0026 c","result":{"a":[20],"b":1.5},"retry_after_ms":250,"stdout":"\u003c1\u003e\n"}}`)},
			want: `{"_meta":{"toolhost/error":{"code":"timeout","exit_code":137,"files":[{"name":"a.txt","size":3}],"message":"a \u003cb\u003e \u0026 c","result":{"a":[20],"b":1.5},"retry_after_ms":250,"stdout":"\u003c1\u003e\n"},"toolhost/execution_id":"e1"},"content":[{"type":"text","text":"a \u003cb\u003e \u0026 c"}],"isError":true}`,
		},
		{
			name:       "structured errors",
			structured: true,
			out: tools.Outcome{ExecutionID: "e2", IsError: true, Code: "permission_denied", Message: "no", Text: "no",
				Structured: json.RawMessage(`{"error":{"code":"permission_denied","message":"no","rule":"slot_deny_list"}}`)},
			want: `{"_meta":{"toolhost/error":{"code":"permission_denied","message":"no","rule":"slot_deny_list"},"toolhost/execution_id":"e2"},"content":[{"type":"text","text":"no"}],"structuredContent":{"error":{"code":"permission_denied","message":"no","rule":"slot_deny_list"}},"isError":true}`,
		},
		{
			name: "details as a map wrote them",
			out: tools.Outcome{ExecutionID: "e4", IsError: true, Code: "timeout", Message: "stopped", Text: "stopped",
				Structured: json.RawMessage(`{"error":{"code":"timeout","message":"stopped","result":{"b":1.50,"a":2e1}}}`)},
			want: `{"_meta":{"toolhost/error":{"code":"timeout","message":"stopped","result":{"a":20,"b":1.5}},"toolhost/execution_id":"e4"},"content":[{"type":"text","text":"stopped"}],"isError":true}`,
		},
		{
			name: "no error object",
			out:  tools.Outcome{ExecutionID: "e3", IsError: true, Code: "concurrency_limited", Message: "busy", Text: "busy", RetryAfter: time.Second},
			want: `{"_meta":{"toolhost/error":{"code":"concurrency_limited","message":"busy","retry_after_ms":1000},"toolhost/execution_id":"e3"},"content":[{"type":"text","text":"busy"}],"isError":true}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(render(&tt.out, tt.structured)); err != nil {
				t.Fatal(err)
			}
			if got := string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))); got != tt.want {
				t.Fatalf("result\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
