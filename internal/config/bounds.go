package config

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/fetchpage"
)

// MinMemoryLimitMiB is the smallest server.memory_limit_mib above 0: a
// lower soft limit keeps the collector running with the idle server's heap
// alone (serve refuses it too).
const MinMemoryLimitMiB = 128

// MaxSandboxMemoryMiB bounds sandbox.memory_limit_mib: a run's memory is
// one WebAssembly (wasm32) linear memory, at most 65536 pages of 64 KiB.
const MaxSandboxMemoryMiB = 4096

// MaxCommitDelay bounds journal.commit_delay: a finished call waits for
// it while others are in flight, and a commit takes milliseconds, so a
// longer wait only holds calls back.
const MaxCommitDelay = time.Second

// MaxApplyInterval bounds journal.apply_interval: the spool already makes
// a record durable and a batch fills far sooner under load, so a longer
// wait saves no commits; it only lets the writes waiting for the store
// pile up towards the spool's cap (10000, then calls wait) and keeps a
// killed replica's calls out of the store until it starts again.
const MaxApplyInterval = time.Minute

// MaxCacheTTL bounds the cache lifetimes (fetch.cache_ttl,
// search.cache.ttl, mcp_servers.ttl, fetch.robots_ttl): a day-old page,
// search answer or tool listing is stale for what they are used for, and
// robots.txt is not to be cached longer than 24 hours (RFC 9309 §2.4).
const MaxCacheTTL = 24 * time.Hour

// MaxAccessTokenTTL bounds auth.oauth.access_token_ttl: an access token
// is a bearer JWT other resource servers may accept without asking us,
// so it stays short (OAuth 2.1 §7.1); refreshing is what long sessions do.
const MaxAccessTokenTTL = 24 * time.Hour

// MaxRefreshTokenTTL bounds auth.oauth.refresh_token_ttl (a year): a
// client that has not refreshed for that long signs in again.
const MaxRefreshTokenTTL = 365 * 24 * time.Hour

// DefaultAccessTokenTTL and DefaultRefreshTokenTTL are the lifetimes a
// file that sets none gets: the authorization server's defaults
// (oauth.DefaultAccessTokenTTL, oauth.DefaultRefreshTokenTTL; config does
// not import it), which checkTokenTTLs fills in.
const (
	DefaultAccessTokenTTL  = time.Hour
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
)

// MinRetention and MaxRetention bound journal.retention: a window shorter
// than a day prunes the records a caller still reads; ten years is "keep".
const (
	MinRetention = 24 * time.Hour
	MaxRetention = 3650 * 24 * time.Hour
)

// MaxIdempotencyRetention bounds journal.idempotency_retention (30 days):
// a retry comes within minutes or hours; keys kept longer only hold rows.
const MaxIdempotencyRetention = 30 * 24 * time.Hour

// MaxUnauthorizedClientTTL and MaxIdleClientTTL bound how long an unused
// OAuth client is kept (auth.oauth.unauthorized_client_ttl,
// auth.oauth.idle_client_ttl): registration is open to anyone at
// registrations_per_minute_total, so the table holds at most that many
// a minute for this long (30 days at 100 a minute: 4.3 million rows).
// MinClientTTL, the shortest of both, is oauth.MinClientTTL (config does
// not import the authorization server): well above the 10 minutes an
// authorization request lives, so a client is never expired under one.
const (
	MaxUnauthorizedClientTTL = 30 * 24 * time.Hour
	MaxIdleClientTTL         = 365 * 24 * time.Hour
	MinClientTTL             = time.Hour
)

// The largest budgets hosted.budgets accepts: past them a bound bounds
// nothing a request could reach (a thousand model calls, a hundred
// thousand tool calls, a GiB of results, a day), and a number that large
// is more likely a typo than a wish. MaxCostBudget is the largest integer
// a JSON number carries exactly.
const (
	MaxModelCallBudget   = 1000
	MaxToolCallBudget    = 100_000
	MaxResultBytesBudget = 1 << 30
	MaxCostBudget        = 1 << 53
	MaxWallClockBudget   = 24 * time.Hour
	MaxFinalGrace        = 10 * time.Minute
)

