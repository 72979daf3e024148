// Package telemetry sets up OpenTelemetry for toolhost in one place: the
// tracer and meter providers every package instruments itself with (the
// OpenTelemetry API, whose no-op default costs nothing), the metrics
// exported in the Prometheus format on /metrics beside the Go runtime and
// run_code's pool figures, OTLP export over HTTP or gRPC of traces and
// metrics, the W3C trace-context propagator, and the log handler that puts
// the trace id on every log line of a request.
//
// It is configured by the standard OTEL_* variables (FromEnv; only cmd
// reads them) and is off by default: no spans are made and nothing is
// exported until an OTLP endpoint or exporter is named. The metric
// instruments are on unless OTEL_SDK_DISABLED=true, because /metrics is
// where an operator already looks.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Telemetry is what the packages instrument themselves with. The zero
// value is not usable; Off returns the one that does nothing.
type Telemetry struct {
	// Tracer makes the spans (a no-op provider when traces are off).
	Tracer trace.TracerProvider
	// Meter makes the instruments (a no-op provider when disabled).
	Meter metric.MeterProvider
	// Propagator reads and writes traceparent and tracestate.
	Propagator propagation.TextMapPropagator
	// PropagateFetch says fetch_page sends traceparent to web pages too.
	PropagateFetch bool
	shutdown       []func(context.Context) error
}

// Off is telemetry that records nothing. The propagator still carries a
// caller's trace context on to the upstream models and remote MCP
// servers, unchanged, so their logs can be matched with the caller's.
func Off() *Telemetry {
	return &Telemetry{Tracer: tracenoop.NewTracerProvider(), Meter: metricnoop.NewMeterProvider(), Propagator: propagation.TraceContext{}}
}

// New builds the providers s describes. The metric instruments are
// exported to reg (served on /metrics) in the Prometheus format; reg may
// be nil where nothing serves /metrics (stdio, call). version is the
// service.version resource attribute.
func New(ctx context.Context, s Settings, version string, reg prometheus.Registerer) (_ *Telemetry, err error) {
	t := Off()
	t.PropagateFetch = s.PropagateFetch
	if s.Disabled {
		return t, nil
	}
	defer func() {
		if err != nil {
			_ = t.Shutdown(context.WithoutCancel(ctx))
		}
	}()
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", s.ServiceName),
		attribute.String("service.version", version),
	))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	if t.Meter, err = t.meters(ctx, s, res, reg); err != nil {
		return nil, err
	}
	if s.Traces != nil {
		exp, err := traceExporter(ctx, *s.Traces)
		if err != nil {
			return nil, err
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(traceSampler(s)))
		t.shutdown = append(t.shutdown, tp.Shutdown)
		t.Tracer = tp
	}
	return t, nil
}

// meters builds the meter provider: the Prometheus reader when reg is
// set, the OTLP periodic reader when metrics are exported.
func (t *Telemetry) meters(ctx context.Context, s Settings, res *resource.Resource, reg prometheus.Registerer) (metric.MeterProvider, error) {
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if reg != nil {
		pe, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
		if err != nil {
			return nil, fmt.Errorf("telemetry prometheus exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(pe))
	}
	if s.Metrics != nil {
		exp, err := metricExporter(ctx, *s.Metrics)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if reg == nil && s.Metrics == nil {
		return metricnoop.NewMeterProvider(), nil
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	t.shutdown = append(t.shutdown, mp.Shutdown)
	return mp, nil
}

func traceExporter(ctx context.Context, e Export) (sdktrace.SpanExporter, error) {
	var exp sdktrace.SpanExporter
	var err error
	if e.Protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(e.Endpoint))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(e.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry OTLP trace exporter %s: %w", e.Endpoint, err)
	}
	return exp, nil
}

func metricExporter(ctx context.Context, e Export) (sdkmetric.Exporter, error) {
	var exp sdkmetric.Exporter
	var err error
	if e.Protocol == ProtocolGRPC {
		exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(e.Endpoint))
	} else {
		exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(e.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry OTLP metric exporter %s: %w", e.Endpoint, err)
	}
	return exp, nil
}

// traceSampler is the sampler FromEnv checked.
func traceSampler(s Settings) sdktrace.Sampler {
	switch s.Sampler {
	case SamplerAlwaysOn:
		return sdktrace.AlwaysSample()
	case SamplerAlwaysOff:
		return sdktrace.NeverSample()
	case SamplerRatio:
		return sdktrace.TraceIDRatioBased(s.SamplerArg)
	case SamplerParentAlwaysOff:
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case SamplerParentRatio:
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(s.SamplerArg))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// ShutdownTimeout bounds Shutdown's flush of the spans and metrics still
// buffered.
const ShutdownTimeout = 5 * time.Second

// Shutdown flushes what is buffered and stops the exporters, within
// ShutdownTimeout.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		if err := t.shutdown[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	t.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}
