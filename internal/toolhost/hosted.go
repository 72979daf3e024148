package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/idempotency"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/server/v1/upstream/responses"
	"github.com/toolhost/toolhost/tools"
)

// hostedRoutes builds the /v1 handler and its routes from the config, and
// a function reporting the routes' state for /healthz. A route whose API key
// variable is not set is a warning, not a failure (as a search provider's
// is): it stays configured, is marked unavailable and is never picked.
//
// With a store (serve), the Idempotency-Key records and the round records
// are kept in it, so every replica on one PostgreSQL answers a retry or a
// look-up made on another; without (check), in memory.
func hostedRoutes(o *Options, exec *tools.Executor, ks *keys.Service, db *store.DB, logger *slog.Logger) (map[string]http.Handler, func() any, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var routes []*loop.Route
	for i, rc := range o.Config.Hosted.Routes {
		if rc.Name == "" {
			return nil, nil, ConfigError{fmt.Errorf("hosted.routes[%d]: name is required", i)}
		}
		key, unavailable := "", ""
		if rc.APIKeyEnv != "" {
			v, ok := o.lookupEnv(rc.APIKeyEnv)
			if !ok || v == "" {
				unavailable = fmt.Sprintf("environment variable %s (api_key_env) is not set", rc.APIKeyEnv)
				logger.Warn("hosted route unavailable", "route", rc.Name, "reason", unavailable)
			}
			key = v
		}
		up, err := routeUpstream(o, rc, key)
		if err != nil {
			return nil, nil, ConfigError{fmt.Errorf("hosted.routes[%d] (%s): %w", i, rc.Name, err)}
		}
		if rc.BaseURL == "" {
			return nil, nil, ConfigError{fmt.Errorf("hosted.routes[%d] (%s): base_url is required", i, rc.Name)}
		}
		route := &loop.Route{
			Name:          rc.Name,
			Protocol:      routeProtocol(rc.Protocol),
			Models:        rc.Models,
			SupportsTools: rc.SupportsTools,
			Prices:        rc.Prices,
			Unavailable:   unavailable,
		}
		tel := o.telemetry()
		route.Upstream = loop.Traced(up, route, genAIProvider(route.Protocol), tel.Tracer, tel.Meter)
		routes = append(routes, route)
	}
	router, err := loop.NewRouter(routes...)
	if err != nil {
		return nil, nil, ConfigError{fmt.Errorf("hosted.routes: %w", err)}
	}
	rounds := v1.NewRoundStore(0)
	idem := v1.NewIdempotencyStoreBytes(0, 0, o.Config.Hosted.IdempotencyMaxBytes, o.Config.Hosted.IdempotencyAccountBytes)
	if db != nil {
		rounds = v1.NewSharedRoundStore(db, 0, nil, logger)
		idem = v1.NewSharedIdempotencyStore(db.Idempotency(idempotency.Limits{
			MaxBytes: o.Config.Hosted.IdempotencyMaxBytes, AccountBytes: o.Config.Hosted.IdempotencyAccountBytes}), 0, nil)
	}
	runner := loop.NewRunner(exec, loop.RunnerOptions{Rounds: rounds, Logger: logger, Tracer: o.telemetry().Tracer})
	enabled := o.Config.Hosted.Enabled == nil || *o.Config.Hosted.Enabled
	h := v1.New(v1.Options{
		Label:                o.Config.Hosted.Label,
		Enabled:              enabled,
		Runner:               runner,
		Router:               router,
		DefaultMaxToolRounds: o.Config.Hosted.MaxToolRounds,
		MaxToolRoundsLimit:   o.Config.Hosted.MaxToolRoundsLimit,
		Budgets:              o.Config.Hosted.Budgets.Loop(),
		KeyBudgets:           keyBudgets(ks),
		Rounds:               rounds,
		MaxBodyBytes:         o.Config.Hosted.MaxBodyBytes,
		MaxEstimateBytes:     o.Config.Hosted.CountTokensMaxBytes,
		Idempotency:          idem,
		Logger:               logger,
	})
	return h.Routes(), func() any { return hostedStatus{Routes: router.Status()} }, nil
}

// keyBudgets reads an API key's hosted budgets (cached by the service);
// nil without keys (--dev).
func keyBudgets(ks *keys.Service) func(ctx context.Context, keyID string) (loop.Budgets, error) {
	if ks == nil {
		return nil
	}
	return func(ctx context.Context, keyID string) (loop.Budgets, error) {
		k, err := ks.KeyByID(ctx, keyID)
		if err != nil {
			return loop.Budgets{}, err
		}
		h := k.Limits.Hosted
		return loop.Budgets{ModelCalls: h.ModelCalls, ToolCalls: h.ToolCalls, ResultBytes: h.ResultBytes,
			WallClock: time.Duration(h.WallClockMS) * time.Millisecond, Cost: h.Cost}, nil
	}
}

// hostedStatus is the hosted routes' state, under "hosted" in /healthz.
type hostedStatus struct {
	Routes []loop.RouteStatus `json:"routes"`
}

// routeUpstream is the client of a route's protocol.
func routeUpstream(o *Options, rc config.Route, key string) (loop.Upstream, error) {
	t := upstream.Timeouts{Header: rc.HeaderTimeout.D(), Idle: rc.IdleTimeout.D(), Total: rc.RequestTimeout.D()}
	prop := o.telemetry().Propagator
	switch rc.Protocol {
	case "openai", "":
		return openai.New(openai.Config{Name: rc.Name, BaseURL: rc.BaseURL, APIKey: key, Propagator: prop, Timeouts: t}), nil
	case "anthropic":
		// The Messages API; /messages is appended to base_url.
		return anthropic.New(anthropic.Config{Name: rc.Name, BaseURL: rc.BaseURL, APIKey: key, Propagator: prop, Timeouts: t}), nil
	case "responses":
		// The Responses API; /responses is appended to base_url.
		return responses.New(responses.Config{Name: rc.Name, BaseURL: rc.BaseURL, APIKey: key, Propagator: prop, Timeouts: t}), nil
	}
	return nil, fmt.Errorf("protocol %q is not supported (want \"openai\", \"anthropic\" or \"responses\")", rc.Protocol)
}

// genAIProvider is gen_ai.provider.name of a route's protocol: the API's
// vendor, so a Responses route is "openai" like a Chat Completions one.
func genAIProvider(d loop.Dialect) string {
	if d == loop.DialectResponses {
		return string(loop.DialectOpenAI)
	}
	return string(d)
}

// routeProtocol is the dialect of a route's protocol setting.
func routeProtocol(p string) loop.Dialect {
	switch p {
	case "anthropic":
		return loop.DialectAnthropic
	case "responses":
		return loop.DialectResponses
	}
	return loop.DialectOpenAI
}