// budget is a bound of hosted.budgets: 0 turns it off.
func budget[T int | int64](key string, v T, hi int64) bound {
	return bound{key: key, v: int64(v), max: hi, want: fmt.Sprintf("0 (no bound) to %d", hi)}
}

// maxMiB is the largest count of MiB that still fits in an int64 of bytes
// (the sections shift MiB by 20 bits).
const maxMiB = math.MaxInt64 >> 20

// bound is the accepted range of one numeric key of the file. Every number
// the file holds has one: a value out of it is refused by Validate with the
// key's full path and the range, instead of silently taking the default or
// being used as it is.
type bound struct {
	key      string
	v        int64
	min, max int64
	dur      bool   // v is a duration in nanoseconds
	want     string // the accepted range, in words
}

func (b bound) err() error {
	if b.v >= b.min && b.v <= b.max {
		return nil
	}
	if b.dur {
		return fmt.Errorf("%s %q: want %s", b.key, time.Duration(b.v).String(), b.want)
	}
	return fmt.Errorf("%s %d: want %s", b.key, b.v, b.want)
}

// count is a size or a count whose 0 takes the default (zero says what it
// is) and which has no meaning below 0.
func count[T int | int64](key string, v T, zero string) bound {
	return bound{key: key, v: int64(v), max: math.MaxInt64, want: fmt.Sprintf("0 (%s) or more", zero)}
}

// capOrNone is a cap whose -1 turns it off and whose 0 takes the default.
func capOrNone(key string, v int, def string) bound {
	return bound{key: key, v: int64(v), min: -1, max: math.MaxInt64, want: fmt.Sprintf("-1 (no cap), 0 (the default, %s) or more", def)}
}

// upTo is a count whose 0 takes the default and which cannot exceed hi.
func upTo[T int | int64](key string, v T, hi int64, def string) bound {
	return bound{key: key, v: int64(v), max: hi, want: fmt.Sprintf("0 (the default, %s) to %d", def, hi)}
}

// wait is a duration whose "0s" means zero says, with no meaning below it.
func wait(key string, d duration.Duration, zero string) bound {
	return bound{key: key, v: int64(d), max: math.MaxInt64, dur: true, want: fmt.Sprintf("\"0s\" (%s) or longer", zero)}
}

// waitUpTo is a duration whose "0s" means zero says, from 0 to hi.
func waitUpTo(key string, d duration.Duration, hi time.Duration, zero string) bound {
	return bound{key: key, v: int64(d), max: int64(hi), dur: true, want: fmt.Sprintf("from \"0s\" (%s) to %q", zero, hi.String())}
}

// clientTTL is 0 (the default) or a duration from MinClientTTL to hi.
func clientTTL(key string, d duration.Duration, hi time.Duration, def string) bound {
	b := bound{key: key, v: int64(d), max: int64(hi), dur: true,
		want: fmt.Sprintf("\"0s\" (the default, %s) or from %q to %q", def, MinClientTTL.String(), hi.String())}
	if d != 0 {
		b.min = int64(MinClientTTL)
	}
	return b
}

// checkBounds refuses the first number out of its range, in the file's
// order of sections.
func (c *Config) checkBounds() error {
	for _, bs := range [][]bound{c.hostedBounds(), c.mcpToolsBounds(), c.journalBounds(), c.serverBounds(),
		c.fetchBounds(), c.searchBounds(), c.sandboxBounds()} {
		for _, b := range bs {
			if err := b.err(); err != nil {
				return err
			}
		}
	}
	if err := c.checkToolRounds(); err != nil {
		return err
	}
	if err := c.checkShares(); err != nil {
		return err
	}
	if err := c.checkTokenTTLs(); err != nil {
		return err
	}
	return c.checkPrices()
}

