package fetchpage

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTelemetryOfAFetch: a page behind a redirect is two client spans
// (one per hop) under the caller's span; its bytes and the cache's miss
// then hit are counted. The page never sees the caller's traceparent
// unless the propagator is given.
func TestTelemetryOfAFetch(t *testing.T) {
	for _, propagate := range []bool{false, true} {
		t.Run("propagate="+strconv.FormatBool(propagate), func(t *testing.T) {
			f := newFixture(t, Config{})
			seen := make(chan string, 4)
			f.mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
				seen <- r.Header.Get("Traceparent")
				http.Redirect(w, r, "/page", http.StatusFound)
			})
			const page = "<html><head><title>T</title></head><body><article><p>Hello there, a paragraph long enough to count as the text.</p></article></body></html>"
			f.mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
				seen <- r.Header.Get("Traceparent")
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = w.Write([]byte(page))
			})
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			reader := sdkmetric.NewManualReader()
			var prop propagation.TextMapPropagator
			if propagate {
				prop = propagation.TraceContext{}
			}
			f.tool.tel = newInstruments(tp, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), prop)
			ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool fetch_page")
			for range 2 {
				inv := invocationFor(t, f, map[string]any{"url": f.url("/old")})
				if _, err := f.tool.Call(ctx, inv); err != nil {
					t.Fatal(err)
				}
			}
			parent.End()
			var names []string
			for _, s := range rec.Ended() {
				if s.Name() == "GET" && s.Parent().SpanID() == parent.SpanContext().SpanID() {
					names = append(names, s.Name())
				}
			}
			if len(names) != 2 {
				t.Errorf("%d GET spans under the call, want 2 (one per hop, the second call cached)", len(names))
			}
			for range 2 {
				got := <-seen
				if propagate != (got != "" && strings.Contains(got, parent.SpanContext().TraceID().String())) {
					t.Errorf("propagate=%v: the page saw traceparent %q", propagate, got)
				}
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range rm.ScopeMetrics[0].Metrics {
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					got = append(got, m.Name+" "+p.Attributes.Encoded(attribute.DefaultEncoder())+" "+strconv.FormatInt(p.Value, 10))
				}
			}
			sort.Strings(got)
			want := "toolhost.fetch.bytes toolhost.content=html " + strconv.Itoa(len(page)) +
				"|toolhost.fetch.cache.lookups toolhost.result=hit 1|toolhost.fetch.cache.lookups toolhost.result=miss 1"
			if strings.Join(got, "|") != want {
				t.Errorf("metrics %q\nwant %q", strings.Join(got, "|"), want)
			}
		})
	}
}
