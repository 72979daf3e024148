package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"toolhost/config/duration"
	"toolhost/sandbox"
	"toolhost/server"
	"toolhost/tooldef"
	"toolhost/tools/fetchpage"
	"toolhost/tools/websearch"
)

// Config is the optional JSON file named by --config. It holds what flags do
// not; every field has a working default, so no file is needed to start.
// Unknown fields are rejected so a typo does not silently do nothing.
type Config struct {
	Hosted struct {
		// Label selects our tools in /v1 requests and names the extension
		// field (seed name: scirouter).
		Label string `json:"label"`
		// Enabled offers hosted tools on /v1 (default true); when false a
		// declaration is a 400 hosted_tools_disabled. See hosted.go.
		Enabled *bool `json:"enabled"`
		// MaxToolRounds is the default max_tool_rounds (8);
		// MaxToolRoundsLimit the largest a request may ask for (32).
		MaxToolRounds      int `json:"max_tool_rounds"`
		MaxToolRoundsLimit int `json:"max_tool_rounds_limit"`
		// MaxBodyBytes caps a /v1 request body (16 MiB); CountTokensMaxBytes
		// the text count_tokens estimates itself (4 MiB).
		MaxBodyBytes        int64 `json:"max_body_bytes"`
		CountTokensMaxBytes int64 `json:"count_tokens_max_bytes"`
		// IdempotencyMaxBytes and IdempotencyAccountBytes cap the stored
		// Idempotency-Key responses in all (256 MiB) and per account
		// (64 MiB).
		IdempotencyMaxBytes     int64 `json:"idempotency_max_bytes"`
		IdempotencyAccountBytes int64 `json:"idempotency_account_bytes"`
		// Routes are the upstream model APIs, tried in order.
		Routes []RouteConfig `json:"routes"`
	} `json:"hosted"`
	MCP struct {
		// Stateless: no MCP sessions; any replica answers any request; no
		// server-to-client notifications outside a request's own stream.
		Stateless bool `json:"stateless"`
		// JSONResponse answers with application/json instead of SSE.
		JSONResponse bool `json:"json_response"`
		// SessionTimeout closes idle sessions (default "30m"; "-1s" keeps
		// them until the client deletes them).
		SessionTimeout duration.Duration `json:"session_timeout"`
		// SessionsPerKey and Sessions cap open sessions per API key (256)
		// and in all (4096); MaxClientInfoBytes caps initialize's
		// clientInfo (8 KiB); MaxBodyBytes one POST body (4 MiB).
		SessionsPerKey     int   `json:"sessions_per_key"`
		Sessions           int   `json:"sessions"`
		MaxClientInfoBytes int   `json:"max_client_info_bytes"`
		MaxBodyBytes       int64 `json:"max_body_bytes"`
	} `json:"mcp"`
	Tools struct {
		DefaultTimeout duration.Duration `json:"default_timeout"`
		MaxResultBytes int               `json:"max_result_bytes"`
		// Slots are the caller slots a call may declare (MCP _meta
		// toolhost/slot, X-Toolhost-Slot, toolhost call --slot); default
		// narrator, director, verifier, memory.
		Slots []string `json:"slots"`
		// EnableUnsafeScriptHandler lets tool definitions carry script
		// handlers (also ENABLE_UNSAFE_SCRIPT_HANDLER=true in the
		// environment). Off by default, as the seed says.
		EnableUnsafeScriptHandler bool `json:"enable_unsafe_script_handler"`
		// Presets are the operator's tool definitions (source preset):
		// every account sees and may call them, nobody changes them over
		// the API. Each takes the fields of POST /tools/definitions
		// except source and source_id.
		Presets []tooldef.Input `json:"presets"`
	} `json:"tools"`
	// Search configures web_search: the ordered provider list and the cache.
	Search websearch.Config `json:"search"`
	// Fetch configures fetch_page (SSRF allow-list, limits, robots, cache).
	Fetch fetchpage.Config `json:"fetch"`

	// Journal configures the execution journal (journal.go in this folder).
	Journal JournalConfig `json:"journal"`

	// Keys configures API-key limits and metering (keys.go in this folder).
	Keys KeysConfig `json:"keys"`

	// Auth configures OAuth for remote MCP clients (oauth.go in this
	// folder, docs/oauth.md).
	Auth AuthConfig `json:"auth"`

	// Log configures the per-call log lines (logging.go in this folder).
	Log LogConfig `json:"log"`

	ShutdownTimeout duration.Duration `json:"shutdown_timeout"`
	// Server bounds connections: idle and header timeouts, the time to
	// send a request body, header size, open connections in all and per
	// client address (server.Limits; -1 turns a connection cap off); and
	// the process's soft memory limit.
	Server ServerConfig `json:"server"`
	// Sandbox holds run_code's limits (memory, output caps, concurrency,
	// queue, warm pools); see sandbox.Config.
	Sandbox sandbox.Config `json:"sandbox"`
}

