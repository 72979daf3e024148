package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// secretSealer parses TOOLHOST_SECRET_KEY (current) and
// TOOLHOST_SECRET_KEY_PREVIOUS (previous, comma-separated). Without a key,
// servers without secrets still work.
func secretSealer(current, previous string) (*mcpremote.Sealer, error) {
	var cur []byte
	if current != "" {
		k, err := mcpremote.ParseKey(current)
		if err != nil {
			return nil, fmt.Errorf("TOOLHOST_SECRET_KEY: %w", err)
		}
		cur = k
	}
	var prev [][]byte
	for _, s := range strings.Split(previous, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		k, err := mcpremote.ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("TOOLHOST_SECRET_KEY_PREVIOUS: %w", err)
		}
		prev = append(prev, k)
	}
	return mcpremote.NewSealer(cur, prev...)
}

// openGateway builds the gateway on the app's store: the accounts'
// remote MCP servers as tools. Its Changed reaches the MCP face through
// a.mcpChanged, which serve and stdio set once the face exists.
func openGateway(o *Options, a *App, logger *slog.Logger) error {
	sealer, err := secretSealer(o.SecretKey, o.PreviousSecretKeys)
	if err != nil {
		return err
	}
	dial, err := egress.DialContext(o.Config.Fetch.AllowPrivate, 10*time.Second)
	if err != nil {
		return err
	}
	cfg := o.Config.MCPServers
	a.sealer = sealer
	// Every call of a remote tool looks its server up in the account's
	// list: the cache answers from memory; writes through it forget at
	// once, another replica's within its one-second TTL.
	a.mcpStore = mcpremote.NewCache(a.db, time.Second, time.Now)
	a.gateway = mcpremote.New(mcpremote.Options{
		Store: a.mcpStore, Sealer: sealer, Dial: dial,
		TTL: cfg.TTL.D(), ProbeTimeout: cfg.ProbeTimeout.D(), MaxConcurrent: cfg.MaxConcurrent, MaxResultBytes: cfg.MaxResultBytes,
		Changed: func(account string) {
			if a.mcpChanged != nil {
				a.mcpChanged(account)
			}
		},
		Logger: logger, Version: o.Version,
		Tracer: o.telemetry().Tracer, Propagator: o.telemetry().Propagator,
	})
	return nil
}

// publicBase is the URL browsers reach this server at: auth.oauth.public_url,
// else the listen address.
func publicBase(configured string, listen net.Addr) string {
	if b := strings.TrimRight(configured, "/"); b != "" {
		return b
	}
	return "http://" + listen.String()
}

// mcpServerRoutes are /mcp-servers and, public, the authorization callback
// of oauth_authorization_code servers; changed tells the MCP face an
// account's remote tools changed; base is the URL browsers reach this
// server at.
func mcpServerRoutes(o *Options, a *App, changed func(account string), base string, logger *slog.Logger) (routes, public map[string]http.Handler) {
	a.mcpChanged = changed
	allow := o.Config.Fetch.AllowPrivate
	m := &admin.MCPServers{
		Store: a.mcpStore, Sealer: a.sealer, Gateway: a.gateway,
		Rules: mcpremote.Rules{Slots: a.exec.Slots()},
		CheckHost: func(ctx context.Context, host string) error {
			return egress.CheckHost(ctx, allow, host)
		},
		Changed: changed, Logger: logger,
		Max:         perAccountCap(o.Config.MCPServers.MaxPerAccount, mcpremote.DefaultMaxPerAccount),
		CallbackURL: base + admin.CallbackPath,
	}
	return m.Routes(), m.CallbackRoutes()
}
