package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// numberedTrace sends each request a traceparent of its own: trace id
// 0…01, 0…02, … in order.
type numberedTrace struct{ n atomic.Int64 }

func (t *numberedTrace) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", t.n.Add(1)))
	return http.DefaultTransport.RoundTrip(r)
}

// TestToolsCallJoinsItsOwnRequestsTrace: without a _meta traceparent, a
// tools/call joins the trace of the HTTP request that carried it, not the
// one of the request that opened the session (whose context the session
// keeps); the journal names that trace.
func TestToolsCallJoinsItsOwnRequestsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel := &server.Telemetry{Tracer: tp, Meter: sdkmetric.NewMeterProvider(), Propagator: propagation.TraceContext{}}
	exec, err := tools.NewExecutor(tools.Options{Tracer: tp}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{MCP: mcpface.New(exec, mcpface.Options{Telemetry: tel}).Handler(), Telemetry: tel})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	rt := &numberedTrace{}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	before := rt.n.Load()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%032x", before+1)
	id, _ := res.Meta["toolhost/execution_id"].(string)
	if r, err := exec.Journal().Store().Get(ctx, tools.LocalAccount, id); err != nil || r.TraceID != want {
		t.Errorf("journal trace_id %q (%v), want %s", r.TraceID, err, want)
	}
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call get_time" || s.Name() == "execute_tool get_time" {
			if got := s.SpanContext().TraceID().String(); got != want {
				t.Errorf("%s in trace %s, want the call's request's %s", s.Name(), got, want)
			}
		}
	}
}
