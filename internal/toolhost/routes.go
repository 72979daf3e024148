package toolhost

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/server/console"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
)

// access is what a caller must present for a group of routes. Each group
// declares it where App.routes adds it; no route is secured by matching
// its path.
type access struct {
	// scope is the scope the key or token must hold; "" admits any valid
	// key (what it reads is scoped to the key's account).
	scope string
	// writeScope, when set, is required instead of scope by the group's
	// routes of any method but GET: the tools API's writes (definitions,
	// sessions, permissions) need the tools scope, its reads any key.
	writeScope string
	// xAPIKey accepts "x-api-key: <key>" besides Authorization, as
	// Anthropic clients send it (/v1).
	xAPIKey bool
	// public routes take no credentials: OAuth metadata and the
	// authorization server's own endpoints.
	public bool
}

// routeTable is the HTTP server's routes beyond /mcp and /healthz, each
// behind the authentication its group declared.
type routeTable struct {
	authn server.Authenticator
	dev   bool
	m     map[string]http.Handler
	// consoleOAuth is the console's OAuth sign-in (nil: keys only).
	consoleOAuth *console.OAuth
}

// add mounts routes with the access a.
func (t *routeTable) add(a access, routes map[string]http.Handler) {
	for pattern, h := range routes {
		if !a.public {
			scope := a.scope
			if method, _, ok := strings.Cut(pattern, " "); ok && a.writeScope != "" && method != http.MethodGet {
				scope = a.writeScope
			}
			h = server.Auth(t.authn, t.dev, scope, a.xAPIKey)(h)
		}
		t.m[pattern] = h
	}
}

// routes builds serve's routes on the app: /v1 (hosted scope), the
// tools REST API (reads: any key; writes: tools scope), the remote MCP
// servers (tools scope), key management,
// metrics and OAuth grants (admin scope), OAuth's public endpoints; and
// the authenticator /mcp uses too (API keys, plus OAuth tokens unless
// Dev or turned off). health reports the /v1 routes for /healthz.
func (a *App) routes(ctx context.Context, mcpSrv *mcpface.Server, listen net.Addr) (rt *routeTable, health func() any, err error) {
	o, logger, dev := &a.o, a.o.Logger, a.o.Dev
	rt = &routeTable{authn: a.keys, dev: dev, m: map[string]http.Handler{}}
	var oauthAdmin, oauthPublic map[string]http.Handler
	if !dev {
		rt.authn, oauthAdmin, oauthPublic, err = setupOAuth(ctx, o.Config.Auth.OAuth, a.keys, listen, logger, a.onClose, &rt.consoleOAuth)
		if err != nil {
			return nil, nil, err
		}
	}
	v1, health, err := hostedRoutes(o, a.exec, a.keys, a.db, logger)
	if err != nil {
		return nil, nil, err
	}
	rt.add(access{scope: keys.ScopeHosted, xAPIKey: true}, withSlotCheck(v1, a.exec.Slots()))
	rt.add(access{writeScope: keys.ScopeTools}, journalRoutes(a.exec))
	rt.add(access{scope: keys.ScopeTools}, approvalRoutes(a.exec))
	rt.add(access{writeScope: keys.ScopeTools}, definitionRoutes(o, a.defs, a.exec, mcpSrv.DefinitionsChanged))
	mcpServers, mcpCallback := mcpServerRoutes(o, a, mcpSrv.DefinitionsChanged, publicBase(o.Config.Auth.OAuth.PublicURL, listen), logger)
	rt.add(access{scope: keys.ScopeTools}, mcpServers)
	rt.add(access{scope: keys.ScopeAdmin}, keyRoutes(a.keys))
	rt.add(access{scope: keys.ScopeAdmin}, (&admin.JobLimits{Settings: a.settings, Now: a.exec.Clock()}).Routes())
	rt.add(access{scope: keys.ScopeAdmin}, metricsRoutes(a.registry, a.sandbox))
	rt.add(access{scope: keys.ScopeAdmin}, oauthAdmin)
	rt.add(access{public: true}, oauthPublic)
	// The browser comes back from a remote server's authorization server
	// without a key; the state binds it (docs/mcp-servers.md).
	rt.add(access{public: true}, mcpCallback)
	// Last: the console calls every route above in process.
	consoleRoutes, err := a.consoleRoutes(rt)
	if err != nil {
		return nil, nil, err
	}
	rt.add(access{public: true}, consoleRoutes)
	return rt, health, nil
}

// mcpServer is serve's MCP face, from the config's mcp section.
func mcpServer(o *Options, exec *tools.Executor, logger *slog.Logger) *mcpface.Server {
	return mcpface.New(exec, mcpface.Options{
		Version:        o.Version,
		Stateless:      o.Config.MCP.Stateless,
		JSONResponse:   o.Config.MCP.JSONResponse,
		SessionTimeout: o.Config.MCP.SessionTimeout.D(),
		Limits: mcpface.Limits{
			MaxBodyBytes: o.Config.MCP.MaxBodyBytes, MaxClientInfoBytes: o.Config.MCP.MaxClientInfoBytes,
			SessionsPerKey: o.Config.MCP.SessionsPerKey, Sessions: o.Config.MCP.Sessions,
		},
		Anonymous: server.DevIdentity, // --dev; otherwise every request carries its identity
		Logger:    logger,
		Telemetry: o.serverTelemetry(),
	})
}

// mcpHandler puts the MCP endpoint behind the mcp scope and hands the
// caller's identity to the go-sdk.
func mcpHandler(h http.Handler, a server.Authenticator, dev bool) http.Handler {
	if dev {
		return server.Auth(a, true, "", false)(h)
	}
	return server.Auth(a, false, keys.ScopeMCP, false)(mcpface.Authenticated(h))
}
