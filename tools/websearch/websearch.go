package websearch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// Stable error codes of web_search (besides the pipeline's own, such as
// invalid_arguments for a schema violation).
const (
	CodeInvalidInput = "invalid_input"
	CodeQueryTooLong = "query_too_long"
	CodeNoProvider   = "no_provider_configured"
	CodeRateLimited  = "rate_limited"
	CodeProviderDown = "provider_unavailable"
	CodeTimeout      = tools.CodeTimeout
)

// PaidUnit is what web_search bills: one per call a provider answered.
const PaidUnit = "search_call"

const (
	toolName             = "web_search"
	toolVersion          = "1.0.0"
	maxQueryRunes        = 400
	defaultResultCount   = 8
	maxResultCount       = 20
	redirectLimitPerCall = 3
)

// Deps are what the tool needs from its host besides its config.
type Deps struct {
	Logger *slog.Logger
	// Clock drives back-off and cache expiry; nil means time.Now.
	Clock func() time.Time
	// HTTPClient for engine requests; nil means a client of our own.
	HTTPClient *http.Client
	// Shared, when set, is the answer cache the replicas share (Redis),
	// in place of the cache directory.
	Shared SharedCache
	// Tracer and Meter instrument the provider requests, the failovers
	// and the cache (telemetry.go); nil: no-op.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
}

// Tool is web_search.
type Tool struct {
	slots       []*slot
	unusable    []string // providers dropped at start-up, with why
	fingerprint string   // provider identities, for cache keys
	cache       *cache   // nil when disabled
	logger      *slog.Logger
	now         func() time.Time
	deadline    time.Duration // one whole search
	hedge       time.Duration // default hedge delay; < 0: no hedging
	flight      singleflight.Group
	// joined, when set (by tests), is called once a caller waits for
	// the search in flight for its key (its own or one it shares).
	joined func()
	tel    instruments
}

// slot is one configured provider and its back-off state.
type slot struct {
	name    string
	id      string // kind and base URL: what the answers depend on
	timeout time.Duration
	p       provider
	lat     latencies

	mu           sync.Mutex
	limitedUntil time.Time // rate limited: not contacted before this
	failUntil    time.Time // failing: tried after the healthy ones until this
	failures     int
}

// New builds web_search from its config. It fails on a config that cannot
// work (unknown kind, bad base URL); a provider whose key is missing is
// dropped with a warning so the others still serve.
func New(cfg Config, deps Deps) (*Tool, error) {
	t := &Tool{logger: deps.Logger, now: deps.Clock, deadline: time.Duration(cfg.Deadline), hedge: time.Duration(cfg.HedgeDelay),
		tel: newInstruments(deps.Tracer, deps.Meter)}
	if t.deadline <= 0 {
		t.deadline = defaultDeadline
	}
	if t.hedge == 0 {
		t.hedge = defaultHedgeDelay
	}
	if t.logger == nil {
		t.logger = slog.New(slog.DiscardHandler)
	}
	if t.now == nil {
		t.now = time.Now
	}
	hc := deps.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = defaultUserAgent
	}
	client := &httpClient{hc: hc, userAgent: ua, now: t.now}

	provs := cfg.Providers
	if provs == nil {
		provs = []ProviderConfig{{Kind: KindHTML}}
	}
	var fp []string
	names := map[string]bool{}
	for i, pc := range provs {
		name := strings.TrimSpace(pc.Name)
		if name == "" {
			name = normalizeKind(pc.Kind)
		}
		if names[name] {
			return nil, fmt.Errorf("search.providers[%d]: duplicate name %q; give each provider a distinct name", i, name)
		}
		names[name] = true
		sl, why, err := newSlot(i, pc, name, client)
		if err != nil {
			return nil, err
		}
		if sl == nil {
			t.unusable = append(t.unusable, name+": "+why)
			t.logger.Warn("web_search provider disabled: missing API key", "provider", name, "reason", why)
			continue
		}
		t.slots = append(t.slots, sl)
		fp = append(fp, sl.id)
	}
	t.fingerprint = strings.Join(fp, ",")
	c, err := newCache(cfg.Cache, deps.Shared, t.now, t.logger)
	if err != nil {
		return nil, err
	}
	t.cache = c
	return t, nil
}

// defaultHTTPClient is the client providers share when Deps has none: a
// few idle connections a host, and a cap on redirects.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= redirectLimitPerCall {
				return fmt.Errorf("stopped after %d redirects", len(via))
			}
			return nil
		},
	}
}

