package runcode

import (
	"context"
	"encoding/json"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/tools"
)

// TestQueueAndRunAreSpansOneAfterTheOther: a run is a "sandbox queue"
// span followed by a "sandbox run" span under the call, the run starting
// where the wait ended; both durations are recorded by language, the run
// by outcome.
func TestQueueAndRunAreSpansOneAfterTheOther(t *testing.T) {
	_, sb, _ := shared(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	ex, err := tools.NewExecutor(tools.Options{Tracer: tp}, New(sb).WithTelemetry(tp, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"1 + 1", "throw new Error('no')"} {
		args, _ := json.Marshal(map[string]any{"language": "javascript", "code": code, "timeout_ms": noRush})
		if _, err := ex.Execute(context.Background(), tools.Proposal{Tool: "run_code", Args: args}); err != nil {
			t.Fatal(err)
		}
	}
	var queue, run []sdktrace.ReadOnlySpan
	var call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "sandbox queue":
			queue = append(queue, s)
		case "sandbox run":
			run = append(run, s)
		case "execute_tool run_code":
			call = s
		}
	}
	if len(queue) != 2 || len(run) != 2 || call == nil {
		t.Fatalf("%d queue and %d run spans (call span %v), want 2 and 2", len(queue), len(run), call != nil)
	}
	for i := range queue {
		if !run[i].StartTime().Equal(queue[i].EndTime()) || queue[i].StartTime().After(queue[i].EndTime()) || run[i].EndTime().Before(run[i].StartTime()) {
			t.Errorf("run %d: queue %v–%v, run %v–%v: not one after the other", i, queue[i].StartTime(), queue[i].EndTime(), run[i].StartTime(), run[i].EndTime())
		}
		if queue[i].Parent().TraceID() != run[i].Parent().TraceID() || !queue[i].Parent().IsValid() {
			t.Errorf("run %d: spans outside the call's trace", i)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			o, _ := p.Attributes.Value("toolhost.outcome")
			got[m.Name+" "+o.AsString()] += p.Count
		}
	}
	want := map[string]uint64{"toolhost.sandbox.queue.duration ": 2, "toolhost.sandbox.run.duration ok": 1, "toolhost.sandbox.run.duration exit_nonzero": 1}
	if len(got) != len(want) {
		t.Fatalf("metrics %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("metrics %v, want %v", got, want)
		}
	}
}
