package runcode

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/instrument"
	"github.com/toolhost/toolhost/sandbox"
)

// scopeName is the instrumentation scope of run_code's spans and metrics.
const scopeName = "github.com/toolhost/toolhost/tools/runcode"

// WithTelemetry instruments run_code: a "sandbox queue" span for the wait
// before the program starts (its runtime, its account's share, a run
// slot) and a "sandbox run" span for the run, one after the other under
// the call's span, and the two as histograms by language (the run's by
// outcome too). The sandbox itself knows nothing of OpenTelemetry: it
// reports how long a request was queued (sandbox.Result.Queued).
func (t *Tool) WithTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) *Tool {
	t.tel = newInstruments(tp, mp)
	return t
}

type instruments struct {
	tracer trace.Tracer
	queue  metric.Float64Histogram
	run    metric.Float64Histogram
}

func newInstruments(tp trace.TracerProvider, mp metric.MeterProvider) instruments {
	tp, mp = instrument.Providers(tp, mp)
	m := mp.Meter(scopeName)
	buckets := metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
	q := instrument.Float64Histogram(m, "toolhost.sandbox.queue.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a run_code program waited before it started (runtime, account share, run slot), by language."), buckets)
	r := instrument.Float64Histogram(m, "toolhost.sandbox.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a run_code program ran, by language and outcome."), buckets)
	return instruments{tracer: tp.Tracer(scopeName), queue: q, run: r}
}

// record makes the queue and run spans of a finished request (started at
// start, ended now) and records their durations. res is nil when the
// request never ran (busy, cancelled while queued, no runtime).
func (in instruments) record(ctx context.Context, lang sandbox.Language, start time.Time, res *sandbox.Result, runErr error) {
	end := time.Now()
	queued := end.Sub(start)
	if res != nil {
		queued = min(res.Queued, queued)
	}
	langAttr := attribute.String("toolhost.language", string(lang))
	bg := context.WithoutCancel(ctx)
	in.queue.Record(bg, queued.Seconds(), metric.WithAttributes(langAttr))
	_, qs := in.tracer.Start(ctx, "sandbox queue", trace.WithTimestamp(start), trace.WithAttributes(langAttr))
	if res == nil && runErr != nil {
		qs.SetStatus(codes.Error, runErr.Error())
	}
	qs.End(trace.WithTimestamp(start.Add(queued)))
	if res == nil {
		return
	}
	outcome := "ok"
	switch {
	case res.TimedOut:
		outcome = "timeout"
	case res.MemoryExceeded:
		outcome = "memory_exceeded"
	case res.ExitCode != 0:
		outcome = "exit_nonzero"
	}
	attrs := []attribute.KeyValue{langAttr, attribute.String("toolhost.outcome", outcome)}
	in.run.Record(bg, res.Duration.Seconds(), metric.WithAttributes(attrs...))
	_, rs := in.tracer.Start(ctx, "sandbox run", trace.WithTimestamp(start.Add(queued)),
		trace.WithAttributes(append(attrs, attribute.Bool("toolhost.warm", res.Warm))...))
	rs.End(trace.WithTimestamp(end))
}