// newSlot builds the slot of provider i of the config, named name. A
// provider that needs an API key and has none gets no slot: newSlot returns
// nil and why, and the others still serve.
func newSlot(i int, pc ProviderConfig, name string, client *httpClient) (_ *slot, why string, _ error) {
	kind := normalizeKind(pc.Kind)
	timeout := time.Duration(pc.Timeout)
	if timeout < 0 {
		return nil, "", fmt.Errorf("search.providers[%d] (%s): negative timeout", i, name)
	}
	if timeout == 0 {
		timeout = defaultTimeout
	}
	base := pc.BaseURL
	switch kind {
	case KindSearXNG:
		if base == "" {
			return nil, "", fmt.Errorf("search.providers[%d] (%s): searxng needs base_url, the address of your instance", i, name)
		}
	case KindBrave:
		if base == "" {
			base = defaultBraveURL
		}
	case KindTavily:
		if base == "" {
			base = defaultTavilyURL
		}
	case KindHTML:
		if base == "" {
			base = defaultHTMLURL
		}
	default:
		return nil, "", fmt.Errorf("search.providers[%d]: unknown kind %q; want searxng, brave, tavily or html", i, pc.Kind)
	}
	u, err := checkBaseURL(base)
	if err != nil {
		return nil, "", fmt.Errorf("search.providers[%d] (%s): %w", i, name, err)
	}
	var p provider
	switch kind {
	case KindSearXNG:
		p = &searxng{base: u, http: client}
	case KindHTML:
		p = &htmlSearch{base: u, http: client}
	case KindBrave, KindTavily:
		if pc.APIKey == "" {
			if pc.APIKeyEnv != "" {
				return nil, "environment variable " + pc.APIKeyEnv + " is not set", nil
			}
			return nil, "no api_key", nil
		}
		if kind == KindBrave {
			p = &brave{base: u, key: pc.APIKey, http: client}
		} else {
			p = &tavily{base: u, key: pc.APIKey, http: client}
		}
	}
	return &slot{name: name, id: kind + "=" + u.String(), timeout: timeout, p: p}, "", nil
}

// Providers lists the names of the usable providers in failover order.
func (t *Tool) Providers() []string {
	n := make([]string, len(t.slots))
	for i, s := range t.slots {
		n[i] = s.name
	}
	return n
}

// Output is the structured result of web_search.
type Output struct {
	Query    string `json:"query"`
	Provider string `json:"provider"`
	Results  []Item `json:"results"`
	TookMS   int64  `json:"took_ms"`
	Cached   bool   `json:"cached"`
}

type input struct {
	Query     string   `json:"query"`
	Count     int      `json:"count"`
	Freshness string   `json:"freshness"`
	Site      string   `json:"site"`
	Lang      string   `json:"lang"`
	Allowed   []string `json:"allowed_domains"`
	Blocked   []string `json:"blocked_domains"`
}

// queryOf is the search an invocation asks for.
func queryOf(inv *tools.Invocation) (query, error) {
	var in input
	if err := inv.Decode(&in); err != nil {
		return query{}, err
	}
	q := query{Text: in.Query, Count: in.Count, Lang: in.Lang, Site: in.Site, Allowed: in.Allowed, Blocked: in.Blocked}
	if q.Count <= 0 {
		q.Count = defaultResultCount
	}
	if in.Freshness != "any" {
		q.Freshness = in.Freshness
	}
	return q, nil
}

// Free reports that the answer is in the cache, so the call will cost no
// search_call unit (tools.CostProbe): a key at its monthly cap still gets it.
func (t *Tool) Free(inv *tools.Invocation) bool {
	if t.cache == nil {
		return false
	}
	q, err := queryOf(inv)
	if err != nil {
		return false
	}
	_, ok := t.cache.get(context.Background(), cacheKey(q, t.fingerprint))
	return ok
}

