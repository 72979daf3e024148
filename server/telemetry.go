package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/instrument"
)

// Telemetry is what the HTTP server instruments itself with: the
// providers of internal/telemetry, as the OpenTelemetry API's interfaces.
type Telemetry struct {
	Tracer     trace.TracerProvider
	Meter      metric.MeterProvider
	Propagator propagation.TextMapPropagator
}

// ScopeName is the instrumentation scope of toolhost's spans and metrics.
const ScopeName = "github.com/toolhost/toolhost"

// traced gives every request a server span, the child of the caller's
// traceparent when it sends one, named for the route pattern (never the
// path: a path holds ids), and records http.server.request.duration by
// method, route and status. The route is read after the mux has matched
// (it sets the request's Pattern), so a request no route serves counts
// under the catch-all "/".
func traced(t *Telemetry, next http.Handler) http.Handler {
	tracer := t.Tracer.Tracer(ScopeName)
	dur := instrument.Float64Histogram(t.Meter.Meter(ScopeName), "http.server.request.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	noTraces, _ := instrument.Off(t.Tracer, t.Meter)
	sets := instrument.NewAttrSets(newRouteSet)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The caller's context goes on even with no span of ours: the
		// faces journal its trace id and send it on.
		ctx := t.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		var span trace.Span
		if !noTraces {
			ctx, span = tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", method(r.Method)), attribute.String("url.scheme", scheme(r))))
		}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(ctx)
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		rs := sets.Get(routeLabels{method(r.Method), routeOf(r.Pattern), sw.status})
		if span != nil {
			if sw.status >= 500 {
				span.SetStatus(codes.Error, "")
			}
			span.SetName(rs.name)
			span.SetAttributes(rs.Attrs...)
			span.End()
		}
		dur.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(), rs.Option)
	})
}

// routeLabels are a request's metric labels; routeSet their attributes,
// span name and metric option, built once per combination (methods,
// routes and statuses are bounded) so a request allocates none.
type routeLabels struct {
	method, route string
	status        int
}

type routeSet struct {
	name string
	instrument.Set
}

func newRouteSet(k routeLabels) routeSet {
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", k.method),
		attribute.String("http.route", k.route),
		attribute.Int("http.response.status_code", k.status),
	}
	if k.status >= 500 {
		attrs = append(attrs, attribute.String("error.type", strconv.Itoa(k.status)))
	}
	return routeSet{name: k.method + " " + k.route, Set: instrument.NewSet(attrs...)}
}

// routeOf is a mux pattern as http.route: its path template, without the
// method a Go pattern starts with ("GET /tool-executions/{id}" →
// "/tool-executions/{id}"); "/" for a request the mux matched to no
// pattern of its own.
func routeOf(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = strings.TrimLeft(pattern[i+1:], " ")
	}
	if pattern == "" {
		return "/"
	}
	return pattern
}

// method is the request method, or _OTHER for one HTTP does not define,
// so a client cannot grow the metric's label values.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// statusWriter notes the status a handler answers with. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
