package mcp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
)

// TestRenderKeepsErrorsOutOfStructuredContent: clients validate
// structuredContent against the tool's output schema whenever it is present
// (the TypeScript SDK throws on a mismatch), so an error result carries its
// error object in _meta and no structuredContent.
func TestRenderKeepsErrorsOutOfStructuredContent(t *testing.T) {
	tests := []struct {
		name       string
		out        tools.Outcome
		structured bool
		wantErr    map[string]any
	}{
		{
			name:       "success keeps structured content",
			out:        tools.Outcome{ExecutionID: "e1", Text: "ok", Structured: json.RawMessage(`{"total":3}`)},
			structured: true,
		},
		{
			name: "error object from the executor, details included",
			out: tools.Outcome{ExecutionID: "e2", IsError: true, Code: "concurrency_limited", Message: "busy",
				RetryAfter: 250 * time.Millisecond, Text: "busy",
				Structured: json.RawMessage(`{"error":{"code":"concurrency_limited","message":"busy","retry_after_ms":250,"limit":2}}`)},
			wantErr: map[string]any{"code": "concurrency_limited", "message": "busy", "retry_after_ms": 250.0, "limit": 2.0},
		},
		{
			name:    "error without an error object",
			out:     tools.Outcome{ExecutionID: "e3", IsError: true, Code: "timeout", Message: "too slow", Text: "too slow"},
			wantErr: map[string]any{"code": "timeout", "message": "too slow"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Render(&tt.out)
			if got := res.StructuredContent != nil; got != tt.structured {
				t.Fatalf("structuredContent present = %v, want %v", got, tt.structured)
			}
			if res.IsError != tt.out.IsError || res.Meta["toolhost/execution_id"] != tt.out.ExecutionID {
				t.Fatalf("isError %v, meta %v", res.IsError, res.Meta)
			}
			if tt.wantErr == nil {
				if _, ok := res.Meta["toolhost/error"]; ok {
					t.Fatalf("success carries toolhost/error: %v", res.Meta)
				}
				return
			}
			// Compare as the client sees it: through JSON.
			b, err := json.Marshal(res.Meta["toolhost/error"])
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.wantErr) {
				t.Fatalf("toolhost/error = %v, want %v", got, tt.wantErr)
			}
			for k, v := range tt.wantErr {
				if got[k] != v {
					t.Fatalf("toolhost/error[%s] = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
