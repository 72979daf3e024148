package mcp_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// TestToolsCallSpansFollowTheMCPConventions: a tools/call is a server span
// "tools/call {tool}" in the trace of the request's _meta traceparent,
// with the pipeline's execute_tool span below it; an isError result is
// error.type tool_error; mcp.server.operation.duration counts every
// request under bounded labels (an unknown or huge tool name is _other).
func TestToolsCallSpansFollowTheMCPConventions(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel := &server.Telemetry{Tracer: tp, Meter: mp, Propagator: propagation.TraceContext{}}
	exec, err := tools.NewExecutor(tools.Options{Tracer: tp, Meter: mp}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{MCP: mcpface.New(exec, mcpface.Options{Telemetry: tel}).Handler(), Telemetry: tel})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cs := connect(t, hs.URL+"/mcp", nil, nil)
	ctx := context.Background()

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{},
		Meta: sdk.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("get_time: %v %+v", err, res)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 1e9}}); err != nil || !res.IsError {
		t.Fatalf("roll_dice out of range: %v %+v", err, res)
	}
	// A name no tool has (the guard refuses names over 128 runes before
	// any span: guard.go).
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope\u202e", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool was served")
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	call, ok := spans["tools/call get_time"]
	if !ok {
		t.Fatalf("no tools/call get_time span among %v", keys(spans))
	}
	if p := call.Parent(); p.TraceID().String() != traceID || p.SpanID().String() != parentID {
		t.Errorf("tools/call parent %s/%s, want the _meta traceparent's", p.TraceID(), p.SpanID())
	}
	a := attrs(call)
	if a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "get_time" || a["mcp.session.id"] == "" || a["error.type"] != "" {
		t.Errorf("tools/call attributes %v", a)
	}
	if ex := spans["execute_tool get_time"]; ex == nil || ex.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("execute_tool get_time is not the child of tools/call get_time")
	}
	if a := attrs(spans["tools/call roll_dice"]); a["error.type"] != "tool_error" {
		t.Errorf("roll_dice attributes %v, want error.type tool_error", a)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "mcp.server.operation.duration" {
				continue
			}
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				var kv []string
				for _, a := range p.Attributes.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.String())
				}
				got[strings.Join(kv, ",")] += p.Count
			}
		}
	}
	for k, v := range map[string]uint64{
		"gen_ai.tool.name=get_time,mcp.method.name=tools/call":                        1,
		"error.type=tool_error,gen_ai.tool.name=roll_dice,mcp.method.name=tools/call": 1,
		"error.type=jsonrpc_error,gen_ai.tool.name=_other,mcp.method.name=tools/call": 1,
		"mcp.method.name=server/discover":                                             1,
		"mcp.method.name=ping":                                                        1,
		"mcp.method.name=initialize":                                                  1,
	} {
		if got[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	if s == nil {
		return m
	}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func keys(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
