package mcpremote_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// TestEachAttemptIsASpanAndCarriesTheTrace: a call refused once with 503
// and then answered is two client spans "tools/call echo" in the caller's
// trace, the first with its status and error.type; the attempt that
// reached the tool carried its own span's context in _meta traceparent.
func TestEachAttemptIsASpanAndCarriesTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	up := startUpstream(t, false)
	r := newRig(t, mcpremote.Options{Tracer: tp, Propagator: propagation.TraceContext{},
		Wait:   func(context.Context, time.Duration) error { return nil },
		Jitter: func(time.Duration) time.Duration { return 0 }})
	r.register("acct_a", "demo", up.url(), neverAsk)
	r.runtime("acct_a")
	up.ts.FailNext("echo", 503, "0")
	ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool demo__echo")
	out, err := r.exec.Execute(ctx, tools.Proposal{Tool: "demo__echo", Args: json.RawMessage(`{"message":"hi"}`),
		Caller: tools.Caller{SessionID: "sess_1", Face: "mcp", Identity: identity.Identity{AccountID: "acct_a"}}})
	parent.End()
	if err != nil || out.IsError {
		t.Fatalf("call: %v %+v", err, out)
	}
	var attempts []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call echo" {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2", len(attempts))
	}
	for i, s := range attempts {
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || a["toolhost.attempt"] != []string{"1", "2"}[i] || a["mcp.method.name"] != "tools/call" {
			t.Errorf("attempt %d: parent %v, attributes %v", i+1, s.Parent().SpanID(), a)
		}
		if i == 0 && (a["error.type"] != tools.CodeUpstreamUnavailable || a["http.response.status_code"] != "503") {
			t.Errorf("refused attempt attributes %v", a)
		}
		if i == 1 && a["error.type"] != "" {
			t.Errorf("answered attempt attributes %v", a)
		}
	}
	metas := up.ts.Metas("echo")
	if len(metas) != 1 {
		t.Fatalf("echo reached %d times", len(metas))
	}
	want := "00-" + parent.SpanContext().TraceID().String() + "-" + attempts[1].SpanContext().SpanID().String() + "-01"
	if got, _ := metas[0]["traceparent"].(string); got != want {
		t.Errorf("_meta traceparent %q, want %q", got, want)
	}
	if got, _ := metas[0][mcpremote.MetaInvocationID].(string); !strings.HasSuffix(got, ".2") {
		t.Errorf("_meta invocation id %q, want the second attempt's", got)
	}
}
