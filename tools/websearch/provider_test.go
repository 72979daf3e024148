package websearch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

const testQuery = `{"query":"perovskite encapsulation stability","count":5}`

// wantSuccess is what each engine's success fixture must turn into.
var wantSuccess = map[string]struct {
	urls      []string
	firstSnip string // the first result's cleaned snippet starts so
}{
	KindSearXNG: {
		urls: []string{
			"https://www.nature.com/articles/s41560-023-01234-5",
			"https://pubs.acs.org/doi/10.1021/acsenergylett.3c00001",
			"https://www.nrel.gov/pv/perovskite-durability.html",
			"https://www.sciencedirect.com/science/article/pii/S2211285523000012",
			"https://en.wikipedia.org/wiki/Perovskite_solar_cell#Stability",
		},
		firstSnip: "We review encapsulation materials & methods",
	},
	KindBrave: {
		urls: []string{
			"https://www.mdpi.com/1996-1073/16/3/1234",
			"https://onlinelibrary.wiley.com/doi/10.1002/aenm.202300001",
			"https://www.nrel.gov/pv/perovskite-durability.html",
		},
		firstSnip: "Encapsulation is key to the long-term stability",
	},
	KindTavily: {
		urls: []string{
			"https://www.pv-magazine.com/2024/05/20/perovskite-module-passes-damp-heat-test/",
			"https://www.nature.com/articles/s41560-023-01234-5",
		},
		firstSnip: "A start-up says its encapsulated perovskite module",
	},
	KindHTML: {
		urls: []string{
			"https://www.nature.com/articles/s41560-023-01234-5",
			"https://en.wikipedia.org/wiki/Perovskite_solar_cell",
			"https://www.nrel.gov/pv/perovskite-durability.html",
			"https://arxiv.org/abs/2401.01234",
		},
		firstSnip: "We review encapsulation materials & methods",
	},
}

