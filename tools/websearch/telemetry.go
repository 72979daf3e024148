package websearch

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/instrument"
)

// scopeName is the instrumentation scope of web_search's spans and
// metrics.
const scopeName = "github.com/toolhost/toolhost/tools/websearch"

// instruments are web_search's: a client span per provider request, the
// providers' latency by outcome, the failovers (a next provider asked
// because one failed, or hedged because it was slow) and the cache's hits
// and misses. The provider label is its configured name (the operator's
// config bounds it).
type instruments struct {
	tracer    trace.Tracer
	latency   metric.Float64Histogram
	failovers metric.Int64Counter
	cache     metric.Int64Counter
}

func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider) instruments {
	tp, mp = instrument.Providers(tp, mp)
	m := mp.Meter(scopeName)
	lat := instrument.Float64Histogram(m, "toolhost.search.provider.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a search engine request, by provider and outcome."),
		metric.WithExplicitBucketBoundaries(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30))
	fo := instrument.Int64Counter(m, "toolhost.search.failovers", metric.WithUnit("{request}"),
		metric.WithDescription("Search engine requests sent to a next provider, by reason (failure, hedge)."))
	c := instrument.Int64Counter(m, "toolhost.search.cache.lookups", metric.WithUnit("{lookup}"),
		metric.WithDescription("web_search's answer cache lookups, by result (hit, miss)."))
	return instruments{tracer: tp.Tracer(scopeName), latency: lat, failovers: fo, cache: c}
}

func (in instruments) lookup(ctx context.Context, hit bool) {
	instrument.CountLookup(ctx, in.cache, hit)
}

func (in instruments) failover(ctx context.Context, reason string) {
	in.failovers.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("toolhost.reason", reason)))
}

// startRequest opens the client span of one provider request.
func (in instruments) startRequest(ctx context.Context, provider string) (context.Context, trace.Span) {
	return in.tracer.Start(ctx, "search "+provider, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("toolhost.provider", provider)))
}

// endRequest records its latency and outcome and closes its span.
func (in instruments) endRequest(ctx context.Context, span trace.Span, provider string, took time.Duration, err error) {
	outcome := outcomeOf(err)
	attrs := []attribute.KeyValue{attribute.String("toolhost.provider", provider), attribute.String("toolhost.outcome", outcome)}
	in.latency.Record(context.WithoutCancel(ctx), took.Seconds(), metric.WithAttributes(attrs...))
	if span.IsRecording() {
		span.SetAttributes(attrs...)
		if err != nil {
			span.SetAttributes(attribute.String("error.type", outcome))
			span.SetStatus(codes.Error, outcome)
		}
	}
	span.End()
}

// outcomeOf names how a provider request ended.
func outcomeOf(err error) string {
	var f *failure
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &f):
		return [...]string{failNetwork: "network", failTimeout: "timeout", failRateLimited: "rate_limited", failHTTP: "http_error", failMalformed: "malformed"}[f.Kind]
	}
	return "network"
}