// ServerConfig is the "server" section of the config file.
type ServerConfig struct {
	ReadHeaderTimeout   duration.Duration `json:"read_header_timeout"`
	IdleTimeout         duration.Duration `json:"idle_timeout"`
	BodyTimeout         duration.Duration `json:"body_timeout"`
	MaxHeaderBytes      int               `json:"max_header_bytes"`
	MaxConnections      int               `json:"max_connections"`
	MaxConnectionsPerIP int               `json:"max_connections_per_ip"`
	// MemoryLimitMiB is serve's soft memory limit (Go's GOMEMLIMIT): 0
	// takes the default (384 MiB), -1 sets none. See tuneGC.
	MemoryLimitMiB int64 `json:"memory_limit_mib"`
}

func (s ServerConfig) limits() server.Limits {
	return server.Limits{
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(), IdleTimeout: s.IdleTimeout.D(), BodyTimeout: s.BodyTimeout.D(),
		MaxHeaderBytes: s.MaxHeaderBytes, MaxConns: s.MaxConnections, MaxConnsPerIP: s.MaxConnectionsPerIP,
	}
}

func defaultConfig() Config {
	var c Config
	c.Hosted.Label = "toolhost"
	c.MCP.SessionTimeout = duration.Duration(30 * time.Minute)
	c.Tools.DefaultTimeout = duration.Duration(60 * time.Second)
	c.Tools.MaxResultBytes = 256 << 10
	c.ShutdownTimeout = duration.Duration(10 * time.Second)
	return c
}

func loadConfig(path string) (Config, error) {
	c := defaultConfig()
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, s := range c.Tools.Slots {
		if !slotPattern.MatchString(s) || seen[s] {
			return c, fmt.Errorf("config %s: tools.slots: %q is not a slot name (1 to 32 of a-z 0-9 _ -, starting with a letter, once each)", path, s)
		}
		seen[s] = true
	}
	return c, nil
}

var slotPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// overrides are the flags that override a key of the config file: given
// on the command line or as TOOLHOST_<FLAG>, the flag's value replaces the
// file's. One setting, two spellings — never two settings to reconcile.
var overrides = map[string]func(cfg *Config, value string) error{
	"redis": func(cfg *Config, v string) error { cfg.Keys.Redis = v; return nil },
	"stateless": func(cfg *Config, v string) (err error) {
		cfg.MCP.Stateless, err = strconv.ParseBool(v)
		return err
	},
}

// applyOverrides writes the override flags that were set into cfg.
func applyOverrides(fs *flag.FlagSet, cfg *Config) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if o, ok := overrides[f.Name]; ok && err == nil {
			if e := o(cfg, f.Value.String()); e != nil {
				err = fmt.Errorf("--%s: %w", f.Name, e)
			}
		}
	})
	return err
}

// envDefaults sets every setting (a flag in settings) of fs that the
// command line did not set from TOOLHOST_<FLAG> (upper case, dashes as
// underscores).
func envDefaults(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || !settings[f.Name] || err != nil {
			return
		}
		key := envName(f.Name)
		if v, ok := os.LookupEnv(key); ok {
			if e := fs.Set(f.Name, v); e != nil {
				if isBool(f) {
					err = fmt.Errorf("%s=%q is not a boolean; accepted values: %s", key, v, boolValues)
					return
				}
				err = fmt.Errorf("%s=%q: %w", key, v, e)
			}
		}
	})
	return err
}