// Call runs one search: the cache first, then the providers in order.
func (t *Tool) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	q, err := queryOf(inv)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	lang := inv.Ref.Lang

	key := cacheKey(q, t.fingerprint)
	if t.cache != nil {
		e, ok := t.cache.get(ctx, key)
		t.tel.lookup(ctx, ok)
		if ok {
			out := Output{Query: q.Text, Provider: t.providerName(e), Results: e.Results, TookMS: time.Since(start).Milliseconds(), Cached: true}
			return t.result(out, lang, 0), nil
		}
	}
	if len(t.slots) == 0 {
		msg := "no search provider is configured; the operator must add one under \"search.providers\" in the config file"
		if len(t.unusable) > 0 {
			msg = "no usable search provider: " + strings.Join(t.unusable, "; ")
		}
		return nil, tools.Errorf(CodeNoProvider, "%s", msg)
	}

	// Identical searches in flight at once make one engine request: the
	// first caller's search runs for all of them, detached from any one
	// caller's cancellation but bounded by the search deadline, and only
	// that caller is billed.
	ch := t.flight.DoChan(key, func() (any, error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.deadline)
		defer cancel()
		return t.search(sctx, inv, q, key)
	})
	if t.joined != nil {
		t.joined()
	}
	select {
	case <-ctx.Done():
		return nil, t.ctxError(ctx.Err(), nil)
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		e := r.Val.(cacheEntry)
		// The caller whose search ran pays for it; the others shared it.
		leader := e.Leader == inv.ID
		out := Output{Query: q.Text, Provider: t.providerName(e), Results: e.Results, TookMS: time.Since(start).Milliseconds(), Cached: !leader}
		units := 0.0
		if leader {
			units = 1
		}
		return t.result(out, lang, units), nil
	}
}

// search asks the providers (hedged, within ctx's deadline) and caches the
// answer.
func (t *Tool) search(ctx context.Context, inv *tools.Invocation, q query, key string) (cacheEntry, error) {
	order, skipped := t.order()
	ans, reasons, err := t.race(ctx, q, order, func(i int, name string) {
		inv.Progress(float64(i), float64(len(order)), "asking "+name)
	})
	reasons = append(skipped, reasons...)
	if err != nil {
		return cacheEntry{}, t.ctxError(err, reasons)
	}
	if ans == nil {
		return cacheEntry{}, allFailed(reasons)
	}
	items := clean(ans.hits, q)
	t.logger.InfoContext(ctx, "web_search provider answered", "provider", ans.slot.name, "raw", len(ans.hits), "results", len(items), "ms", ans.ms, "execution_id", inv.ID)
	e := cacheEntry{Stored: t.now(), Provider: ans.slot.name, ProviderID: ans.slot.id, Results: items, Leader: inv.ID}
	if t.cache != nil {
		t.cache.put(ctx, key, e)
	}
	return e, nil
}

// providerName is the configured name of the provider that produced e: a
// provider renamed since is named as it is called now.
func (t *Tool) providerName(e cacheEntry) string {
	name := ""
	for _, s := range t.slots {
		if e.ProviderID == "" || s.id != e.ProviderID {
			continue
		}
		if s.name == e.Provider {
			return s.name // still called so (two may share an endpoint)
		}
		if name == "" {
			name = s.name
		}
	}
	if name == "" {
		return e.Provider
	}
	return name
}

// attempt is why one provider did not answer this call.
type attempt struct {
	name    string
	f       *failure
	wait    time.Duration // back-off now in force (rate limits: before retrying)
	skipped bool          // not contacted: still rate limited
}