// checkToolRounds refuses a default max_tool_rounds above the largest a
// request may ask for: requests that set none would run more rounds than
// any request may set.
func (c *Config) checkToolRounds() error {
	def, limit := c.Hosted.MaxToolRounds, c.Hosted.MaxToolRoundsLimit
	if def == 0 {
		def = 8
	}
	if limit == 0 {
		limit = 32
	}
	if def > limit {
		return fmt.Errorf("hosted.max_tool_rounds %d: want at most hosted.max_tool_rounds_limit (%d)", def, limit)
	}
	return nil
}

// checkShares refuses a per-key or per-account cap above the cap it is a
// share of. Such a file asks for two things at once: the share is never
// reached (one key could hold every MCP session, one account every run
// slot), so what the operator wrote is not what runs.
func (c *Config) checkShares() error {
	perKey, perKeyNote := c.MCP.SessionsPerKey, ""
	if perKey == 0 {
		perKey, perKeyNote = mcp.DefaultSessionsPerKey, " (the default)"
	}
	total, totalNote := c.MCP.Sessions, ""
	if total == 0 {
		total, totalNote = mcp.DefaultSessions, ", the default"
	}
	if perKey > total {
		return fmt.Errorf("mcp.sessions_per_key %d%s: want at most mcp.sessions (%d%s): one API key could hold every session; lower mcp.sessions_per_key or raise mcp.sessions",
			perKey, perKeyNote, total, totalNote)
	}
	// With concurrency 0 the slots are this machine's CPUs, which toolhost
	// check on another machine cannot know: the sandbox lowers the share
	// to them then (docs/operations.md).
	s := c.Sandbox
	if s.Concurrency > 0 && s.PerAccountConcurrency > s.Concurrency {
		return fmt.Errorf("sandbox.per_account_concurrency %d: want at most sandbox.concurrency (%d): one account's share of the run slots cannot exceed the slots; lower sandbox.per_account_concurrency or raise sandbox.concurrency",
			s.PerAccountConcurrency, s.Concurrency)
	}
	return nil
}

// checkTokenTTLs refuses a refresh token that expires before the access
// token it renews: the client could not refresh once its access token
// expired and would sign in again every time, which is not what an
// operator setting a refresh lifetime asks for. Checked with OAuth off or
// an external issuer too, like the shares: the file says it either way.
func (c *Config) checkTokenTTLs() error {
	o := c.Auth.OAuth
	access, accessNote := time.Duration(o.AccessTokenTTL), ""
	if access == 0 {
		access, accessNote = DefaultAccessTokenTTL, ", the default"
	}
	refresh := time.Duration(o.RefreshTokenTTL)
	if refresh == 0 {
		refresh = DefaultRefreshTokenTTL
	}
	if refresh < access {
		return fmt.Errorf("auth.oauth.refresh_token_ttl %q: want at least auth.oauth.access_token_ttl (%q%s): a client could not refresh once its access token expired; raise auth.oauth.refresh_token_ttl or lower auth.oauth.access_token_ttl",
			refresh.String(), access.String(), accessNote)
	}
	return nil
}

