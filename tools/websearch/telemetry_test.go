package websearch

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// TestTelemetryOfAFailover: the primary fails, the backup answers; the
// same search again is a cache hit. Each provider request is a client span
// with its outcome, the failover and the cache lookups are counted, and
// the latency histogram holds one request per provider and outcome.
func TestTelemetryOfAFailover(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	a := newFixture(t, engineByKind(t, KindSearXNG), mode5xx)
	b := newFixture(t, engineByKind(t, KindBrave), modeSuccess)
	h := &harness{clock: newClock(), logs: &syncBuffer{}}
	tool, err := New(Config{Providers: []ProviderConfig{a.providerConfig("primary", 10*time.Second), b.providerConfig("backup", 10*time.Second)}},
		Deps{Logger: slog.New(slog.DiscardHandler), Clock: h.clock.Now, Tracer: tp, Meter: mp})
	if err != nil {
		t.Fatal(err)
	}
	if h.exec, err = tools.NewExecutor(tools.Options{}, tool); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if p := output(t, h.call(t, testQuery, catalog.English)).Provider; p != "backup" {
			t.Fatalf("provider %q", p)
		}
	}
	var spans []string
	for _, s := range rec.Ended() {
		var outcome string
		for _, kv := range s.Attributes() {
			if kv.Key == "toolhost.outcome" {
				outcome = kv.Value.AsString()
			}
		}
		spans = append(spans, s.Name()+" "+outcome+" "+s.SpanKind().String())
	}
	if got, want := strings.Join(spans, "|"), "search primary http_error client|search backup ok client"; got != want {
		t.Errorf("spans %q, want %q", got, want)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				got = append(got, m.Name+" "+p.Attributes.Encoded(attribute.DefaultEncoder())+" "+strconv.FormatUint(p.Count, 10))
			}
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				got = append(got, m.Name+" "+p.Attributes.Encoded(attribute.DefaultEncoder())+" "+strconv.FormatInt(p.Value, 10))
			}
		}
	}
	sort.Strings(got)
	want := []string{
		"toolhost.search.cache.lookups toolhost.result=hit 1",
		"toolhost.search.cache.lookups toolhost.result=miss 1",
		"toolhost.search.failovers toolhost.reason=failure 1",
		"toolhost.search.provider.duration toolhost.outcome=http_error,toolhost.provider=primary 1",
		"toolhost.search.provider.duration toolhost.outcome=ok,toolhost.provider=backup 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
