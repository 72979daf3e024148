package tools

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// collect reads the points of the named instrument as "attr=value,…" →
// count (histograms) or value (sums).
func collect(t *testing.T, r *sdkmetric.ManualReader, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[attrKey(p.Attributes)] += int64(p.Count)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[attrKey(p.Attributes)] += p.Value
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	return out
}

func attrKey(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// TestExecutorRecordsCallMetricsWithBoundedLabels runs calls that end
// every way through a real SDK meter and checks each lands under bounded
// labels: an invented tool name, a long face and a script's code never
// become label values.
func TestExecutorRecordsCallMetricsWithBoundedLabels(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	p := &probe{name: "probe", run: echo}
	e, err := NewExecutor(Options{Meter: mp}, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := []struct {
		tool, args, face string
	}{
		{"probe", `{"n":2}`, "mcp"},
		{"probe", `{"n":2}`, "mcp"},
		{"probe", `{"n":2}`, "hosted"},
		{"probe", `{"n":99}`, "hosted"},
		{"probe", `{"n":1,"n":2}`, "cli"},
		{"probe\u202e" + strings.Repeat("x", 5000), `{}`, "mcp"},
		{"get_tiem", `{}`, "hosted"},
		{"probe", `{}`, "<script>" + strings.Repeat("f", 300)},
	}
	for _, c := range calls {
		if _, err := e.Execute(ctx, Proposal{Tool: c.tool, Args: json.RawMessage(c.args), Caller: Caller{Face: c.face}}); err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
	}
	got := collect(t, reader, "toolhost.tool.call.duration")
	want := map[string]int64{
		"gen_ai.tool.name=probe,toolhost.face=mcp,toolhost.provider.type=builtin,toolhost.status=success":                                 2,
		"gen_ai.tool.name=probe,toolhost.face=hosted,toolhost.provider.type=builtin,toolhost.status=success":                              1,
		"error.type=invalid_arguments,gen_ai.tool.name=probe,toolhost.face=hosted,toolhost.provider.type=builtin,toolhost.status=error":   1,
		"error.type=invalid_arguments_json,gen_ai.tool.name=probe,toolhost.face=cli,toolhost.provider.type=builtin,toolhost.status=error": 1,
		"error.type=unknown_tool,gen_ai.tool.name=_unknown,toolhost.face=mcp,toolhost.provider.type=unknown,toolhost.status=error":        1,
		"error.type=unknown_tool,gen_ai.tool.name=_unknown,toolhost.face=hosted,toolhost.provider.type=unknown,toolhost.status=error":     1,
		"gen_ai.tool.name=probe,toolhost.face=other,toolhost.provider.type=builtin,toolhost.status=success":                               1,
	}
	if !equalCounts(got, want) {
		t.Errorf("call metrics:\n got %v\nwant %v", got, want)
	}
	refusals := collect(t, reader, "toolhost.tool.refusals")
	wantRefusals := map[string]int64{
		"toolhost.reason=invalid_arguments,toolhost.stage=validation_rejected": 1,
		"toolhost.reason=invalid_arguments_json,toolhost.stage=parse_rejected": 1,
		"toolhost.reason=unknown_tool,toolhost.stage=parse_rejected":           2,
	}
	if !equalCounts(refusals, wantRefusals) {
		t.Errorf("refusals:\n got %v\nwant %v", refusals, wantRefusals)
	}
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestExecutorRefusalByLimitIsCounted: a key over its limit is a refusal
// at authorization, counted by the limit's code.
func TestExecutorRefusalByLimitIsCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e, err := NewExecutor(Options{Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Authorizer: denyAll{}}, &probe{name: "probe", run: echo})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`), Caller: Caller{Face: "mcp"}}); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, reader, "toolhost.tool.refusals")
	want := map[string]int64{"toolhost.reason=calls_per_minute,toolhost.stage=authorization_rejected": 3}
	if !equalCounts(got, want) {
		t.Errorf("refusals:\n got %v\nwant %v", got, want)
	}
}

// TestExecutorSpanJoinsTheCallersTrace: the execute_tool span is a child
// of the span the face opened, and the journal's trace id is that
// trace's, whether the face named it or not.
func TestExecutorSpanJoinsTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e, err := NewExecutor(Options{Tracer: tp}, &probe{name: "probe", run: echo})
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "tools/call probe")
	out, err := e.Execute(ctx, Proposal{Tool: "probe", Args: json.RawMessage(`{"n":2}`), CallID: "call-1", Caller: Caller{Face: "mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	out2, err := e.Execute(ctx, Proposal{Tool: "probe", Args: json.RawMessage(`{"n":0}`), Caller: Caller{Face: "mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	var spans, writes []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch {
		case strings.HasPrefix(s.Name(), "execute_tool"):
			spans = append(spans, s)
		case strings.HasPrefix(s.Name(), "journal "):
			writes = append(writes, s)
		}
	}
	if len(spans) != 2 {
		t.Fatalf("%d execute_tool spans, want 2", len(spans))
	}
	ok, bad := spans[0], spans[1]
	// The journal's writes are spans of their call: the run call's open
	// and finish, the refused call's one add.
	var names []string
	for _, w := range writes {
		parent := "?"
		for _, s := range spans {
			if w.Parent().SpanID() == s.SpanContext().SpanID() {
				parent = map[bool]string{true: "ok", false: "bad"}[s == ok]
			}
		}
		names = append(names, w.Name()+" < "+parent)
	}
	if got, want := strings.Join(names, "|"), "journal open < ok|journal finish < ok|journal add < bad"; got != want {
		t.Errorf("journal spans %q, want %q", got, want)
	}
	tid := parent.SpanContext().TraceID()
	for _, s := range []sdktrace.ReadOnlySpan{ok, bad} {
		if s.Name() != "execute_tool probe" || s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != tid {
			t.Errorf("span %q parent %v trace %v; want execute_tool probe under %v", s.Name(), s.Parent().SpanID(), s.SpanContext().TraceID(), parent.SpanContext().SpanID())
		}
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	if a := attrs(ok); a["gen_ai.tool.call.id"] != "call-1" || a[AttrExecutionID] != out.ExecutionID || a["gen_ai.operation.name"] != "execute_tool" || a["error.type"] != "" {
		t.Errorf("success span attributes %v", a)
	}
	if a := attrs(bad); a["error.type"] != "invalid_arguments" || bad.Status().Code.String() != "Error" {
		t.Errorf("failed span attributes %v status %v", a, bad.Status())
	}
	for _, id := range []string{out.ExecutionID, out2.ExecutionID} {
		r, err := e.journal.Store().Get(context.Background(), LocalAccount, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.TraceID != tid.String() {
			t.Errorf("journal trace_id %q, want %q", r.TraceID, tid)
		}
	}
	// Without a span in the context the face's own trace id stays.
	out3, err := e.Execute(context.Background(), Proposal{Tool: "probe", Args: json.RawMessage(`{}`), Caller: Caller{Face: "mcp", TraceID: "0af7651916cd43dd8448eb211c80319c"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := e.journal.Store().Get(context.Background(), LocalAccount, out3.ExecutionID); r.TraceID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("journal trace_id %q, want the face's", r.TraceID)
	}
}
