package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"toolhost/mcpgateway"
	"toolhost/mcpremote"
	"toolhost/server/admin"
	"toolhost/tools"
	"toolhost/tools/fetchpage"
)

// MCPServersConfig is the "mcp_servers" section of the config file: the
// gateway to the accounts' remote MCP servers (docs/mcp-servers.md). The
// server key that seals their secrets is TOOLHOST_SECRET_KEY (and
// TOOLHOST_SECRET_KEY_PREVIOUS while rotating), never the config file.
type MCPServersConfig struct {
	// TTL is how long a tools listing is current without list_changed
	// ("5m").
	TTL Duration `json:"ttl"`
	// ProbeTimeout bounds connecting and listing for the catalog ("3s").
	ProbeTimeout Duration `json:"probe_timeout"`
	// MaxConcurrent caps one account's calls in flight to one server (8).
	MaxConcurrent int `json:"max_concurrent"`
	// MaxResultBytes caps one answer of a server (4 MiB).
	MaxResultBytes int64 `json:"max_result_bytes"`
}

// secretSealer reads TOOLHOST_SECRET_KEY and TOOLHOST_SECRET_KEY_PREVIOUS
// (comma-separated). Without a key, servers without secrets still work.
func secretSealer() (*mcpremote.Sealer, error) {
	var cur []byte
	if s := os.Getenv("TOOLHOST_SECRET_KEY"); s != "" {
		k, err := mcpremote.ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("TOOLHOST_SECRET_KEY: %w", err)
		}
		cur = k
	}
	var prev [][]byte
	for _, s := range strings.Split(os.Getenv("TOOLHOST_SECRET_KEY_PREVIOUS"), ",") {
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

// setupGateway builds the gateway once the store is open; its Changed
// reaches the MCP face through c.mcpChanged, set when that exists.
func setupGateway(c *common, logger *slog.Logger) error {
	if c.mcpServers == nil {
		return nil
	}
	sealer, err := secretSealer()
	if err != nil {
		return err
	}
	dial, err := fetchpage.DialContext(c.cfg.Fetch.AllowPrivate, 10*time.Second)
	if err != nil {
		return err
	}
	cfg := c.cfg.MCPServers
	c.sealer = sealer
	c.gateway = mcpgateway.New(mcpgateway.Options{
		Store: c.mcpServers, Sealer: sealer, Dial: dial,
		TTL: cfg.TTL.D(), ProbeTimeout: cfg.ProbeTimeout.D(), MaxConcurrent: cfg.MaxConcurrent, MaxResultBytes: cfg.MaxResultBytes,
		Changed: func(account string) {
			if c.mcpChanged != nil {
				c.mcpChanged(account)
			}
		},
		Logger: logger, Version: version,
	})
	return nil
}

// remoteTools is the executor's view of the gateway (nil without one).
func remoteTools(c *common) tools.RemoteTools {
	if c.gateway == nil {
		return nil
	}
	return c.gateway
}

// withMCPServerRoutes adds /mcp-servers.
func withMCPServerRoutes(routes map[string]http.Handler, c *common, exec *tools.Executor, changed func(account string), logger *slog.Logger) map[string]http.Handler {
	if c.gateway == nil {
		return routes
	}
	c.mcpChanged = changed
	allow := c.cfg.Fetch.AllowPrivate
	m := &admin.MCPServers{
		Store: c.mcpServers, Sealer: c.sealer, Gateway: c.gateway,
		Rules: mcpremote.Rules{Slots: exec.Slots()},
		CheckHost: func(ctx context.Context, host string) error {
			return fetchpage.CheckHost(ctx, allow, host)
		},
		Changed: changed, Account: accountOf, Logger: logger,
	}
	for pattern, h := range m.Routes() {
		routes[pattern] = h
	}
	return routes
}
