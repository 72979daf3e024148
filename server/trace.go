package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace id of a request's W3C traceparent header (32
// lower-case hex digits), or "" when the header is absent or malformed.
// Every face reads the trace id through it, so the journal's trace_id
// means the same on all of them. The parsing is OpenTelemetry's, to the
// letter of the W3C Trace Context recommendation: version ff, upper-case
// hex, an all-zero trace or parent id, or extra fields after version 00
// make the header invalid, and an invalid header is ignored.
func TraceID(h http.Header) string {
	if h == nil {
		return ""
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h)))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// ContextTraceID is the trace id of the span ctx carries (the request's
// server span, or the caller's traceparent when no span is recorded),
// else the trace id of h's traceparent, else "". The faces journal it:
// with tracing on, a request that sent no traceparent still has the trace
// id its spans are exported under.
func ContextTraceID(ctx context.Context, h http.Header) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return TraceID(h)
}
