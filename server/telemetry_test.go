package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolhost/toolhost/server"
)

// TestServerSpansAndMetricsByRoute: every request gets a server span in
// the caller's trace, named and measured by its route pattern (never its
// path), with methods HTTP does not define folded into _OTHER; the
// handler sees the span's trace id through ContextTraceID.
func TestServerSpansAndMetricsByRoute(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	seen := make(chan string, 8)
	srv := server.New(server.Options{
		Telemetry: &server.Telemetry{Tracer: tp, Meter: mp, Propagator: propagation.TraceContext{}},
		Routes: map[string]http.Handler{
			"GET /tool-executions/{id}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen <- server.ContextTraceID(r.Context(), nil)
				w.WriteHeader(http.StatusTeapot)
			}),
			"POST /boom": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				server.WriteError(w, http.StatusBadGateway, "upstream_error", "no")
			}),
		},
	})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	do := func(method, path, traceparent string) {
		req, _ := http.NewRequest(method, ts.URL+path, nil)
		if traceparent != "" {
			req.Header.Set("Traceparent", traceparent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do("GET", "/tool-executions/0194-a", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	do("GET", "/tool-executions/0194-b", "")
	do("POST", "/boom", "")
	do("BREW", "/nowhere/"+strings.Repeat("x", 3000), "")
	if got := <-seen; got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("handler saw trace %q, want the caller's", got)
	}
	if got := <-seen; len(got) != 32 || got == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("handler saw trace %q, want a new one", got)
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	sort.Strings(names)
	want := []string{"GET /tool-executions/{id}", "GET /tool-executions/{id}", "POST /boom", "_OTHER /"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("span names %q, want %q", names, want)
	}
	children := 0
	for _, s := range rec.Ended() {
		if p := s.Parent(); p.IsRemote() && p.SpanID().String() == "00f067aa0ba902b7" && p.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
			children++
		}
	}
	if children != 1 {
		t.Errorf("%d spans are children of the caller's span, want 1", children)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "http.server.request.duration" {
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
	wantM := map[string]uint64{
		"http.request.method=GET,http.response.status_code=418,http.route=/tool-executions/{id}": 2,
		"error.type=502,http.request.method=POST,http.response.status_code=502,http.route=/boom": 1,
		"http.request.method=_OTHER,http.response.status_code=404,http.route=/":                  1,
	}
	if len(got) != len(wantM) {
		t.Fatalf("series %v, want %v", got, wantM)
	}
	for k, v := range wantM {
		if got[k] != v {
			t.Errorf("series %v, want %v", got, wantM)
			break
		}
	}
}
