// Package instrument is what every instrumented package builds its
// OpenTelemetry instruments with, on the OpenTelemetry API alone (the SDK
// stays in internal/telemetry): providers that default to the no-op ones,
// histograms and counters made from constant names (a panic when the
// provider refuses one: a programming error, not a runtime condition),
// AttrSets, the cache of a bounded label combination's attributes and
// metric options built once, so a measurement allocates none, the count
// of a cache's lookups, and MetaCarrier, the trace context in an MCP
// request's _meta.
package instrument

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Providers returns tp and mp, each replaced by OpenTelemetry's no-op
// provider when nil.
func Providers(tp trace.TracerProvider, mp metric.MeterProvider) (trace.TracerProvider, metric.MeterProvider) {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	return tp, mp
}

// Off reports whether tp and mp are OpenTelemetry's no-op providers, so
// an instrumented path can skip building spans and attribute sets.
func Off(tp trace.TracerProvider, mp metric.MeterProvider) (noTraces, noMetrics bool) {
	_, noTraces = tp.(tracenoop.TracerProvider)
	_, noMetrics = mp.(metricnoop.MeterProvider)
	return noTraces, noMetrics
}

// Float64Histogram is m's histogram of that name; it panics when m refuses
// it (names and units are constants the SDK accepts).
func Float64Histogram(m metric.Meter, name string, opts ...metric.Float64HistogramOption) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// Int64Histogram is m's histogram of that name; it panics when m refuses
// it.
func Int64Histogram(m metric.Meter, name string, opts ...metric.Int64HistogramOption) metric.Int64Histogram {
	h, err := m.Int64Histogram(name, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// Int64Counter is m's counter of that name; it panics when m refuses it.
func Int64Counter(m metric.Meter, name string, opts ...metric.Int64CounterOption) metric.Int64Counter {
	c, err := m.Int64Counter(name, opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// Set is one label combination's attributes (for a span) and the metric
// option made of them.
type Set struct {
	Attrs  []attribute.KeyValue
	Option metric.MeasurementOption
}

// NewSet is the Set of attrs.
func NewSet(attrs ...attribute.KeyValue) Set {
	return Set{Attrs: attrs, Option: metric.WithAttributeSet(attribute.NewSet(attrs...))}
}

// AttrSets caches the value build makes of each key, a comparable struct
// of bounded labels: each is built on its key's first use and shared by
// every later one. Safe for concurrent use.
type AttrSets[K comparable, V any] struct {
	build func(K) V
	mu    sync.RWMutex
	m     map[K]V
}

// NewAttrSets is an empty cache of what build makes.
func NewAttrSets[K comparable, V any](build func(K) V) *AttrSets[K, V] {
	return &AttrSets[K, V]{build: build, m: map[K]V{}}
}

// Get is k's value, built on its first use.
func (s *AttrSets[K, V]) Get(k K) V {
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return v
	}
	v = s.build(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[k]; ok {
		return old // built meanwhile by another caller: every caller shares one
	}
	s.m[k] = v
	return v
}

// The two values of toolhost.result, the label of a cache's lookups.
var (
	lookupHit  = metric.WithAttributeSet(attribute.NewSet(attribute.String("toolhost.result", "hit")))
	lookupMiss = metric.WithAttributeSet(attribute.NewSet(attribute.String("toolhost.result", "miss")))
)

// CountLookup adds a cache lookup to c, by toolhost.result (hit, miss),
// under a context the caller's cancellation does not reach.
func CountLookup(ctx context.Context, c metric.Int64Counter, hit bool) {
	o := lookupMiss
	if hit {
		o = lookupHit
	}
	c.Add(context.WithoutCancel(ctx), 1, o)
}
