// Package config is toolhost's configuration: the JSON file named by
// --config, section by section (docs/configuration.md), its defaults in one
// place (Default) and its validation, done once when it is loaded (Load,
// Validate). Flags that override a key of the file write into the loaded
// Config (cmd/toolhost); nothing else reads the file.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/mcp"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/fetchpage"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/tooldef"
	"github.com/toolhost/toolhost/tools/websearch"
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
		// declaration is a 400 hosted_tools_disabled.
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
		// Budgets bound every hosted loop (a key's own may lower them).
		Budgets Budgets `json:"budgets"`
		// Routes are the upstream model APIs, tried in order.
		Routes []Route `json:"routes"`
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
		// MaxStoredResultBytes caps what the journal keeps of a result
		// cut to MaxResultBytes, for read_result (16 MiB).
		MaxStoredResultBytes int `json:"max_stored_result_bytes"`
		// Slots are the caller slots a call may declare (MCP _meta
		// toolhost/slot, X-Toolhost-Slot, toolhost call --slot); default
		// narrator, director, verifier, memory.
		Slots []string `json:"slots"`
		// EnableUnsafeScriptHandler lets tool definitions carry script
		// handlers (also ENABLE_UNSAFE_SCRIPT_HANDLER=true in the
		// environment). Off by default, as the seed says.
		EnableUnsafeScriptHandler bool `json:"enable_unsafe_script_handler"`
		// MaxDefinitionsPerAccount caps the tool definitions one account
		// keeps (256; -1: none): each is in every tool listing of the
		// account. Lowering it keeps what is stored; creates wait for
		// deletes.
		MaxDefinitionsPerAccount int `json:"max_definitions_per_account"`
		// Presets are the operator's tool definitions (source preset):
		// every account sees and may call them, nobody changes them over
		// the API. Each takes the fields of POST /tools/definitions
		// except source and source_id.
		Presets []tooldef.Input `json:"presets"`
		// ApprovalTTL is how long an approval waits for its decision, and
		// an approved one for its call (15m; docs/approvals.md).
		ApprovalTTL duration.Duration `json:"approval_ttl"`
		// RequireApproval is the approval policy (never, always,
		// side_effect) of tools by name: builtins and presets. A remote
		// tool's is its server's (mcp-servers overrides and defaults).
		RequireApproval map[string]string `json:"require_approval"`
	} `json:"tools"`
	// Jobs configures deferred calls (jobs.go).
	Jobs Jobs `json:"jobs"`
	// Search configures web_search: the ordered provider list and the cache.
	Search websearch.Config `json:"search"`
	// Fetch configures fetch_page (SSRF allow-list, limits, robots, cache).
	Fetch fetchpage.Config `json:"fetch"`

	// MCPServers configures the gateway to remote MCP servers
	// (internal/toolhost/gateway.go, docs/mcp-servers.md).
	MCPServers MCPServers `json:"mcp_servers"`

	// Journal configures the execution journal (internal/toolhost/store.go).
	Journal Journal `json:"journal"`

	// Keys configures API-key limits and metering (internal/toolhost/keys.go).
	Keys Keys `json:"keys"`

	// Auth configures OAuth for remote MCP clients (docs/oauth.md).
	Auth Auth `json:"auth"`

	// Log configures the per-call log lines.
	Log Log `json:"log"`

	ShutdownTimeout duration.Duration `json:"shutdown_timeout"`
	// Server bounds connections: idle and header timeouts, the time to
	// send a request body, header size, open connections in all and per
	// client address (server.Limits; -1 turns a connection cap off); and
	// the process's soft memory limit.
	Server Server `json:"server"`
	// Sandbox holds run_code's limits (memory, output caps, concurrency,
	// queue, warm pools); see sandbox.Config.
	Sandbox sandbox.Config `json:"sandbox"`
	// Console configures the operator console (docs/console.md).
	Console Console `json:"console"`
}

