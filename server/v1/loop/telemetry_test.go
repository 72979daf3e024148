package loop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// TestRunSpanTreeAndModelMetrics: one hosted run is a span per round, a
// chat span per model call under its round (with the usage the model
// reported) and the hosted calls' execute_tool spans beside it; the model
// was sent the chat span's own context in traceparent; the GenAI client
// metrics count each call under the route's model pattern.
func TestRunSpanTreeAndModelMetrics(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{{ID: "c1", Name: "get_time", Arguments: `{}`}}, Usage: json.RawMessage(`{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`)},
		{Content: "done", Usage: json.RawMessage(`{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}`)},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	route := &loop.Route{Name: "fake", Protocol: loop.DialectOpenAI, SupportsTools: true, Models: []string{"fake-*"}}
	route.Upstream = loop.Traced(openai.New(openai.Config{Name: "fake", BaseURL: fake.URL(), Propagator: propagation.TraceContext{}}), route, "openai", tp, mp)
	ex, err := tools.NewExecutor(tools.Options{Tracer: tp}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(context.Background(), "POST /v1/chat/completions")
	res, err := loop.NewRunner(ex, loop.RunnerOptions{Tracer: tp}).Run(ctx, &loop.Run{
		Request: userRequest("what time is it?", false),
		Hosted:  loop.Hosted{Tools: []string{"get_time"}, MaxToolRounds: 4},
		Route:   route, Lang: catalog.English, Caller: loop.Caller{RequestID: "req_1"},
	})
	root.End()
	if err != nil || len(res.Calls) != 1 {
		t.Fatalf("run: %v %+v", err, res)
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q in another trace", s.Name())
		}
	}
	// Each span as "name < parent name".
	var tree []string
	chatIDs := map[string]bool{}
	for _, s := range rec.Ended() {
		parent := "-"
		if p, ok := byID[s.Parent().SpanID()]; ok {
			parent = p.Name()
		}
		tree = append(tree, s.Name()+" < "+parent)
		if s.Name() == "chat fake-*" {
			chatIDs[s.SpanContext().SpanID().String()] = true
			if s.SpanKind() != trace.SpanKindClient {
				t.Errorf("chat span kind %v", s.SpanKind())
			}
		}
	}
	want := "chat fake-* < hosted_round|journal open < execute_tool get_time|journal finish < execute_tool get_time|" +
		"execute_tool get_time < hosted_round|hosted_round < POST /v1/chat/completions|" +
		"chat fake-* < hosted_round|hosted_round < POST /v1/chat/completions|POST /v1/chat/completions < -"
	if strings.Join(tree, "|") != want {
		t.Errorf("span tree\n got %s\nwant %s", strings.Join(tree, "|"), want)
	}
	last := rec.Ended()[5] // the second chat span
	a := map[string]string{}
	for _, kv := range last.Attributes() {
		a[string(kv.Key)] = kv.Value.String()
	}
	if a["gen_ai.usage.input_tokens"] != "9" || a["gen_ai.usage.output_tokens"] != "2" || a["gen_ai.provider.name"] != "openai" || a["gen_ai.request.model"] != "fake-*" {
		t.Errorf("chat span attributes %v", a)
	}
	// The model saw each chat span as the parent in traceparent.
	tps := fake.Traceparents()
	if len(tps) != 2 {
		t.Fatalf("traceparents %q", tps)
	}
	for _, tp := range tps {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || parts[1] != root.SpanContext().TraceID().String() || !chatIDs[parts[2]] {
			t.Errorf("traceparent %q is not a chat span of the run's trace", tp)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]int64{}
	calls := uint64(0)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				calls += p.Count
				if v, _ := p.Attributes.Value("gen_ai.request.model"); v.AsString() != "fake-*" {
					t.Errorf("duration model label %q", v.AsString())
				}
			}
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				v, _ := p.Attributes.Value("gen_ai.token.type")
				tokens[v.AsString()] += p.Sum
			}
		}
	}
	if calls != 2 || tokens["input"] != 14 || tokens["output"] != 3 {
		t.Errorf("model calls %d, tokens %v; want 2 calls, 14 input and 3 output tokens", calls, tokens)
	}
}

// TestModelLabelIsBoundedByTheRoute: a model name the caller makes up
// (huge, with a direction override) is labelled _other, never itself.
func TestModelLabelIsBoundedByTheRoute(t *testing.T) {
	route, _ := fakeRoute(t, fakeupstream.Round{Content: "hi"})
	route.Models = []string{"fake-1", "fake-*"}
	reader := sdkmetric.NewManualReader()
	up := loop.Traced(route.Upstream, route, "openai", sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	for _, model := range []string{"fake-1", "fake-2", "evil\u202e" + strings.Repeat("m", 10000)} {
		req := &loop.UpstreamRequest{Model: model, Messages: userRequest("hi", false).Messages}
		if _, err := up.Call(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if d, ok := m.Data.(metricdata.Histogram[float64]); ok {
			for _, p := range d.DataPoints {
				v, _ := p.Attributes.Value("gen_ai.request.model")
				got[v.AsString()] += p.Count
			}
		}
	}
	if len(got) != 3 || got["fake-1"] != 1 || got["fake-*"] != 1 || got["_other"] != 1 {
		t.Errorf("model labels %v", got)
	}
}

// TestTracedKeepsTheTokenCounter: wrapping the Anthropic client keeps its
// count_tokens, and adds none to a client without one.
func TestTracedKeepsTheTokenCounter(t *testing.T) {
	route := &loop.Route{Name: "a", Models: []string{"claude-*"}}
	tp, mp := sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider()
	if _, ok := loop.Traced(anthropic.New(anthropic.Config{Name: "a", BaseURL: "http://127.0.0.1:1"}), route, "anthropic", tp, mp).(loop.TokenCounter); !ok {
		t.Error("the traced Anthropic client counts no tokens")
	}
	if _, ok := loop.Traced(openai.New(openai.Config{Name: "o", BaseURL: "http://127.0.0.1:1"}), route, "openai", tp, mp).(loop.TokenCounter); ok {
		t.Error("the traced OpenAI client claims to count tokens")
	}
}
