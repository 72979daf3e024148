package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP trace endpoint on loopback that keeps the
// span names and trace ids it is sent, decoded from the wire.
type receiver struct {
	mu    sync.Mutex
	spans map[string]string // name → trace id
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.spans[s.Name] = trace.TraceID(s.TraceId).String()
			}
		}
	}
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// TestNewExportsSpansOverOTLPHTTP: with an endpoint set, spans of a trace
// the caller started reach a real OTLP/HTTP endpoint under the caller's
// trace id when Shutdown flushes them, and the instruments land on the
// registry /metrics serves.
func TestNewExportsSpansOverOTLPHTTP(t *testing.T) {
	rc := &receiver{spans: map[string]string{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s, err := FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_METRICS_EXPORTER": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	tel, err := New(context.Background(), s, "v-test", reg)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx := tel.Propagator.Extract(context.Background(), propagation.HeaderCarrier(h))
	_, span := tel.Tracer.Tracer("test").Start(ctx, "tools/call get_time")
	span.End()
	c, err := tel.Meter.Meter("test").Int64Counter("toolhost.test.calls")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 2)
	if n, err := testutil.GatherAndCount(reg, "toolhost_test_calls_total"); err != nil || n != 1 {
		t.Errorf("registry: %d series of toolhost_test_calls_total (%v), want 1", n, err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Shutdown returns once the batch is exported and answered.
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if got := rc.spans["tools/call get_time"]; got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("exported spans %v; want tools/call get_time in the caller's trace", rc.spans)
	}
}

// TestDisabledRecordsNothing: OTEL_SDK_DISABLED leaves the registry empty
// and makes no spans, whatever else is set.
func TestDisabledRecordsNothing(t *testing.T) {
	s, err := FromEnv(env(map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	tel, err := New(context.Background(), s, "v", reg)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tel.Meter.Meter("test").Int64Counter("toolhost.test.calls")
	c.Add(context.Background(), 1)
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("registry has %d families, want none", len(mfs))
	}
	_, span := tel.Tracer.Tracer("test").Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("a disabled tracer made a span")
	}
}

// TestLogHandlerNamesTheTrace: a line logged with a context in a trace
// carries its trace and span ids; a line that names its own trace_id
// keeps it; a line without a trace has none.
func TestLogHandlerNamesTheTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	tel := Off()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx := tel.Propagator.Extract(context.Background(), propagation.HeaderCarrier(h))
	log.InfoContext(ctx, "in trace")
	log.InfoContext(ctx, "own id", "trace_id", "0af7651916cd43dd8448eb211c80319c")
	log.InfoContext(context.Background(), "no trace")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []struct{ trace, span string }{
		{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"},
		{"0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7"},
		{"", ""},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		gotTrace, _ := rec["trace_id"].(string)
		gotSpan, _ := rec["span_id"].(string)
		if gotTrace != want[i].trace || gotSpan != want[i].span || rec["component"] != "test" {
			t.Errorf("line %d: %s; want trace %q span %q", i, line, want[i].trace, want[i].span)
		}
		if strings.Count(line, `"trace_id"`) > 1 {
			t.Errorf("line %d names trace_id twice: %s", i, line)
		}
	}
}

// TestNewExportsMetricsOverOTLPHTTP: with OTLP metrics on, an
// instrument's value reaches a real OTLP/HTTP endpoint when Shutdown
// flushes the periodic reader, with the service's name on its resource.
func TestNewExportsMetricsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int64{}
	service := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req colmetrics.ExportMetricsServiceRequest
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rm := range req.ResourceMetrics {
			for _, a := range rm.Resource.Attributes {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, p := range m.GetSum().GetDataPoints() {
						got[m.Name] += p.GetAsInt()
					}
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	s, err := FromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_TRACES_EXPORTER": "none", "OTEL_SERVICE_NAME": "edge-7"}))
	if err != nil {
		t.Fatal(err)
	}
	tel, err := New(context.Background(), s, "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tel.Meter.Meter("test").Int64Counter("toolhost.test.calls")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 3)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["toolhost.test.calls"] != 3 || service != "edge-7" {
		t.Errorf("exported %v from service %q; want toolhost.test.calls 3 from edge-7", got, service)
	}
}
