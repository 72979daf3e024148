package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
)

// What toolhost call prints, byte for byte: the keys in sorted order, the
// error object as MCP's _meta carries it.
func TestCallOutputBytes(t *testing.T) {
	tests := []struct {
		name string
		out  tools.Outcome
		want string
	}{
		{name: "success", out: tools.Outcome{ExecutionID: "exec_1", Tool: "roll_dice", Version: "1.0.0", Status: tools.StatusSuccess,
			Text: "rolled <3>", Duration: 12 * time.Millisecond, Structured: json.RawMessage(`{"results":[3],"sides":6,"total":3}`), Units: 0.5},
			want: `{"content":[{"text":"rolled <3>","type":"text"}],"duration_ms":12,"execution_id":"exec_1","isError":false,"status":"success","structuredContent":{"results":[3],"sides":6,"total":3},"tool":"roll_dice","units":0.5,"version":"1.0.0"}`},
		{name: "error with details", out: tools.Outcome{ExecutionID: "exec_2", Tool: "fetch_page", Status: tools.StatusError, IsError: true,
			Code: "http_error", Message: "a <b>", Text: "a <b>", Truncated: true,
			Structured: json.RawMessage(`{"error":{"code":"http_error","message":"a \u003cb\u003e","status":404}}`)},
			want: `{"content":[{"text":"a <b>","type":"text"}],"duration_ms":0,"error":{"code":"http_error","message":"a <b>","status":404},"execution_id":"exec_2","isError":true,"status":"error","structuredContent":{"error":{"code":"http_error","message":"a \u003cb\u003e","status":404}},"tool":"fetch_page","truncated":true}`},
		{name: "details as a map wrote them", out: tools.Outcome{ExecutionID: "exec_4", Tool: "run_code", Status: tools.StatusTimeout, IsError: true,
			Code: "timeout", Message: "stopped", Text: "stopped",
			Structured: json.RawMessage(`{"error":{"code":"timeout","message":"stopped","result":{"b":1.50,"a":2e1},"stdout":"\u003c1\u003e \u0026"}}`)},
			want: `{"content":[{"text":"stopped","type":"text"}],"duration_ms":0,"error":{"code":"timeout","message":"stopped","result":{"a":20,"b":1.5},"stdout":"<1> &"},"execution_id":"exec_4","isError":true,"status":"timeout","structuredContent":{"error":{"code":"timeout","message":"stopped","result":{"b":1.50,"a":2e1},"stdout":"\u003c1\u003e \u0026"}},"tool":"run_code"}`},
		{name: "error without an object", out: tools.Outcome{ExecutionID: "exec_3", Tool: "x", Status: tools.StatusBlocked, IsError: true,
			Code: "calls_per_minute", Message: "slow down", Text: "slow down", RetryAfter: time.Second},
			want: `{"content":[{"text":"slow down","type":"text"}],"duration_ms":0,"error":{"code":"calls_per_minute","message":"slow down"},"execution_id":"exec_3","isError":true,"status":"blocked","tool":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(callOutput(&tt.out)); err != nil {
				t.Fatal(err)
			}
			if got := string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))); got != tt.want {
				t.Fatalf("output\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
