package loop

import (
	"context"
	"errors"
	"path"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the loop's spans and metrics.
const scopeName = "github.com/toolhost/toolhost/server/v1/loop"

// startRound opens the span of one round of the loop: its model call and
// the hosted calls that follow are its children.
func (r *Runner) startRound(ctx context.Context, run *Run, round int, final bool) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, "hosted_round", trace.WithAttributes(
		attribute.Int("toolhost.round", round), attribute.Bool("toolhost.final_round", final),
		attribute.String("toolhost.run.request_id", run.Caller.RequestID)))
}

// Traced returns up with a `chat {model}` client span around each call
// (the GenAI semantic conventions: gen_ai.operation.name, provider,
// request and response model, gen_ai.usage.*), and records
// gen_ai.client.operation.duration and gen_ai.client.token.usage. The
// model label is bounded by the route's configuration: a model the route
// names exactly, else the pattern of Models it matched, else "_other".
// provider is gen_ai.provider.name ("openai", "anthropic"). A TokenCounter
// stays one.
func Traced(up Upstream, route *Route, provider string, tp trace.TracerProvider, mp metric.MeterProvider) Upstream {
	m := mp.Meter(scopeName)
	dur, err := m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	if err != nil {
		panic(err) // a constant name and unit the SDK accepts
	}
	tok, err := m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	if err != nil {
		panic(err)
	}
	t := &tracedUpstream{up: up, route: route, provider: provider, tracer: tp.Tracer(scopeName), dur: dur, tok: tok}
	if tc, ok := up.(TokenCounter); ok {
		return &tracedCounter{tracedUpstream: t, tc: tc}
	}
	return t
}

type tracedUpstream struct {
	up       Upstream
	route    *Route
	provider string
	tracer   trace.Tracer
	dur      metric.Float64Histogram
	tok      metric.Int64Histogram
}

type tracedCounter struct {
	*tracedUpstream
	tc TokenCounter
}

func (t *tracedCounter) CountTokens(ctx context.Context, req *UpstreamRequest) (int64, error) {
	return t.tc.CountTokens(ctx, req)
}

func (t *tracedUpstream) Call(ctx context.Context, req *UpstreamRequest, onDelta func(Delta) error) (*UpstreamResponse, error) {
	start := time.Now()
	model := t.modelLabel(req.Model)
	ctx, span := t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient))
	resp, err := t.up.Call(ctx, req, onDelta)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", t.provider),
		attribute.String("gen_ai.request.model", model),
		attribute.String("toolhost.route", t.route.Name),
	}
	if err != nil {
		attrs = append(attrs, attribute.String("error.type", errorType(err)))
		span.SetStatus(codes.Error, errorType(err))
	}
	bg := context.WithoutCancel(ctx)
	t.dur.Record(bg, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	if resp != nil && resp.Usage.Present {
		t.tok.Record(bg, resp.Usage.InputTokens, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
		t.tok.Record(bg, resp.Usage.OutputTokens, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
	}
	if span.IsRecording() {
		span.SetAttributes(attrs...)
		span.SetAttributes(attribute.Bool("gen_ai.request.stream", req.Stream))
		if resp != nil {
			span.SetAttributes(attribute.String("gen_ai.response.id", resp.ID), attribute.String("gen_ai.response.model", resp.Model),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}))
			if resp.Usage.Present {
				span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
					attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
					attribute.Int64("gen_ai.usage.cache_read.input_tokens", resp.Usage.CachedInputTokens))
			}
		}
	}
	span.End()
	return resp, err
}

// modelLabel bounds a requested model name by the route's configuration.
func (t *tracedUpstream) modelLabel(model string) string {
	for _, p := range t.route.Models {
		if p == model {
			return model
		}
	}
	for _, p := range t.route.Models {
		if ok, err := path.Match(p, model); err == nil && ok {
			return p
		}
	}
	return "_other"
}

// errorType is error.type of a failed model call: the upstream's HTTP
// status, timeout, cancelled, or _OTHER.
func errorType(err error) string {
	var ue *UpstreamError
	switch {
	case errors.As(err, &ue) && ue.Status >= 100 && ue.Status <= 599:
		return strconv.Itoa(ue.Status)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "_OTHER"
}
