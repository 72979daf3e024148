package websearch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/tools"
)

// query is what a provider is asked for: the normalized arguments of a call.
type query struct {
	Text      string
	Count     int
	Freshness string // day, week, month, year, or "" for any time
	Lang      string // BCP 47 tag or ""
	Site      string
	Allowed   []string
	Blocked   []string
}

// filtered reports whether the call restricts domains, so engines are asked
// for more results than wanted: filtering here may drop some.
func (q query) filtered() bool {
	return q.Site != "" || len(q.Allowed) > 0 || len(q.Blocked) > 0
}

// want is how many raw results to ask an engine for: a few more than wanted,
// since duplicates and unusable links are dropped here, and the most an
// engine gives (20) when domain filtering may drop many.
func (q query) want() int {
	if q.filtered() {
		return maxResultCount
	}
	return min(q.Count+5, maxResultCount)
}

// hit is one raw result as an engine returned it, before hygiene.
type hit struct {
	Title     string
	URL       string
	Snippet   string
	Published string // as the engine wrote it; parsed by the hygiene step
}

// provider is one search engine.
type provider interface {
	// search asks the engine. Failures are *failure values.
	search(ctx context.Context, q query) ([]hit, error)
}

// failKind classifies why a provider did not answer.
type failKind int

const (
	failNetwork failKind = iota
	failTimeout
	failRateLimited
	failHTTP
	failMalformed
)

// failure is a provider error. Its message never holds an API key.
type failure struct {
	Kind       failKind
	Status     int
	RetryAfter time.Duration // rate limits only; 0 when the engine gave none
	Msg        string
	// Cause is the transport's own error text for the server log only: it
	// names the engine's URL and addresses, which callers must not see.
	Cause string
}

func (f *failure) Error() string { return f.Msg }

func failf(kind failKind, format string, args ...any) *failure {
	return &failure{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// httpClient does one request for a provider: headers, size cap, status
// classification. The deadline comes from ctx.
type httpClient struct {
	hc        *http.Client
	userAgent string
	now       func() time.Time
}

// do sends req and returns the body of a 2xx response. secret, when not
// empty, is scrubbed from every message so an echoing error page cannot leak
// it.
func (c *httpClient) do(ctx context.Context, req *http.Request, secret string) ([]byte, int, error) {
	req = req.WithContext(ctx)
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, classifyTransport(ctx, err, secret)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderBody+1))
	if err != nil {
		return nil, resp.StatusCode, classifyTransport(ctx, err, secret)
	}
	if len(body) > maxProviderBody {
		return nil, resp.StatusCode, failf(failMalformed, "response larger than %d bytes", maxProviderBody)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		f := failf(failRateLimited, "rate limited (HTTP 429)")
		f.Status = code
		f.RetryAfter = retryAfter(resp.Header, c.now())
		return nil, code, f
	case code >= 500:
		f := failf(failHTTP, "HTTP %d%s", code, excerpt(body, secret))
		f.Status = code
		return nil, code, f
	case code < 200 || code > 299:
		f := failf(failHTTP, "HTTP %d%s", code, excerpt(body, secret))
		f.Status = code
		return nil, code, f
	}
	return body, resp.StatusCode, nil
}

func classifyTransport(ctx context.Context, err error, secret string) error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return failf(failTimeout, "no answer within the time limit")
	}
	// The message says what kind of failure it was; the error text, which
	// names the engine's URL and the addresses dialled, goes to the log.
	f := failf(failNetwork, "request failed: %s", egress.Describe(err))
	f.Cause = scrub(err.Error(), secret)
	return f
}

// retryAfter reads Retry-After (seconds or an HTTP date, RFC 9110 §10.2.3);
// failing that, the first value of Brave's X-RateLimit-Reset ("1, 1419704":
// seconds until the per-second window, then the monthly one, resets).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := t.Sub(now); d > 0 {
				return d
			}
			return 0
		}
	}
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" {
		first, _, _ := strings.Cut(v, ",")
		if s, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && s >= 0 {
			return time.Duration(s) * time.Second
		}
	}
	return 0
}

// excerpt is a short, single-line piece of an error body for messages,
// fenced: the engine's words are data, whatever they say.
func excerpt(body []byte, secret string) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return ""
	}
	if len(s) > 160 {
		cut := 160
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return ": " + tools.Fence(scrub(s, secret))
}

func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// siteOperators appends site:/-site: operators for engines that understand
// them in the query text (SearXNG passes them on, DuckDuckGo and Brave honour
// them). Several allowed domains cannot be expressed reliably, so only a single
// one is sent; the hygiene step filters in every case.
func siteOperators(q query) string {
	var b strings.Builder
	b.WriteString(q.Text)
	switch {
	case q.Site != "":
		b.WriteString(" site:" + q.Site)
	case len(q.Allowed) == 1:
		b.WriteString(" site:" + q.Allowed[0])
	}
	for _, d := range q.Blocked {
		b.WriteString(" -site:" + d)
	}
	return b.String()
}
