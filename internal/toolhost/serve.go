package toolhost

import (
	"context"
	"net"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
)

// Server is serve's HTTP server on the app.
type Server struct {
	*server.Server
	// OAuth says whether /mcp takes OAuth tokens besides API keys.
	OAuth bool
}

// Server builds serve's HTTP server on the app: the MCP face from the
// config's mcp section on /mcp behind the mcp scope, every other route
// with the scope it needs (App.routes), /healthz with run_code's runtimes
// and the /v1 routes. addr is the listen address as given, listen the one
// the listener got: OAuth's issuer and the remote servers' callback URL
// default to it.
func (a *App) Server(ctx context.Context, addr string, listen net.Addr) (*Server, error) {
	mcpSrv := mcpServer(&a.o, a.exec, a.o.Logger)
	rt, hostedHealth, err := a.routes(ctx, mcpSrv, listen)
	if err != nil {
		return nil, err
	}
	srv := server.New(server.Options{
		Addr:            addr,
		Version:         a.o.Version,
		MCP:             mcpHandler(mcpSrv.Handler(), rt.authn, a.o.Dev),
		Routes:          rt.m,
		ShutdownTimeout: a.o.Config.ShutdownTimeout.D(),
		Limits:          serverLimits(a.o.Config.Server),
		Logger:          a.o.Logger,
		Telemetry:       a.o.serverTelemetry(),
		Health: func() any {
			return serveHealth{Hosted: hostedHealth(), RunCode: a.sandbox.Status(), Jobs: a.jobStats()}
		},
	})
	a.startRetention()
	// Deferred calls run on every serve process sharing the store; their
	// stop (Close) comes when the server's has ended.
	if err := a.WorkJobs(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	_, oauth := rt.authn.(server.TokenAuthenticator)
	return &Server{Server: srv, OAuth: oauth}, nil
}

// serveHealth is what serve adds to /healthz.
type serveHealth struct {
	Hosted  any                                        `json:"hosted"`
	RunCode map[sandbox.Language]sandbox.RuntimeStatus `json:"run_code"`
	// Jobs is the job queue's depth; null when the store did not answer.
	Jobs *store.JobStats `json:"jobs"`
}

// jobStats is the queue's depth for /healthz, or nil when the store does
// not answer within two seconds (the health answer itself must not hang).
func (a *App) jobStats() *store.JobStats {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := a.jobs.Stats(ctx)
	if err != nil {
		a.o.Logger.Warn("job queue depth", "err", err)
		return nil
	}
	return &s
}

// Stdio is the MCP face of toolhost stdio, its tool descriptions in lang.
// A remote server's listing that changes the local account's tools
// reaches its client as list_changed, as over HTTP.
func (a *App) Stdio(lang catalog.Lang) *mcpface.Server {
	srv := mcpface.New(a.exec, mcpface.Options{Version: a.o.Version, Lang: lang, Logger: a.o.Logger})
	a.mcpChanged = srv.DefinitionsChanged
	return srv
}

// serverLimits are the listener's limits from the config's server section
// (its trusted proxies checked by config.Validate).
func serverLimits(s config.Server) server.Limits {
	trusted, _ := server.ParseTrustedProxies(s.TrustedProxies)
	return server.Limits{
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(), IdleTimeout: s.IdleTimeout.D(), BodyTimeout: s.BodyTimeout.D(),
		MaxHeaderBytes: s.MaxHeaderBytes, MaxConns: s.MaxConnections, MaxConnsPerIP: s.MaxConnectionsPerIP,
		TrustedProxies: trusted,
	}
}