func (c *Config) hostedBounds() []bound {
	h := c.Hosted
	bs := []bound{
		count("hosted.max_tool_rounds", h.MaxToolRounds, "the default, 8"),
		count("hosted.max_tool_rounds_limit", h.MaxToolRoundsLimit, "the default, 32"),
		count("hosted.max_body_bytes", h.MaxBodyBytes, "the default, 16 MiB"),
		count("hosted.count_tokens_max_bytes", h.CountTokensMaxBytes, "the default, 4 MiB"),
		count("hosted.idempotency_max_bytes", h.IdempotencyMaxBytes, "the default, 256 MiB"),
		count("hosted.idempotency_account_bytes", h.IdempotencyAccountBytes, "the default, 64 MiB"),
		budget("hosted.budgets.model_calls", h.Budgets.ModelCalls, MaxModelCallBudget),
		budget("hosted.budgets.tool_calls", h.Budgets.ToolCalls, MaxToolCallBudget),
		budget("hosted.budgets.result_bytes", h.Budgets.ResultBytes, MaxResultBytesBudget),
		budget("hosted.budgets.cost", h.Budgets.Cost, MaxCostBudget),
		{key: "hosted.budgets.wall_clock", v: int64(h.Budgets.WallClock), max: int64(MaxWallClockBudget), dur: true,
			want: fmt.Sprintf("from \"0s\" (no bound) to %q", MaxWallClockBudget.String())},
		waitUpTo("hosted.budgets.final_grace", h.Budgets.FinalGrace, MaxFinalGrace, "the default, 30s"),
	}
	for i, r := range h.Routes {
		p := fmt.Sprintf("hosted.routes[%d].", i)
		bs = append(bs, wait(p+"header_timeout", r.HeaderTimeout, "the default, 60s"),
			wait(p+"idle_timeout", r.IdleTimeout, "the default, 120s"),
			wait(p+"request_timeout", r.RequestTimeout, "the default, 10m"))
	}
	return bs
}

func (c *Config) mcpToolsBounds() []bound {
	m, t, s, o := c.MCP, c.Tools, c.MCPServers, c.Auth.OAuth
	return []bound{
		// mcp.session_timeout: any negative duration keeps sessions
		// (documented as "-1s"), so it has no bound.
		count("mcp.sessions_per_key", m.SessionsPerKey, "the default, 256"),
		count("mcp.sessions", m.Sessions, "the default, 4096"),
		// initialize's body cap is clientInfo's plus 16 KiB.
		upTo("mcp.max_client_info_bytes", m.MaxClientInfoBytes, math.MaxInt32, "8 KiB"),
		count("mcp.max_body_bytes", m.MaxBodyBytes, "the default, 4 MiB"),
		// A call that asks for no deadline gets this one, unclamped: it
		// must not exceed the longest a call may ask for.
		{key: "tools.default_timeout", v: int64(t.DefaultTimeout), max: int64(tools.DefaultMaxTimeout), dur: true,
			want: fmt.Sprintf("from \"0s\" (the default, 60s) to %q", tools.DefaultMaxTimeout.String())},
		count("tools.max_result_bytes", t.MaxResultBytes, "the default, 256 KiB"),
		count("tools.max_stored_result_bytes", t.MaxStoredResultBytes, "the default, 16 MiB"),
		capOrNone("tools.max_definitions_per_account", t.MaxDefinitionsPerAccount, "256"),
		waitUpTo("mcp_servers.ttl", s.TTL, MaxCacheTTL, "the default, 5m"),
		wait("mcp_servers.probe_timeout", s.ProbeTimeout, "the default, 3s"),
		count("mcp_servers.max_concurrent", s.MaxConcurrent, "the default, 8"),
		count("mcp_servers.max_result_bytes", s.MaxResultBytes, "the default, 4 MiB"),
		capOrNone("mcp_servers.max_per_account", s.MaxPerAccount, "16"),
		waitUpTo("auth.oauth.access_token_ttl", o.AccessTokenTTL, MaxAccessTokenTTL, "the default, 1h"),
		waitUpTo("auth.oauth.refresh_token_ttl", o.RefreshTokenTTL, MaxRefreshTokenTTL, "the default, 720h"),
		count("auth.oauth.registrations_per_minute", o.RegistrationsPerMinute, "the default, 10"),
		count("auth.oauth.registrations_per_minute_total", o.RegistrationsPerMinuteTotal, "the default, 100"),
		clientTTL("auth.oauth.unauthorized_client_ttl", o.UnauthorizedClientTTL, MaxUnauthorizedClientTTL, "24h"),
		clientTTL("auth.oauth.idle_client_ttl", o.IdleClientTTL, MaxIdleClientTTL, "2160h"),
	}
}

