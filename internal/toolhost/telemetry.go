package toolhost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolhost/toolhost/internal/instrument"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/telemetry"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
)

// openTelemetry builds the app's telemetry from the settings cmd read
// from the environment: its metrics land in the registry /metrics serves
// (serve), beside the Go runtime and run_code's pool figures.
func openTelemetry(ctx context.Context, a *App) error {
	a.registry = prometheus.NewRegistry()
	tel, err := telemetry.New(ctx, a.o.Telemetry, a.o.Version, a.registry)
	if err != nil {
		return ConfigError{err}
	}
	a.o.tel = tel
	a.onClose(func() {
		if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
			a.o.Logger.Warn("telemetry shutdown", "err", err)
		}
	})
	return nil
}

// telemetry is the app's telemetry, or the one that records nothing
// (Check, tests that build parts alone).
func (o *Options) telemetry() *telemetry.Telemetry {
	if o.tel == nil {
		return telemetry.Off()
	}
	return o.tel
}

// serverTelemetry is the HTTP and MCP faces' share of it; nil when the
// SDK is disabled, so the faces add no middleware at all.
func (o *Options) serverTelemetry() *server.Telemetry {
	if o.tel == nil || o.Telemetry.Disabled {
		return nil
	}
	return &server.Telemetry{Tracer: o.tel.Tracer, Meter: o.tel.Meter, Propagator: o.tel.Propagator}
}

// journalApplied is the journal's OnApply: toolhost.journal.apply.duration,
// each batch of spooled writes applied to the store, by outcome.
func journalApplied(o *Options) func(writes int, took time.Duration, err error) {
	h := instrument.Float64Histogram(o.telemetry().Meter.Meter(journalScope), "toolhost.journal.apply.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the store took to apply a batch of the journal's spooled writes, by outcome."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5))
	ok := metric.WithAttributes(attribute.String("toolhost.outcome", "ok"))
	failed := metric.WithAttributes(attribute.String("toolhost.outcome", "error"))
	return func(_ int, took time.Duration, err error) {
		if err != nil {
			h.Record(context.Background(), took.Seconds(), failed)
			return
		}
		h.Record(context.Background(), took.Seconds(), ok)
	}
}

// observeJournal reports toolhost.journal.spool.pending, the spooled
// writes waiting for the store, at each collection.
func observeJournal(o *Options, j *journal.Journal) error {
	_, err := o.telemetry().Meter.Meter(journalScope).Int64ObservableGauge("toolhost.journal.spool.pending", metric.WithUnit("{write}"),
		metric.WithDescription("Journal writes in the spool waiting for the store."),
		metric.WithInt64Callback(func(_ context.Context, obs metric.Int64Observer) error {
			obs.Observe(int64(j.Pending()))
			return nil
		}))
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}

// observeJobs reports the job queue's depth at each collection:
// toolhost.jobs.queued, toolhost.jobs.running and
// toolhost.jobs.oldest_queued_age (one query for the three).
func observeJobs(o *Options, jobs *store.Jobs) error {
	m := o.telemetry().Meter.Meter(jobsScope)
	queued, err1 := m.Int64ObservableGauge("toolhost.jobs.queued", metric.WithUnit("{job}"),
		metric.WithDescription("Deferred calls waiting in the job queue (available, scheduled or waiting for a retry)."))
	running, err2 := m.Int64ObservableGauge("toolhost.jobs.running", metric.WithUnit("{job}"),
		metric.WithDescription("Deferred calls running on any process that shares the store."))
	age, err3 := m.Float64ObservableGauge("toolhost.jobs.oldest_queued_age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest deferred call waiting in the job queue (0 when none waits)."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	_, err := m.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
		s, err := jobs.Stats(ctx)
		if err != nil {
			return err
		}
		obs.ObserveInt64(queued, int64(s.Queued))
		obs.ObserveInt64(running, int64(s.Running))
		obs.ObserveFloat64(age, s.OldestQueuedAge)
		return nil
	}, queued, running, age)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}

// jobsScope is the instrumentation scope of the job queue's metrics.
const jobsScope = "github.com/toolhost/toolhost/internal/store/jobs"

// journalScope is the instrumentation scope of the journal's metrics.
const journalScope = "github.com/toolhost/toolhost/journal"
