package toolhost

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/console"
	"github.com/toolhost/toolhost/tools"
)

// consoleRoutes builds the operator console over the REST routes already
// in rt (each behind its own authentication and scope, which the console
// calls in process) and the journal's store. Its routes take no bearer:
// the console checks its own session cookie.
func (a *App) consoleRoutes(rt *routeTable) (map[string]http.Handler, error) {
	api := http.NewServeMux()
	for pattern, h := range rt.m {
		api.Handle(pattern, h)
	}
	var authn server.Authenticator = a.keys
	if a.o.Dev {
		authn = devKeys{}
	}
	https := strings.HasPrefix(strings.ToLower(a.o.Config.Auth.OAuth.PublicURL), "https:")
	c, err := console.New(console.Options{
		Keys: authn, API: api,
		Journal: a.exec.Journal().Store(), Slots: a.exec.Slots(),
		Secret:   []byte(a.o.SecretKey),
		Lifetime: a.o.Config.Console.SessionLifetime.D(),
		TraceURL: a.o.Config.Console.TraceURL,
		Secure:   func(r *http.Request) bool { return r.TLS != nil || https },
		RunCode:  func() any { return a.sandbox.Status() },
		Pages: []console.Page{console.JobsPage(console.JobsOptions{Journal: a.exec.Journal().Store(), Now: a.exec.Clock(),
			Stats: func(ctx context.Context) (console.QueueStats, error) {
				s, err := a.jobs.Stats(ctx)
				return console.QueueStats{Queued: s.Queued, Running: s.Running,
					OldestQueued: time.Duration(s.OldestQueuedAge * float64(time.Second))}, err
			}})},
		Pipeline: playground{a.exec, a.o.Dev},
		OAuth:    rt.consoleOAuth,
		Logger:   a.o.Logger,
	})
	if err != nil {
		return nil, err
	}
	return c.Routes(), nil
}

// devKeys signs anyone in as the local account in --dev, where the REST
// routes check no key either.
type devKeys struct{}

func (devKeys) Authenticate(context.Context, string) (*keys.Key, error) {
	return &keys.Key{ID: "dev", AccountID: server.DevIdentity.AccountID, Name: "dev", Scopes: keys.AllScopes}, nil
}

// playground is the console's Pipeline: the executor, with --dev's
// identity in --dev (where the console's key is no key).
type playground struct {
	*tools.Executor
	dev bool
}

func (p playground) Execute(ctx context.Context, pr tools.Proposal) (*tools.Outcome, error) {
	if p.dev {
		pr.Caller.Identity = server.DevIdentity
	}
	out, err := p.Executor.Execute(ctx, pr)
	if err != nil {
		return nil, fmt.Errorf("console playground: %w", err)
	}
	return out, nil
}