func TestEachProviderAgainstItsFixture(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.kind, func(t *testing.T) {
			t.Run("success", func(t *testing.T) {
				f := newFixture(t, eng, modeSuccess)
				h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
				o := h.call(t, testQuery, catalog.English)
				out := output(t, o)
				want := wantSuccess[eng.kind]
				var got []string
				for _, r := range out.Results {
					got = append(got, r.URL)
					if strings.ContainsAny(r.Title, "<>") || strings.Contains(r.Title, "&amp;") || strings.Contains(r.Snippet, "<b>") {
						t.Errorf("markup left in %+v", r)
					}
					if r.Source == "" || strings.HasPrefix(r.Source, "www.") {
						t.Errorf("source %q of %s", r.Source, r.URL)
					}
				}
				if strings.Join(got, "\n") != strings.Join(want.urls, "\n") {
					t.Fatalf("urls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want.urls, "\n"))
				}
				if !strings.HasPrefix(out.Results[0].Snippet, want.firstSnip) {
					t.Errorf("first snippet %q, want prefix %q", out.Results[0].Snippet, want.firstSnip)
				}
				if out.Provider != eng.kind || out.Cached || o.Units != 1 || o.Status != tools.StatusSuccess {
					t.Errorf("provider %q cached %v units %v status %s", out.Provider, out.Cached, o.Units, o.Status)
				}
				if o.Summary != "web: "+itoa(len(want.urls))+" results" {
					t.Errorf("summary %q", o.Summary)
				}
				checkRequest(t, eng, f.lastRequest())
			})
			t.Run("empty", func(t *testing.T) {
				f := newFixture(t, eng, modeEmpty)
				h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
				o := h.call(t, `{"query":"qwxzv nonexistent term"}`, catalog.English)
				out := output(t, o)
				if len(out.Results) != 0 || out.Results == nil || o.Units != 1 {
					t.Fatalf("results %v (nil %v) units %v", out.Results, out.Results == nil, o.Units)
				}
				if !strings.Contains(o.Text, `Web search "qwxzv nonexistent term", 0 results.`) || o.Summary != "web: 0 results" {
					t.Errorf("text %q summary %q", o.Text, o.Summary)
				}
			})
			t.Run("429 with Retry-After", func(t *testing.T) {
				f := newFixture(t, eng, modeLimited)
				f.setHeaders(map[string]string{"Retry-After": "120"})
				h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
				o := h.call(t, testQuery, catalog.English)
				if o.Code != CodeRateLimited || o.RetryAfter != 120*time.Second || o.Units != 0 {
					t.Fatalf("code %s retry %s units %v: %s", o.Code, o.RetryAfter, o.Units, o.Message)
				}
				// Inside the back-off the engine is not contacted again.
				h.clock.Advance(119 * time.Second)
				o = h.call(t, testQuery, catalog.English)
				if o.Code != CodeRateLimited || o.RetryAfter != time.Second || f.hits.Load() != 1 {
					t.Fatalf("inside back-off: code %s retry %s hits %d", o.Code, o.RetryAfter, f.hits.Load())
				}
				// After it, the engine is asked again.
				h.clock.Advance(2 * time.Second)
				f.setMode(modeSuccess)
				f.setHeaders(nil)
				o = h.call(t, testQuery, catalog.English)
				if o.IsError || f.hits.Load() != 2 {
					t.Fatalf("after back-off: %s %s, hits %d", o.Code, o.Message, f.hits.Load())
				}
			})
			t.Run("5xx", func(t *testing.T) {
				f := newFixture(t, eng, mode5xx)
				h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
				o := h.call(t, testQuery, catalog.English)
				if o.Code != CodeProviderDown || !strings.Contains(o.Message, eng.kind+": HTTP 502") {
					t.Fatalf("code %s: %s", o.Code, o.Message)
				}
				d := errorDetails(t, o)
				if len(d) != 1 || d[0]["provider"] != eng.kind || d[0]["status"] != float64(502) {
					t.Errorf("details %v", d)
				}
			})
			t.Run("malformed body", func(t *testing.T) {
				f := newFixture(t, eng, modeMalformed)
				h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
				o := h.call(t, testQuery, catalog.English)
				if o.Code != CodeProviderDown || f.hits.Load() != 1 {
					t.Fatalf("code %s hits %d: %s", o.Code, f.hits.Load(), o.Message)
				}
				want := map[string]string{
					KindSearXNG: "searxng: response is not SearXNG JSON",
					KindBrave:   "brave: response is not Brave Search JSON",
					KindTavily:  `tavily: response has no "results" array`,
					KindHTML:    "html: not a results page",
				}[eng.kind]
				if !strings.Contains(o.Message, want) {
					t.Errorf("message %q lacks %q", o.Message, want)
				}
			})
			t.Run("slow response", func(t *testing.T) {
				f := newFixture(t, eng, modeSlow)
				h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 100*time.Millisecond)}, Cache: noCache()})
				o := h.call(t, testQuery, catalog.English)
				if o.Code != CodeTimeout || o.Status != tools.StatusTimeout {
					t.Fatalf("code %s status %s: %s", o.Code, o.Status, o.Message)
				}
				if !strings.Contains(o.Message, eng.kind+": timeout") {
					t.Errorf("message %q", o.Message)
				}
			})
		})
	}
}

