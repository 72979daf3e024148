package toolhost

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhost/toolhost/internal/telemetry"
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
