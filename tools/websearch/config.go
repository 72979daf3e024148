package websearch

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
)

// Provider kinds accepted in the config.
const (
	KindSearXNG = "searxng"
	KindBrave   = "brave"
	KindTavily  = "tavily"
	KindHTML    = "html" // the DuckDuckGo HTML results page; alias "duckduckgo"
)

// Default base URLs per kind. SearXNG has none: it is self-hosted.
const (
	defaultBraveURL  = "https://api.search.brave.com"
	defaultTavilyURL = "https://api.tavily.com"
	defaultHTMLURL   = "https://html.duckduckgo.com"
)

// Config is the "search" section of the toolhost config file.
type Config struct {
	// Providers are tried in this order. Absent (null) means the embedded
	// default, the no-key HTML provider; an explicit empty list turns search
	// off (every call fails with no_provider_configured).
	Providers []ProviderConfig `json:"providers"`
	Cache     CacheConfig      `json:"cache"`
	// UserAgent sent to every engine; empty means "toolhost-websearch/1".
	UserAgent string `json:"user_agent,omitempty"`
	// Deadline bounds one whole search, every provider included; default
	// 10s. See hedge.go.
	Deadline duration.Duration `json:"deadline,omitempty"`
	// HedgeDelay is how long the current provider may take before the next
	// one is asked too (the first good answer wins); default 1.5s, or the
	// provider's recent p90 once it has answered often enough. Negative
	// turns hedging off: the next provider is asked only after a failure.
	HedgeDelay duration.Duration `json:"hedge_delay,omitempty"`
}

// ProviderConfig configures one engine.
type ProviderConfig struct {
	// Kind is searxng, brave, tavily or html (alias duckduckgo).
	Kind string `json:"kind"`
	// Name labels the provider in results and errors; default the kind.
	Name string `json:"name,omitempty"`
	// BaseURL of the engine: scheme, host and optional path prefix. Required
	// for searxng; the public endpoint by default for the others.
	BaseURL string `json:"base_url,omitempty"`
	// APIKey for brave and tavily. Prefer APIKeyEnv, which keeps the key out
	// of the config file.
	APIKey string `json:"api_key,omitempty"`
	// APIKeyEnv names the environment variable holding the key. The binary
	// resolves it (see ResolveKeys); this package never reads the environment.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Timeout of one request to this engine; default 8s.
	Timeout duration.Duration `json:"timeout,omitempty"`
}

// CacheConfig bounds the query cache.
type CacheConfig struct {
	// TTL of a cached answer; default (and when "0s") 10m. To disable
	// caching set MaxEntries to -1.
	TTL duration.Duration `json:"ttl,omitempty"`
	// MaxEntries bounds the cache (memory and disk each); default 1000;
	// -1 disables caching.
	MaxEntries int `json:"max_entries,omitempty"`
	// Dir persists answers on disk so separate processes (two `toolhost
	// call` runs, a restarted server) share them. The binary sets it to
	// <data>/websearch-cache unless MemoryOnly is set.
	Dir string `json:"dir,omitempty"`
	// MemoryOnly keeps the cache in the process only.
	MemoryOnly bool `json:"memory_only,omitempty"`
}

const (
	defaultTimeout    = 8 * time.Second
	defaultDeadline   = 10 * time.Second
	defaultHedgeDelay = 1500 * time.Millisecond
	defaultCacheTTL   = 10 * time.Minute
	defaultCacheSize  = 1000
	defaultUserAgent  = "toolhost-websearch/1"
	maxProviderBody   = 4 << 20
	maxRetryAfter     = 15 * time.Minute
	defaultRateLimit  = 30 * time.Second
	minFailureBackoff = 2 * time.Second
	maxFailureBackoff = time.Minute
)

// ResolveKeys fills APIKey from APIKeyEnv through lookup (os.LookupEnv in the
// binary). A variable that is unset or empty leaves the key empty; New then
// drops that provider with a warning instead of failing the whole server.
func (c *Config) ResolveKeys(lookup func(string) (string, bool)) {
	for i := range c.Providers {
		p := &c.Providers[i]
		if p.APIKey == "" && p.APIKeyEnv != "" {
			if v, ok := lookup(p.APIKeyEnv); ok {
				p.APIKey = strings.TrimSpace(v)
			}
		}
	}
}

// normalizeKind maps aliases to the canonical kind.
func normalizeKind(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	if k == "duckduckgo" || k == "ddg" {
		return KindHTML
	}
	return k
}

// checkBaseURL accepts http and https URLs with a host and no query, user
// info or fragment: the path is a prefix the provider appends its endpoint to.
func checkBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("base_url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("base_url %q: want an http or https URL", raw)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("base_url %q: want scheme://host[:port][/path] without user, query or fragment", raw)
	}
	return u, nil
}