func (c *Config) journalBounds() []bound {
	j := c.Journal
	bs := []bound{
		waitUpTo("journal.idempotency_retention", j.IdempotencyRetention, MaxIdempotencyRetention, "the default, 24h"),
		count("journal.max_args_bytes", j.MaxArgsBytes, "the default, 64 KiB"),
		count("journal.max_result_bytes", j.MaxResultBytes, "the default, 256 KiB"),
		count("journal.max_batch", j.MaxBatch, "the default, 256"),
		waitUpTo("journal.apply_interval", j.ApplyInterval, MaxApplyInterval, "the default, 200ms"),
	}
	ret := bound{key: "journal.retention", v: int64(j.Retention), max: int64(MaxRetention), dur: true,
		want: fmt.Sprintf("\"0s\" (the default: records are kept) or from %q (and at least journal.idempotency_retention) to %q", MinRetention.String(), MaxRetention.String())}
	if j.Retention != 0 {
		ret.min = int64(max(MinRetention, j.IdempotencyRetention.D()))
	}
	bs = append(bs, ret, bound{key: "journal.max_rows", v: j.MaxRows, max: 1 << 50,
		want: "0 (the default: no cap) or a number of records"})
	if j.CommitDelay != nil {
		bs = append(bs, bound{key: "journal.commit_delay", v: int64(*j.CommitDelay), max: int64(MaxCommitDelay), dur: true,
			want: fmt.Sprintf("from \"0s\" (never waits) to %q", MaxCommitDelay.String())})
	}
	return bs
}

func (c *Config) serverBounds() []bound {
	s := c.Server
	return []bound{
		wait("shutdown_timeout", c.ShutdownTimeout, "the default, 10s"),
		wait("server.read_header_timeout", s.ReadHeaderTimeout, "the default, 10s"),
		wait("server.idle_timeout", s.IdleTimeout, "the default, 120s"),
		wait("server.body_timeout", s.BodyTimeout, "the default, 60s"),
		count("server.max_header_bytes", s.MaxHeaderBytes, "the default, 64 KiB"),
		capOrNone("server.max_connections", s.MaxConnections, "4096"),
		capOrNone("server.max_connections_per_ip", s.MaxConnectionsPerIP, "256"),
		memoryLimit(s.MemoryLimitMiB),
	}
}

// memoryLimit is server.memory_limit_mib's range: -1 (none), 0 (the
// default) or MinMemoryLimitMiB up to what fits in bytes.
func memoryLimit(v int64) bound {
	b := bound{key: "server.memory_limit_mib", v: v, min: -1, max: maxMiB,
		want: fmt.Sprintf("-1 (no limit), 0 (the default, 384) or %d to %d", MinMemoryLimitMiB, int64(maxMiB))}
	if v > 0 && v < MinMemoryLimitMiB {
		b.min = MinMemoryLimitMiB
	}
	return b
}

func (c *Config) fetchBounds() []bound {
	f := c.Fetch
	redirects := int64(fetchpage.DefaultMaxRedirects) // null in the file: the default
	if f.MaxRedirects != nil {
		redirects = int64(*f.MaxRedirects)
	}
	return []bound{
		// 0 follows none (Default sets 5, so a file without the key keeps it).
		{key: "fetch.max_redirects", v: redirects, max: math.MaxInt64, want: "0 (follow none) or more (the default is 5)"},
		wait("fetch.connect_timeout", f.ConnectTimeout, "the default, 10s"),
		wait("fetch.timeout", f.Timeout, "the default, 30s"),
		count("fetch.max_html_bytes", f.MaxHTMLBytes, "the default, 10 MiB"),
		count("fetch.max_extract_text_bytes", f.MaxExtractTextBytes, "the default, 512 KiB"),
		count("fetch.max_pdf_bytes", f.MaxPDFBytes, "the default, 50 MiB"),
		count("fetch.max_pdf_pages", f.MaxPDFPages, "the default, 300"),
		count("fetch.per_host_concurrency", f.PerHostConcurrency, "the default, 4"),
		count("fetch.max_in_flight", f.MaxInFlight, "the default, 16"),
		count("fetch.body_budget_bytes", f.BodyBudgetBytes, "the default, 40 MiB"),
		wait("fetch.queue_timeout", f.QueueTimeout, "the default, 10s"),
		// fetch.cache_ttl: negative turns the cache off, so it has no lower bound.
		{key: "fetch.cache_ttl", v: int64(f.CacheTTL), min: math.MinInt64, max: int64(MaxCacheTTL), dur: true,
			want: fmt.Sprintf("a negative duration (no page cache), \"0s\" (the default, 5m) or up to %q", MaxCacheTTL.String())},
		count("fetch.cache_max_bytes", f.CacheMaxBytes, "the default, 32 MiB"),
		waitUpTo("fetch.robots_ttl", f.RobotsTTL, MaxCacheTTL, "the default, 1h"),
	}
}