// Budgets is hosted.budgets: the bounds of one hosted /v1 loop
// (loop.Budgets). A key left out keeps its default (Default); 0 turns a
// bound off, except final_grace, whose "0s" is the default 30s.
type Budgets struct {
	ModelCalls  int               `json:"model_calls"`
	ToolCalls   int               `json:"tool_calls"`
	ResultBytes int64             `json:"result_bytes"`
	WallClock   duration.Duration `json:"wall_clock"`
	Cost        int64             `json:"cost"`
	FinalGrace  duration.Duration `json:"final_grace"`
}

// Loop is b as the loop takes it.
func (b Budgets) Loop() loop.Budgets {
	return loop.Budgets{ModelCalls: b.ModelCalls, ToolCalls: b.ToolCalls, ResultBytes: b.ResultBytes,
		WallClock: b.WallClock.D(), Cost: b.Cost, FinalGrace: b.FinalGrace.D()}
}

// Server is the "server" section of the config file.
type Server struct {
	ReadHeaderTimeout   duration.Duration `json:"read_header_timeout"`
	IdleTimeout         duration.Duration `json:"idle_timeout"`
	BodyTimeout         duration.Duration `json:"body_timeout"`
	MaxHeaderBytes      int               `json:"max_header_bytes"`
	MaxConnections      int               `json:"max_connections"`
	MaxConnectionsPerIP int               `json:"max_connections_per_ip"`
	// MemoryLimitMiB is serve's soft memory limit (Go's GOMEMLIMIT): 0
	// takes the default (384 MiB), -1 sets none.
	MemoryLimitMiB int64 `json:"memory_limit_mib"`
	// TrustedProxies are the load balancers (addresses or CIDR ranges)
	// whose X-Forwarded-For names the client for per-address limits, and
	// which max_connections_per_ip does not cap. Empty: none.
	TrustedProxies []string `json:"trusted_proxies"`
}

// Default is the configuration without a file: every default of every
// section, in this one place.
func Default() Config {
	var c Config
	// The values are the packages' own defaults, named once there: the
	// file and a package used without it behave the same.
	c.Hosted.Label = v1.DefaultLabel
	c.Hosted.Budgets = Budgets{ToolCalls: loop.DefaultToolCallBudget, ResultBytes: loop.DefaultResultBytesBudget,
		WallClock: duration.Duration(loop.DefaultWallClockBudget), FinalGrace: duration.Duration(loop.DefaultFinalGrace)}
	c.MCP.SessionTimeout = duration.Duration(mcp.DefaultSessionTimeout)
	c.Tools.DefaultTimeout = duration.Duration(tools.DefaultTimeout)
	c.Tools.MaxResultBytes = tools.DefaultMaxResultBytes
	c.Tools.MaxStoredResultBytes = tools.DefaultMaxStoredResultBytes
	c.Tools.ApprovalTTL = duration.Duration(tools.DefaultApprovalTTL)
	c.Jobs = defaultJobs()
	c.Tools.MaxDefinitionsPerAccount = tooldef.DefaultMaxPerAccount
	c.MCPServers.MaxPerAccount = mcpremote.DefaultMaxPerAccount
	c.ShutdownTimeout = duration.Duration(server.DefaultShutdownTimeout)
	// Set here, not left to fetchpage, because its 0 means "follow none":
	// a file without the key keeps the default, one with 0 asks for none.
	redirects := fetchpage.DefaultMaxRedirects
	c.Fetch.MaxRedirects = &redirects
	return c
}

