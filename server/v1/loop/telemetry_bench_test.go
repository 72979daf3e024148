package loop_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/sleep"
)

// discard is a span exporter that drops what it is given: the batch
// processor's work is measured, not a collector's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkLoopRoundTelemetry is BenchmarkLoopRoundOverhead (non-streaming)
// with the telemetry off (OpenTelemetry's no-op providers), with the
// metrics only (toolhost's default), and with traces sampled at 100 % and
// 1 % besides (the SDK's batch processor, spans dropped at export).
func BenchmarkLoopRoundTelemetry(b *testing.B) {
	for _, tc := range []struct {
		name    string
		metrics bool
		ratio   float64 // < 0: no tracer
	}{
		{"off", false, -1}, {"metrics", true, -1}, {"traces=100%", true, 1}, {"traces=1%", true, 0.01},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// Off is what serve runs with OTEL_SDK_DISABLED=true: the
			// same calls into no-op providers.
			var tp trace.TracerProvider = tracenoop.NewTracerProvider()
			var mp metric.MeterProvider = metricnoop.NewMeterProvider()
			if tc.metrics {
				mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			}
			if tc.ratio >= 0 {
				stp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(tc.ratio))))
				defer func() { _ = stp.Shutdown(context.Background()) }()
				tp = stp
			}
			ex, err := tools.NewExecutor(tools.Options{Tracer: tp, Meter: mp}, append(builtin.All(), sleep.New())...)
			if err != nil {
				b.Fatal(err)
			}
			r := loop.NewRunner(ex, loop.RunnerOptions{Tracer: tp})
			route := &loop.Route{Name: "mem", Protocol: loop.DialectOpenAI, SupportsTools: true}
			route.Upstream = loop.Traced(instantUpstream{rounds: 4}, route, "openai", tp, mp)
			per := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				res, err := r.Run(context.Background(), &loop.Run{
					Request: userRequest(fmt.Sprint("bench ", i), false),
					Hosted:  loop.Hosted{Tools: []string{"sleep"}, MaxToolRounds: 8},
					Route:   route,
					Caller:  loop.Caller{RequestID: "req_bench"},
				})
				if err != nil {
					b.Fatal(err)
				}
				per = append(per, time.Since(start)/time.Duration(res.ToolRounds()))
			}
			b.StopTimer()
			slices.Sort(per)
			b.ReportMetric(float64(per[len(per)/2].Microseconds()), "p50-µs/round")
			b.ReportMetric(float64(per[len(per)*99/100].Microseconds()), "p99-µs/round")
		})
	}
}
