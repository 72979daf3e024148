package fetchpage

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/instrument"
)

// scopeName is the instrumentation scope of fetch_page's spans and
// metrics.
const scopeName = "github.com/toolhost/toolhost/tools/fetchpage"

// WithTelemetry instruments the tool: a client span per HTTP request (each
// hop of a redirect chain), the bytes read from the web, the cache's hits
// and misses. prop, when set, sends the trace context to the web pages
// too (off by default: a page learns nothing of the caller's trace).
func WithTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) Option {
	return func(t *Tool) { t.tel = newInstruments(tp, mp, prop) }
}

type instruments struct {
	tracer trace.Tracer
	bytes  metric.Int64Counter
	cache  metric.Int64Counter
	prop   propagation.TextMapPropagator
}

func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) instruments {
	tp, mp = instrument.Providers(tp, mp)
	m := mp.Meter(scopeName)
	b := instrument.Int64Counter(m, "toolhost.fetch.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes fetch_page read from the web (decoded bodies), by content kind."))
	c := instrument.Int64Counter(m, "toolhost.fetch.cache.lookups", metric.WithUnit("{lookup}"),
		metric.WithDescription("fetch_page's page cache lookups, by result (hit, miss)."))
	return instruments{tracer: tp.Tracer(scopeName), bytes: b, cache: c, prop: prop}
}

// lookup counts a cache lookup.
func (in instruments) lookup(ctx context.Context, hit bool) {
	instrument.CountLookup(ctx, in.cache, hit)
}

// startGet opens the client span of one request (no URL: the span names
// the method; the host is an attribute).
func (in instruments) startGet(ctx context.Context, host string) (context.Context, trace.Span) {
	return in.tracer.Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("server.address", host)))
}

// endGet closes it with the status and the bytes read.
func (in instruments) endGet(ctx context.Context, span trace.Span, status int, kind string, n int, err error) {
	if n > 0 {
		in.bytes.Add(context.WithoutCancel(ctx), int64(n), metric.WithAttributes(attribute.String("toolhost.content", kind)))
	}
	if span.IsRecording() {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		span.SetAttributes(attribute.Int("toolhost.body_bytes", n))
		if err != nil {
			span.SetStatus(codes.Error, "fetch failed")
		} else if status >= 400 {
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}

// contentKind is a media type as a metric label.
func contentKind(mediaType string) string {
	switch {
	case mediaType == "application/pdf":
		return "pdf"
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return "html"
	case len(mediaType) > 5 && mediaType[:5] == "text/":
		return "text"
	}
	return "other"
}