func (a attempt) String() string {
	switch {
	case a.skipped:
		return fmt.Sprintf("%s: rate limited, not contacted (retry in %ds)", a.name, ceilSeconds(a.wait))
	case a.f.Kind == failRateLimited:
		return fmt.Sprintf("%s: %s (retry in %ds)", a.name, a.f.Msg, ceilSeconds(a.wait))
	case a.f.Kind == failTimeout:
		return fmt.Sprintf("%s: timeout (%s)", a.name, a.f.Msg)
	}
	return a.name + ": " + a.f.Msg
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// order returns the providers to try now: healthy ones in config order, then
// recently failing ones; rate-limited ones are left out and reported.
func (t *Tool) order() ([]*slot, []attempt) {
	now := t.now()
	var healthy, failing []*slot
	var skipped []attempt
	for _, s := range t.slots {
		s.mu.Lock()
		limited, failingNow := now.Before(s.limitedUntil), now.Before(s.failUntil)
		wait := s.limitedUntil.Sub(now)
		s.mu.Unlock()
		switch {
		case limited:
			skipped = append(skipped, attempt{name: s.name, f: &failure{Kind: failRateLimited, Msg: "rate limited"}, wait: wait, skipped: true})
		case failingNow:
			failing = append(failing, s)
		default:
			healthy = append(healthy, s)
		}
	}
	return append(healthy, failing...), skipped
}

// failed records a failure and returns the back-off it set.
func (s *slot) failed(f *failure, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Kind == failRateLimited {
		d := f.RetryAfter
		if d <= 0 {
			d = defaultRateLimit
		}
		d = min(d, maxRetryAfter)
		s.limitedUntil = now.Add(d)
		return d
	}
	s.failures++
	d := minFailureBackoff << min(s.failures-1, 10)
	d = min(d, maxFailureBackoff)
	s.failUntil = now.Add(d)
	return d
}

func (s *slot) succeeded() {
	s.mu.Lock()
	s.failures = 0
	s.failUntil = time.Time{}
	s.mu.Unlock()
}

// allFailed turns the reasons into one tool error: rate_limited when every
// provider is rate limited, timeout when every one timed out, otherwise
// provider_unavailable listing each provider's reason.
func allFailed(reasons []attempt) error {
	allLimited, allTimeout := true, true
	var soonest time.Duration
	parts := make([]string, len(reasons))
	details := make([]providerFailure, len(reasons))
	for i, a := range reasons {
		parts[i] = a.String()
		d := providerFailure{Provider: a.name, Reason: a.f.Msg, Status: a.f.Status}
		if a.f.Kind == failRateLimited {
			ms := a.wait.Milliseconds()
			d.RetryAfterMS = &ms
			if soonest == 0 || a.wait < soonest {
				soonest = a.wait
			}
		} else {
			allLimited = false
		}
		if a.f.Kind != failTimeout {
			allTimeout = false
		}
		details[i] = d
	}
	list := strings.Join(parts, "; ")
	var e *tools.Error
	switch {
	case allLimited:
		e = tools.Errorf(CodeRateLimited, "every search provider is rate limited: %s; try again later", list)
		e.RetryAfter = soonest
	case allTimeout:
		e = tools.Errorf(CodeTimeout, "no search provider answered in time: %s; try again, perhaps with a shorter query", list)
	default:
		e = tools.Errorf(CodeProviderDown, "all search providers failed: %s", list)
		e.RetryAfter = soonest
	}
	e.Details = providersFailed{Providers: details}
	return e
}

// providersFailed are the details of allFailed's error: each provider's
// reason, with its HTTP status and, when it is rate limited, how long to
// wait.
type providersFailed struct {
	Providers []providerFailure `json:"providers"`
}

type providerFailure struct {
	Provider     string `json:"provider"`
	Reason       string `json:"reason"`
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty"`
	Status       int    `json:"status,omitempty"`
}

// ctxError reports the call's own deadline or cancellation.
func (t *Tool) ctxError(err error, reasons []attempt) error {
	if errors.Is(err, context.DeadlineExceeded) {
		msg := fmt.Sprintf("the search did not finish within its %s deadline", t.deadline)
		if len(reasons) > 0 {
			parts := make([]string, len(reasons))
			for i, a := range reasons {
				parts[i] = a.String()
			}
			msg += " (" + strings.Join(parts, "; ") + ")"
		}
		return tools.Errorf(CodeTimeout, "%s", msg)
	}
	return err
}

// result renders the output for the model and the journal.
func (t *Tool) result(out Output, lang catalog.Lang, units float64) *tools.Result {
	return &tools.Result{
		Structured: out,
		Text:       render(out, lang),
		Summary:    summary(len(out.Results), lang),
		Units:      units,
		Untrusted:  true,
	}
}

func summary(n int, lang catalog.Lang) string {
	if lang == catalog.English {
		if n == 1 {
			return "web: 1 result"
		}
		return fmt.Sprintf("web: %d results", n)
	}
	return fmt.Sprintf("web %d 条", n)
}

func render(out Output, lang catalog.Lang) string {
	var b strings.Builder
	n := len(out.Results)
	en := lang == catalog.English
	switch {
	case en && n == 1:
		fmt.Fprintf(&b, "Web search %q, 1 result:", out.Query)
	case en:
		fmt.Fprintf(&b, "Web search %q, %d results", out.Query, n)
		if n > 0 {
			b.WriteString(":")
		} else {
			b.WriteString(". Try other words, fewer filters or a wider freshness.")
		}
	default:
		fmt.Fprintf(&b, "网页搜索「%s」，%d 条", out.Query, n)
		if n > 0 {
			b.WriteString("：")
		} else {
			b.WriteString("。可换用其他关键词、减少过滤条件或放宽时间范围。")
		}
	}
	for i, r := range out.Results {
		fmt.Fprintf(&b, "\n\n%d. %s\n   %s", i+1, r.Title, r.URL)
		if r.PublishedAt != "" {
			if en {
				fmt.Fprintf(&b, "\n   Published: %s", r.PublishedAt)
			} else {
				fmt.Fprintf(&b, "\n   发布时间：%s", r.PublishedAt)
			}
		}
		if r.Snippet != "" {
			fmt.Fprintf(&b, "\n   %s", r.Snippet)
		}
	}
	return b.String()
}

var _ tools.Tool = (*Tool)(nil)
var _ tools.Normalizer = (*Tool)(nil)
