package loop

import (
	"context"
	"errors"
	"path"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/instrument"
)

// scopeName is the instrumentation scope of the loop's spans and metrics.
const scopeName = "github.com/toolhost/toolhost/server/v1/loop"

// startRound opens the span of one round of the loop: its model call and
// the hosted calls that follow are its children.
func (r *Runner) startRound(ctx context.Context, run *Run, round int, final bool) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background()) // the no-op span: nothing to end
	}
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
	noTraces, noMetrics := instrument.Off(tp, mp)
	if noTraces && noMetrics {
		return up // telemetry off costs a model call nothing
	}
	m := mp.Meter(scopeName)
	dur := instrument.Float64Histogram(m, "gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	tok := instrument.Int64Histogram(m, "gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	t := &tracedUpstream{up: up, route: route, provider: provider, dur: dur, tok: tok}
	t.opts = instrument.NewAttrSets(t.newOptions)
	if !noTraces {
		t.tracer = tp.Tracer(scopeName)
	}
	if tc, ok := up.(TokenCounter); ok {
		return &tracedCounter{tracedUpstream: t, tc: tc}
	}
	return t
}

type tracedUpstream struct {
	up       Upstream
	route    *Route
	provider string
	tracer   trace.Tracer // nil: no spans
	dur      metric.Float64Histogram
	tok      metric.Int64Histogram

	// opts are the metric options of each model label and error type,
	// built once (the labels are bounded by the route's configuration).
	opts *instrument.AttrSets[[2]string, *callOptions]
}

// callOptions are one label set's options: the duration's and the two
// token types'.
type callOptions struct {
	instrument.Set // the duration's
	input, output  metric.MeasurementOption
}

// newOptions builds the options of a model label and error type.
func (t *tracedUpstream) newOptions(k [2]string) *callOptions {
	model, etype := k[0], k[1]
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", t.provider),
		attribute.String("gen_ai.request.model", model),
		attribute.String("toolhost.route", t.route.Name),
	}
	if etype != "" {
		attrs = append(attrs, attribute.String("error.type", etype))
	}
	withType := func(tt string) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(slices.Clip(attrs), attribute.String("gen_ai.token.type", tt))...))
	}
	return &callOptions{Set: instrument.NewSet(attrs...), input: withType("input"), output: withType("output")}
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
	span := trace.SpanFromContext(context.Background()) // no span unless traced
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient))
	}
	resp, err := t.up.Call(ctx, req, onDelta)
	etype := ""
	if err != nil {
		etype = errorType(err)
		span.SetStatus(codes.Error, etype)
	}
	o := t.opts.Get([2]string{model, etype})
	bg := context.WithoutCancel(ctx)
	t.dur.Record(bg, time.Since(start).Seconds(), o.Option)
	if resp != nil && resp.Usage.Present {
		t.tok.Record(bg, resp.Usage.InputTokens, o.input)
		t.tok.Record(bg, resp.Usage.OutputTokens, o.output)
	}
	if span.IsRecording() {
		span.SetAttributes(o.Attrs...)
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