// checkRequest asserts the request is the one the engine documents.
func checkRequest(t *testing.T, eng engineFixture, r request) {
	t.Helper()
	if r.Method != eng.method || r.Path != eng.path {
		t.Errorf("%s %s, want %s %s", r.Method, r.Path, eng.method, eng.path)
	}
	if ua := r.Header.Get("User-Agent"); ua != defaultUserAgent {
		t.Errorf("user agent %q", ua)
	}
	switch eng.kind {
	case KindSearXNG:
		if g := r.Query["format"]; len(g) != 1 || g[0] != "json" || r.Query["q"][0] != "perovskite encapsulation stability" {
			t.Errorf("query %v", r.Query)
		}
	case KindBrave:
		if r.Query["q"][0] != "perovskite encapsulation stability" || r.Query["count"][0] != "10" || r.Header.Get("Accept") != "application/json" {
			t.Errorf("query %v accept %q", r.Query, r.Header.Get("Accept"))
		}
	case KindTavily:
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body["query"] != "perovskite encapsulation stability" || body["max_results"] != float64(10) || body["api_key"] != nil {
			t.Errorf("body %v", body)
		}
	case KindHTML:
		if len(r.Form["q"]) != 1 || r.Form["q"][0] != "perovskite encapsulation stability" {
			t.Errorf("form %v", r.Form)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRequestOptionsReachEachEngine(t *testing.T) {
	args := `{"query":"perovskite","count":3,"freshness":"week","lang":"zh-CN","blocked_domains":["spam.test"]}`
	cases := []struct {
		kind  string
		check func(t *testing.T, r request)
	}{
		{KindSearXNG, func(t *testing.T, r request) {
			if r.Query["time_range"][0] != "week" || r.Query["language"][0] != "zh-CN" || r.Query["q"][0] != "perovskite -site:spam.test" {
				t.Errorf("query %v", r.Query)
			}
		}},
		{KindBrave, func(t *testing.T, r request) {
			// Filtering asks for more, since results may be dropped here.
			if r.Query["freshness"][0] != "pw" || r.Query["search_lang"][0] != "zh-hans" || r.Query["count"][0] != "20" || r.Query["q"][0] != "perovskite -site:spam.test" {
				t.Errorf("query %v", r.Query)
			}
		}},
		{KindTavily, func(t *testing.T, r request) {
			var body map[string]any
			_ = json.Unmarshal(r.Body, &body)
			ex, _ := body["exclude_domains"].([]any)
			if body["time_range"] != "week" || len(ex) != 1 || ex[0] != "spam.test" || body["query"] != "perovskite" {
				t.Errorf("body %v", body)
			}
		}},
		{KindHTML, func(t *testing.T, r request) {
			if r.Form["df"][0] != "w" || r.Form["kl"][0] != "cn-zh" || r.Form["q"][0] != "perovskite -site:spam.test" {
				t.Errorf("form %v", r.Form)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			f := newFixture(t, engineByKind(t, c.kind), modeEmpty)
			h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
			if o := h.call(t, args, catalog.English); o.IsError {
				t.Fatal(o.Message)
			}
			c.check(t, f.lastRequest())
		})
	}
}

func TestRateLimitHintsOtherThanRetryAfterSeconds(t *testing.T) {
	cases := []struct {
		name    string
		kind    string
		mode    string
		headers map[string]string
		want    time.Duration
	}{
		// Brave documents X-RateLimit-Reset, not Retry-After.
		{"brave X-RateLimit-Reset", KindBrave, modeLimited, map[string]string{"X-RateLimit-Limit": "1, 2000", "X-RateLimit-Remaining": "0, 1943", "X-RateLimit-Reset": "1, 1419704"}, time.Second},
		{"Retry-After as HTTP date", KindSearXNG, modeLimited, map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:05:00 GMT"}, 5 * time.Minute},
		{"no hint: default back-off", KindTavily, modeLimited, nil, defaultRateLimit},
		{"hint capped", KindSearXNG, modeLimited, map[string]string{"Retry-After": "86400"}, maxRetryAfter},
		{"html bot check", KindHTML, modeChallenge, nil, defaultRateLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, engineByKind(t, c.kind), c.mode)
			f.setHeaders(c.headers)
			h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
			o := h.call(t, testQuery, catalog.English)
			if o.Code != CodeRateLimited || o.RetryAfter != c.want {
				t.Fatalf("code %s retry %s, want %s: %s", o.Code, o.RetryAfter, c.want, o.Message)
			}
		})
	}
}

func TestTavilyQuotaCodesBackOffLikeRateLimits(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindTavily), modeQuota)
	h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
	o := h.call(t, testQuery, catalog.English)
	if o.Code != CodeRateLimited || !strings.Contains(o.Message, "HTTP 432") {
		t.Fatalf("%s: %s", o.Code, o.Message)
	}
	if o = h.call(t, testQuery, catalog.English); o.Code != CodeRateLimited || f.hits.Load() != 1 {
		t.Fatalf("second call %s, hits %d", o.Code, f.hits.Load())
	}
}
