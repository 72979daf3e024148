package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// runOutput stands for run_code's output, the details of its timeouts:
// fields not in sorted order, a nested list of such structs and a raw
// JSON value.
type runOutput struct {
	Stdout string          `json:"stdout"`
	Result json.RawMessage `json:"result"`
	Files  []runFile       `json:"files"`
	Exit   int             `json:"exit_code"`
}

type runFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// The error object a failure encodes to: these bytes are what the journal
// keeps and /v1 hands the model, so they are pinned. They are the bytes
// the map[string]any the error object was before gave, whether a tool's
// details are a map or a struct.
func TestErrorBodyBytes(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{name: "code and message", err: &Error{Code: "unknown_timezone", Message: `unknown time zone "Mars/Base"`},
			want: `{"error":{"code":"unknown_timezone","message":"unknown time zone \"Mars/Base\""}}`},
		{name: "retry after", err: &Error{Code: "busy", Message: "busy; retry shortly", RetryAfter: 2 * time.Second},
			want: `{"error":{"code":"busy","message":"busy; retry shortly","retry_after_ms":2000}}`},
		{name: "html characters escaped", err: &Error{Code: "http_error", Message: "a <b> & c", Details: struct {
			Status int `json:"status"`
		}{404}},
			want: `{"error":{"code":"http_error","message":"a \u003cb\u003e \u0026 c","status":404}}`},
		{name: "a detail between the fields", err: &Error{Code: "upstream_too_deep", Message: "deep", RetryAfter: time.Second, Details: map[string]any{"max_depth": 64, "rule": "x"}},
			want: `{"error":{"code":"upstream_too_deep","max_depth":64,"message":"deep","retry_after_ms":1000,"rule":"x"}}`},
		{name: "nested details sorted", err: &Error{Code: "all_providers_failed", Message: "none answered",
			Details: map[string]any{"providers": []map[string]any{{"provider": "brave", "reason": "HTTP 429 <slow>", "retry_after_ms": 1500}, {"provider": "searxng", "reason": "x&y"}}}},
			want: `{"error":{"code":"all_providers_failed","message":"none answered","providers":[{"provider":"brave","reason":"HTTP 429 \u003cslow\u003e","retry_after_ms":1500},{"provider":"searxng","reason":"x\u0026y"}]}}`},
		{name: "a program's output", err: &Error{Code: "timeout", Message: "stopped", Details: runOutput{
			Stdout: "<1>\n", Result: json.RawMessage(`{"b":1.50,"a":[2e1]}`), Files: []runFile{{Name: "a.txt", Size: 3}}, Exit: 137}},
			want: `{"error":{"code":"timeout","exit_code":137,"files":[{"name":"a.txt","size":3}],"message":"stopped","result":{"a":[20],"b":1.5},"stdout":"\u003c1\u003e\n"}}`},
		{name: "details that are no object left out", err: &Error{Code: "x", Message: "y", Details: []int{1}},
			want: `{"error":{"code":"x","message":"y"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &probe{name: "probe", run: func(context.Context, *Invocation) (*Result, error) { return nil, tt.err }}
			e, err := NewExecutor(Options{}, p)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Structured) != tt.want {
				t.Fatalf("error body\n got %s\nwant %s", out.Structured, tt.want)
			}
		})
	}
}
