package tools

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/instrument"
	"github.com/toolhost/toolhost/journal"
)

// scopeName is the instrumentation scope of the pipeline's spans and
// metrics.
const scopeName = "github.com/toolhost/toolhost/tools"

// Attribute keys of the call metrics and spans, beside the semantic
// conventions' gen_ai.* and error.type.
const (
	AttrFace         = "toolhost.face"
	AttrStatus       = "toolhost.status"
	AttrProviderType = "toolhost.provider.type"
	AttrStage        = "toolhost.stage"
	AttrReason       = "toolhost.reason"
	AttrExecutionID  = "toolhost.execution_id"
)

// instruments are what every call records: an execute_tool span (the
// GenAI semantic conventions' tool execution span), its duration and
// outcome, and the refusals by stage and reason. Their labels are
// bounded: a tool's own name only for toolhost's builtins and the config's
// presets, the provider type otherwise (an account's definitions and
// remote tools are the account's to name, and a model invents names).
type instruments struct {
	tracer   trace.Tracer
	duration metric.Float64Histogram
	refusals metric.Int64Counter
	// tracing and measuring are false for OpenTelemetry's no-op
	// providers: then a call builds no span and no attribute set, so
	// telemetry that is off costs the pipeline nothing.
	tracing, measuring bool
	sets               *instrument.AttrSets[callLabels, instrument.Set]
}

// callLabels are the labels of one call's metrics; every field takes a
// bounded set of values.
type callLabels struct{ tool, provider, face, status, errType string }

// labelSet is a callLabels' attributes and the metric option made of
// them, built once per callLabels so a call allocates none.
func labelSet(k callLabels) instrument.Set {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.tool.name", k.tool),
		attribute.String(AttrProviderType, k.provider),
		attribute.String(AttrFace, k.face),
		attribute.String(AttrStatus, k.status),
	}
	if k.errType != "" {
		attrs = append(attrs, attribute.String("error.type", k.errType))
	}
	return instrument.NewSet(attrs...)
}

func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider) instruments {
	tp, mp = instrument.Providers(tp, mp)
	m := mp.Meter(scopeName)
	dur := instrument.Float64Histogram(m, "toolhost.tool.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls through the pipeline, by tool, face and outcome."),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
	ref := instrument.Int64Counter(m, "toolhost.tool.refusals", metric.WithUnit("{call}"),
		metric.WithDescription("Calls the pipeline refused before running them, by stage and reason (limits, permissions, approvals, arguments)."))
	noTraces, noMetrics := instrument.Off(tp, mp)
	return instruments{tracer: tp.Tracer(scopeName), duration: dur, refusals: ref, tracing: !noTraces, measuring: !noMetrics,
		sets: instrument.NewAttrSets(labelSet)}
}

// start opens the call's span and, when the face gave no trace id, takes
// the one of the span (so the journal names the trace the spans are
// exported under).
func (in instruments) start(ctx context.Context, p *Proposal) (context.Context, trace.Span) {
	var span trace.Span
	if in.tracing {
		ctx, span = in.tracer.Start(ctx, "execute_tool", trace.WithSpanKind(trace.SpanKindInternal))
	}
	if p.Caller.TraceID == "" {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			p.Caller.TraceID = sc.TraceID().String()
		}
	}
	return ctx, span
}

// end closes the span and records the call's duration and outcome.
func (in instruments) end(ctx context.Context, span trace.Span, c *callRecord, err error) {
	if !in.measuring && span == nil {
		return
	}
	out := c.out
	k := callLabels{tool: toolLabel(&c.rec), provider: c.rec.ProviderType, face: faceLabel(c.rec.Face), status: string(out.Status)}
	if err != nil {
		k.status, k.errType = "runtime_error", "runtime_error"
	} else if out.IsError {
		k.errType = codeLabel(out.Code)
	}
	ls := in.sets.Get(k)
	d := time.Duration(0)
	if !c.start.IsZero() {
		d = c.e.opts.Clock().Sub(c.start)
	}
	if in.measuring {
		in.duration.Record(context.WithoutCancel(ctx), max(d, 0).Seconds(), ls.Option)
	}
	if span == nil {
		return
	}
	attrs := ls.Attrs
	if !span.IsRecording() {
		span.End()
		return
	}
	// The span names the tool itself (a span is not a metric series).
	span.SetName("execute_tool " + clip.Runes(c.rec.ToolName, 128))
	span.SetAttributes(attrs...)
	span.SetAttributes(attribute.String("gen_ai.tool.name", clip.Runes(c.rec.ToolName, 128)))
	span.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.call.id", out.CallID), attribute.String(AttrExecutionID, out.ExecutionID))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	} else if out.IsError {
		span.SetStatus(codes.Error, out.Code)
	}
	span.End()
}

// write runs one journal write (open, finish, add) in a "journal {op}"
// span, under a context the caller's cancellation does not reach: a call
// whose caller went away is still recorded.
func (in instruments) write(ctx context.Context, op string, f func(context.Context) error) error {
	if !in.tracing {
		return f(context.WithoutCancel(ctx))
	}
	ctx, span := in.tracer.Start(context.WithoutCancel(ctx), "journal "+op)
	err := f(ctx)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// refused counts a call the pipeline ended before running it.
func (in instruments) refused(ctx context.Context, stage journal.State, code string) {
	if !in.measuring {
		return
	}
	in.refusals.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(
		attribute.String(AttrStage, string(stage)), attribute.String(AttrReason, codeLabel(code))))
}

// toolLabel is the tool's name as a metric label: the name of a builtin
// or a preset of the config, else the provider type after an underscore
// (_preset for an account's definitions, _mcp, _unknown).
func toolLabel(r *journal.Record) string {
	switch {
	case r.ProviderType == journal.ProviderBuiltin,
		r.ProviderType == journal.ProviderPreset && strings.HasPrefix(r.ProviderID, "preset:"):
		return r.ToolName
	}
	return "_" + r.ProviderType
}

// faceLabel is the face as a metric label; the pipeline's callers set
// one of four, anything else is "other".
func faceLabel(f string) string {
	switch f {
	case "mcp", "hosted", "cli", "console":
		return f
	}
	return "other"
}

// codeLabel is an error code as a metric label: toolhost's codes are
// short snake_case words; anything else is "other".
func codeLabel(code string) string {
	if code == "" || len(code) > 48 {
		return "other"
	}
	for _, r := range code {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return "other"
		}
	}
	return code
}