// Load reads the file at path (none: Default) over the defaults and
// validates the result once (Validate); unknown fields are refused.
func Load(path string) (Config, error) {
	c := Default()
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
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks what decoding cannot: the caller slot names, the log
// sample, the journal's read-only open delay and the range of every number
// of every section (bounds.go): a negative size, count or duration that
// means nothing is an error naming its key, not a silent default. Load
// calls it; the sections with constructors of their own (fetch, search,
// sandbox, the routes) check the rest when the command builds them
// (toolhost check builds them all without starting).
func (c *Config) Validate() error {
	seen := map[string]bool{}
	for _, s := range c.Tools.Slots {
		if !slotPattern.MatchString(s) || seen[s] {
			return fmt.Errorf("tools.slots: %q is not a slot name (1 to 32 of a-z 0-9 _ -, starting with a letter, once each)", s)
		}
		seen[s] = true
	}
	for name, p := range c.Tools.RequireApproval {
		if _, err := approval.ParsePolicy(p); err != nil {
			return fmt.Errorf("tools.require_approval.%s: %w", name, err)
		}
	}
	if d := c.Tools.ApprovalTTL.D(); d < time.Second || d > 7*24*time.Hour {
		return fmt.Errorf("tools.approval_ttl %q: want from \"1s\" to \"168h\" (the default, 15m)", d.String())
	}
	if err := c.Jobs.validate(); err != nil {
		return err
	}
	if s := c.Log.Sample(); s < 0 || s > 1 {
		return fmt.Errorf("log.call_sample %g: want a fraction from 0 to 1", s)
	}
	if d := c.Journal.ReadOnlyOpenDelay; d != nil && (d.D() < 0 || d.D() > MaxReadOnlyOpenDelay) {
		return fmt.Errorf("journal.read_only_open_delay %q: want from \"0s\" (spool a read-only call's opened record before its tool runs) to %q",
			d.D().String(), MaxReadOnlyOpenDelay.String())
	}
	for _, p := range c.Server.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				return fmt.Errorf("server.trusted_proxies %q: want an IP address or a CIDR range such as 10.0.0.0/8", clipKey(p))
			}
		}
	}
	for i, r := range c.Hosted.Routes {
		if !slices.Contains(RouteProtocols, r.Protocol) {
			return fmt.Errorf("hosted.routes[%d].protocol %q: want \"openai\" (Chat Completions, the default), \"anthropic\" (Messages) or \"responses\" (the OpenAI Responses API)", i, clipKey(r.Protocol))
		}
	}
	if err := c.Console.validate(); err != nil {
		return err
	}
	return c.checkBounds()
}

// RouteProtocols are the values of hosted.routes[].protocol ("" is
// "openai").
var RouteProtocols = []string{"", "openai", "anthropic", "responses"}

// clipKey shortens a value echoed in an error.
func clipKey(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}

var slotPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Journal is the "journal" section of the config file.
type Journal struct {
	// IdempotencyRetention is how long an idempotency key is remembered
	// ("24h" by default). Within it, the same key and arguments get the
	// stored result and other arguments are refused; after it, the key is
	// free and a call with it runs as a new call. Expired keys are purged at
	// start-up and by the retention job.
	IdempotencyRetention duration.Duration `json:"idempotency_retention"`
	// Retention deletes finished records older than this (with their whole
	// results, the idempotency keys naming them and the /v1 round records
	// of the time): "0s", the default, keeps them for ever; else from 1 day
	// ("90d") and at least idempotency_retention. MaxRows keeps at most this
	// many records (0: no cap), the oldest finished going first. An hourly
	// job of serve prunes, one replica at a time.
	Retention duration.Duration `json:"retention"`
	MaxRows   int64             `json:"max_rows"`
	// MaxArgsBytes and MaxResultBytes bound what one record keeps of a
	// call's arguments (64 KiB) and result (256 KiB); more is cut and
	// marked "…[truncated by the journal: N bytes in all]".
	MaxArgsBytes   int `json:"max_args_bytes"`
	MaxResultBytes int `json:"max_result_bytes"`
	// SQLiteSynchronous is NORMAL (default: durable across a killed
	// process) or FULL (also across a power cut, slower).
	SQLiteSynchronous string `json:"sqlite_synchronous"`
	// MaxBatch caps how many journal writes share one transaction (256).
	MaxBatch int `json:"max_batch"`
	// CommitDelay is how long the journal writer waits for more writes
	// before a commit while other calls are in flight ("300us" by default,
	// "0s" never waits, at most MaxCommitDelay): fewer transactions for a
	// bounded wait per write.
	// It applies to writes that go to the store directly (spool off).
	CommitDelay *duration.Duration `json:"commit_delay"`
	// Spool is the journal's write-ahead spool under DATA/journal (on by
	// default): a call's opened record is durable there before its tool
	// runs (a read-only call's within 5 ms of its start, or with its
	// outcome when it ends sooner), and reaches the store while the call
	// runs or together with its outcome, which is in the store before the
	// call returns. false writes
	// every record to the store and waits for it (two commits per call).
	Spool *bool `json:"spool"`
	// ReadOnlyOpenDelay is how long the opened record of a read-only call
	// (side effect level none) may stay out of the spool while its tool
	// runs ("5ms" by default, at most MaxReadOnlyOpenDelay): a call that
	// ends sooner writes its opened record and its outcome in one spool
	// write, one still running then has its opened record spooled at that
	// moment. A crash loses the opened records of the read-only calls
	// younger than this (their tools changed nothing outside), nothing
	// else. "0s" spools every opened record before its tool runs. Only
	// with the spool on.
	ReadOnlyOpenDelay *duration.Duration `json:"read_only_open_delay"`
	// SpoolSync flushes the spool to the disk at every write (off by
	// default: the spool survives a killed process, like SQLite's NORMAL;
	// on, it also survives a power cut).
	SpoolSync bool `json:"spool_sync"`
	// ApplyInterval is how long a spooled write may wait before it is
	// written to the store ("200ms" by default); reads through the REST API
	// do not wait for it (they apply the spools first).
	ApplyInterval duration.Duration `json:"apply_interval"`
	// WaitForStore makes every finished call wait until its record is in
	// the store itself, not only in the spool (off by default): one commit
	// on every call's path, for deployments that want a returned call in
	// the database even if the server's disk is lost.
	WaitForStore bool `json:"wait_for_store"`
}

