package fetchpage

import (
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
)

// Config is the `fetch` section of the server's config file. Every zero value
// means "use the default", so an empty Config is a working, safe setup.
type Config struct {
	// UserAgent is sent with every request and used for robots.txt groups.
	UserAgent string `json:"user_agent"`
	// AllowPrivate exempts CIDRs, addresses or host names (with their
	// subdomains) from the SSRF guard. For tests and intranets only; empty by
	// default.
	AllowPrivate []string `json:"allow_private"`
	// Proxy is an explicit HTTP(S) proxy URL. Proxies from the environment
	// (HTTP_PROXY, ...) are never used.
	Proxy string `json:"proxy"`
	// ConnectTimeout bounds DNS plus TCP/TLS connect (default 10s).
	ConnectTimeout duration.Duration `json:"connect_timeout"`
	// Timeout bounds one whole fetch including redirects and body (default 30s).
	Timeout duration.Duration `json:"timeout"`
	// MaxHTMLBytes caps the decoded body of anything that is not a PDF
	// (default 10 MiB).
	MaxHTMLBytes int64 `json:"max_html_bytes"`
	// MaxExtractTextBytes caps the text of an HTML page handed to the
	// extractor (default 512 KiB); a page with more is cut after that much
	// and the result says so (page_cut). The extractor's work grows with
	// the square of the text.
	MaxExtractTextBytes int `json:"max_extract_text_bytes"`
	// MaxPDFBytes caps the decoded body of a PDF (default 50 MiB).
	MaxPDFBytes int64 `json:"max_pdf_bytes"`
	// MaxPDFPages is the page budget of one PDF extraction (default 300).
	MaxPDFPages int `json:"max_pdf_pages"`
	// MaxRedirects is how many redirects one fetch follows (default
	// DefaultMaxRedirects when nil); 0 follows none: a redirect is then the
	// fetch's answer, too_many_redirects naming its target. A pointer, so
	// that an explicit 0 is not taken for "unset" as every other zero here.
	MaxRedirects *int `json:"max_redirects"`
	// PerHostConcurrency limits fetches in flight to one host (default 4).
	// Hosts are counted by the address they resolve to.
	PerHostConcurrency int `json:"per_host_concurrency"`
	// MaxInFlight caps fetches in flight in all (default 16), and
	// BodyBudgetBytes the page bodies they hold together while downloading
	// and extracting (default 40 MiB; a fetch reserves its announced length,
	// else its type's cap). A fetch waits up to QueueTimeout (default 10s)
	// for both, then answers busy with retry_after_ms.
	MaxInFlight     int               `json:"max_in_flight"`
	BodyBudgetBytes int64             `json:"body_budget_bytes"`
	QueueTimeout    duration.Duration `json:"queue_timeout"`
	// CacheTTL is how long an extracted page is served from memory
	// (default 5m; negative disables the cache).
	CacheTTL duration.Duration `json:"cache_ttl"`
	// CacheMaxBytes bounds the cache's content size (default 32 MiB).
	CacheMaxBytes int64 `json:"cache_max_bytes"`
	// IgnoreRobots turns the robots.txt check off (default: robots.txt is
	// obeyed).
	IgnoreRobots bool `json:"ignore_robots"`
	// RobotsTTL is how long a host's robots.txt is cached (default 1h).
	RobotsTTL duration.Duration `json:"robots_ttl"`
}

// DefaultMaxExtractTextBytes is the default of
// Config.MaxExtractTextBytes: above every page of both extraction-quality
// corpora (trafilatura's evaluation pages: the largest has 472 KiB of text,
// the next 204 KiB; the article-extraction benchmark: at most 100 KiB),
// and about 1 GiB of short-lived garbage in the extractor at most.
const DefaultMaxExtractTextBytes = 512 << 10

// DefaultMaxRedirects is Config.MaxRedirects when it is not set.
const DefaultMaxRedirects = 5

// DefaultUserAgent identifies us to sites and robots.txt.
const DefaultUserAgent = "toolhost-fetch/1.0 (+robots.txt obeyed)"

// robotsAgent is the product token matched against robots.txt groups.
const robotsAgent = "toolhost-fetch"

func (c Config) withDefaults() Config {
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = duration.Duration(10 * time.Second)
	}
	if c.Timeout <= 0 {
		c.Timeout = duration.Duration(30 * time.Second)
	}
	if c.MaxHTMLBytes <= 0 {
		c.MaxHTMLBytes = 10 << 20
	}
	if c.MaxExtractTextBytes <= 0 {
		c.MaxExtractTextBytes = DefaultMaxExtractTextBytes
	}
	if c.MaxPDFBytes <= 0 {
		c.MaxPDFBytes = 50 << 20
	}
	if c.MaxPDFPages <= 0 {
		c.MaxPDFPages = 300
	}
	if c.MaxRedirects == nil || *c.MaxRedirects < 0 {
		n := DefaultMaxRedirects
		c.MaxRedirects = &n
	}
	if c.PerHostConcurrency <= 0 {
		c.PerHostConcurrency = 4
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 16
	}
	if c.BodyBudgetBytes <= 0 {
		c.BodyBudgetBytes = 40 << 20
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = duration.Duration(10 * time.Second)
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = duration.Duration(5 * time.Minute)
	}
	if c.CacheMaxBytes <= 0 {
		c.CacheMaxBytes = 32 << 20
	}
	if c.RobotsTTL <= 0 {
		c.RobotsTTL = duration.Duration(time.Hour)
	}
	return c
}