func (c *Config) searchBounds() []bound {
	s := c.Search
	// search.hedge_delay: negative turns hedging off, so it has no bound.
	bs := []bound{
		wait("search.deadline", s.Deadline, "the default, 10s"),
		waitUpTo("search.cache.ttl", s.Cache.TTL, MaxCacheTTL, "the default, 10m"),
		{key: "search.cache.max_entries", v: int64(s.Cache.MaxEntries), min: -1, max: math.MaxInt64,
			want: "-1 (no cache), 0 (the default, 1000) or more"},
	}
	for i, p := range s.Providers {
		bs = append(bs, wait(fmt.Sprintf("search.providers[%d].timeout", i), p.Timeout, "the default, 8s"))
	}
	return bs
}

func (c *Config) sandboxBounds() []bound {
	s := c.Sandbox
	pool := func(key string, v int) bound {
		return bound{key: key, v: int64(v), min: -1, max: math.MaxInt32,
			want: fmt.Sprintf("-1 (no pool), 0 (memory and demand decide) to %d", math.MaxInt32)}
	}
	return []bound{
		upTo("sandbox.memory_limit_mib", s.MemoryLimitMiB, MaxSandboxMemoryMiB, "256"),
		count("sandbox.stdout_limit", s.StdoutLimit, "the default, 64 KiB"),
		count("sandbox.stderr_limit", s.StderrLimit, "the default, 64 KiB"),
		upTo("sandbox.concurrency", s.Concurrency, math.MaxInt32, "the number of CPUs"),
		upTo("sandbox.queue_length", s.QueueLength, math.MaxInt32, "4 × concurrency"),
		count("sandbox.per_account_concurrency", s.PerAccountConcurrency, "the default, half the slots"),
		upTo("sandbox.pool_memory_mib", s.PoolMemoryMiB, maxMiB, "64"),
		pool("sandbox.python_pool", s.PythonPool),
		pool("sandbox.javascript_pool", s.JavaScriptPool),
		upTo("sandbox.workdir_limit_mib", s.WorkDirLimitMiB, maxMiB, "64"),
		count("sandbox.out_files_max", s.OutFilesMax, "the default, 20"),
		count("sandbox.out_file_bytes", s.OutFileBytes, "the default, 64 KiB"),
		count("sandbox.out_total_bytes", s.OutTotalBytes, "the default, 128 KiB"),
		upTo("sandbox.js_max_stack_kib", s.JSMaxStackKiB, math.MaxInt32>>10, "512"),
	}
}

// checkPrices refuses a negative price: it would give quota back.
func (c *Config) checkPrices() error {
	for _, tool := range sortedKeys(c.Keys.Prices) {
		if p := c.Keys.Prices[tool]; p < 0 {
			return fmt.Errorf("keys.prices[%q] %g: want 0 or more (units per paid unit)", tool, p)
		}
	}
	for i, r := range c.Hosted.Routes {
		for _, model := range sortedKeys(r.Prices) {
			p := r.Prices[model]
			if p.Input < 0 || p.CachedInput < 0 || p.Output < 0 {
				return fmt.Errorf("hosted.routes[%d].prices[%q] {input %g, cached_input %g, output %g}: want 0 or more for each (units per million tokens)",
					i, model, p.Input, p.CachedInput, p.Output)
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