// DefaultCommitDelay is journal.commit_delay when the config says nothing.
const DefaultCommitDelay = 300 * time.Microsecond

// MaxReadOnlyOpenDelay bounds journal.read_only_open_delay. Longer saves
// nothing (a call that runs that long pays one more spool write, a few
// microseconds next to its run) and widens what a crash loses.
const MaxReadOnlyOpenDelay = time.Second

// OpenDelay is journal.read_only_open_delay as journal.Options takes it:
// the journal's default when the config says nothing, negative (spool at
// once) for "0s".
func (j Journal) OpenDelay() time.Duration {
	switch {
	case j.ReadOnlyOpenDelay == nil:
		return journal.DefaultReadOnlyOpenDelay
	case j.ReadOnlyOpenDelay.D() == 0:
		return -1
	}
	return j.ReadOnlyOpenDelay.D()
}

// Keys is the "keys" section of the config file.
type Keys struct {
	// Prices maps a tool to its price per paid unit (web_search: per
	// provider call, fetch_page: per PDF page, run_code: per started
	// second). Unlisted tools cost 1 per unit. The monthly cap is in these
	// priced units.
	Prices map[string]float64 `json:"prices"`
	// Redis holds the per-key limit state and web_search's cache shared by replicas
	// ("redis://127.0.0.1:6379/0"); --redis / TOOLHOST_REDIS override it. Empty:
	// the state is kept in process memory, right for one process only.
	Redis string `json:"redis"`
	// RedisPrefix namespaces the limit keys in Redis ("toolhost:").
	RedisPrefix string `json:"redis_prefix"`
}

// OAuth is the "auth.oauth" section of the config file
// (docs/oauth.md).
type OAuth struct {
	// Enabled turns OAuth on /mcp and /v1 on or off (default on; never in
	// --dev, where nothing is authenticated).
	Enabled *bool `json:"enabled"`
	// PublicURL is the base URL clients reach this server at
	// ("https://tools.example.com"); default http://<listen address>. The
	// resource is PublicURL + "/mcp"; the embedded issuer is PublicURL.
	PublicURL string `json:"public_url"`
	// Issuer, when set, is an external authorization server whose JWTs are
	// accepted instead of running the embedded one.
	Issuer string `json:"issuer"`
	// AccountClaim names the external token's claim holding the toolhost
	// account id (default "sub").
	AccountClaim string `json:"account_claim"`
	// AccessTokenTTL (default "1h") and RefreshTokenTTL (default "720h")
	// of the embedded server's tokens.
	AccessTokenTTL  duration.Duration `json:"access_token_ttl"`
	RefreshTokenTTL duration.Duration `json:"refresh_token_ttl"`
	// ClientMetadataPrivateHosts lets Client ID Metadata Documents be
	// fetched from private and loopback addresses (default: public only).
	ClientMetadataPrivateHosts bool `json:"client_metadata_private_hosts"`
	// ExtraResources are other resource URLs the embedded server may bind
	// tokens to (other toolhost servers using this one as their issuer).
	ExtraResources []string `json:"extra_resources"`
	// RegistrationsPerMinute caps dynamic client registrations per remote
	// address (an IPv6 /64) per minute (default 10);
	// RegistrationsPerMinuteTotal caps them from everybody (default 100).
	RegistrationsPerMinute      int `json:"registrations_per_minute"`
	RegistrationsPerMinuteTotal int `json:"registrations_per_minute_total"`
	// UnauthorizedClientTTL is how long a registered client that was never
	// issued a token stays unused before it is deleted (default "24h");
	// IdleClientTTL how long one none of whose tokens is still valid does
	// (default "2160h", 90 days). Both from "1h" (an authorization in
	// progress used its client within the last 10 minutes).
	UnauthorizedClientTTL duration.Duration `json:"unauthorized_client_ttl"`
	IdleClientTTL         duration.Duration `json:"idle_client_ttl"`
}

// Auth is the "auth" section of the config file.
type Auth struct {
	OAuth OAuth `json:"oauth"`
}

// Route is one upstream model API in the config file
// (hosted.routes[]).
type Route struct {
	Name string `json:"name"`
	// Protocol is the upstream's wire format: "openai" (Chat Completions,
	// the default), "anthropic" (the Messages API) or "responses" (the
	// OpenAI Responses API).
	Protocol string `json:"protocol"`
	// BaseURL is the API root ("https://…/v1"); /chat/completions,
	// /messages or /responses is appended.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the API key; the key
	// itself never goes into the file.
	APIKeyEnv string `json:"api_key_env"`
	// Models are model names or patterns ("gpt-4o*"); empty serves all.
	Models        []string `json:"models"`
	SupportsTools bool     `json:"supports_tools"`
	// Prices: quota units per million tokens, by model name or pattern
	// ("*" = default).
	Prices         map[string]loop.Price `json:"prices"`
	HeaderTimeout  duration.Duration     `json:"header_timeout"`
	IdleTimeout    duration.Duration     `json:"idle_timeout"`
	RequestTimeout duration.Duration     `json:"request_timeout"`
}

// Log is the "log" section of the config file.
type Log struct {
	// CallSample is the fraction of successful tool calls that get a log
	// line (tool, status, duration, session, execution id) at info level:
	// 1 (the default) logs every call, 0.01 one in a hundred, 0 none. Calls
	// that fail, are refused or time out are always logged.
	CallSample *float64 `json:"call_sample"`
}

// Sample is the effective CallSample.
func (c Log) Sample() float64 {
	if c.CallSample == nil {
		return 1
	}
	return *c.CallSample
}

// MCPServers is the "mcp_servers" section of the config file: the
// gateway to the accounts' remote MCP servers (docs/mcp-servers.md). The
// server key that seals their secrets is TOOLHOST_SECRET_KEY (and
// TOOLHOST_SECRET_KEY_PREVIOUS while rotating), never the config file.
type MCPServers struct {
	// TTL is how long a tools listing is current without list_changed
	// ("5m").
	TTL duration.Duration `json:"ttl"`
	// ProbeTimeout bounds connecting and listing for the catalog ("3s").
	ProbeTimeout duration.Duration `json:"probe_timeout"`
	// MaxConcurrent caps one account's calls in flight to one server (8).
	MaxConcurrent int `json:"max_concurrent"`
	// MaxResultBytes caps one answer of a server (4 MiB).
	MaxResultBytes int64 `json:"max_result_bytes"`
	// MaxPerAccount caps the servers one account registers (16; -1:
	// none). Lowering it keeps what is registered.
	MaxPerAccount int `json:"max_per_account"`
}
