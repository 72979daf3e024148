package websearch

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
)

func TestFailoverToSecondProvider(t *testing.T) {
	cases := []struct {
		firstMode string
		timeout   time.Duration
		// secondCallSkipsFirst: on the next call the first provider is not
		// asked before the second (rate limited: not at all; failing: after).
		secondCallSkipsFirst bool
	}{
		{mode5xx, 10 * time.Second, true},
		{modeLimited, 10 * time.Second, true},
		{modeSlow, 100 * time.Millisecond, true},
		{modeMalformed, 10 * time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.firstMode, func(t *testing.T) {
			a := newFixture(t, engineByKind(t, KindSearXNG), c.firstMode)
			a.setHeaders(map[string]string{"Retry-After": "60"})
			b := newFixture(t, engineByKind(t, KindBrave), modeSuccess)
			h := newHarness(t, Config{
				Providers: []ProviderConfig{a.providerConfig("primary", c.timeout), b.providerConfig("backup", 10*time.Second)},
				Cache:     noCache(),
			})
			o := h.call(t, testQuery, catalog.English)
			out := output(t, o)
			if out.Provider != "backup" || len(out.Results) != 3 || o.Units != 1 {
				t.Fatalf("provider %q results %d units %v", out.Provider, len(out.Results), o.Units)
			}
			if a.hits.Load() != 1 || b.hits.Load() != 1 {
				t.Fatalf("hits primary %d backup %d", a.hits.Load(), b.hits.Load())
			}
			// Second call: the backup answers first; the primary, rate
			// limited or recently failing, is not asked.
			o = h.call(t, testQuery, catalog.English)
			if output(t, o).Provider != "backup" || a.hits.Load() != 1 || b.hits.Load() != 2 {
				t.Fatalf("second call: provider %q hits primary %d backup %d", output(t, o).Provider, a.hits.Load(), b.hits.Load())
			}
			// Once its back-off is over and it works again, the primary is
			// first again.
			h.clock.Advance(2 * time.Minute)
			a.setMode(modeSuccess)
			o = h.call(t, testQuery, catalog.English)
			if p := output(t, o).Provider; p != "primary" || a.hits.Load() != 2 {
				t.Fatalf("after back-off: provider %q primary hits %d", p, a.hits.Load())
			}
		})
	}
}

func TestFailingProviderIsTriedLastNotSkipped(t *testing.T) {
	a := newFixture(t, engineByKind(t, KindSearXNG), mode5xx)
	b := newFixture(t, engineByKind(t, KindTavily), mode5xx)
	h := newHarness(t, Config{
		Providers: []ProviderConfig{a.providerConfig("a", 10*time.Second), b.providerConfig("b", 10*time.Second)},
		Cache:     noCache(),
	})
	if o := h.call(t, testQuery, catalog.English); o.Code != CodeProviderDown {
		t.Fatalf("%s: %s", o.Code, o.Message)
	}
	// Both are in failure back-off; the next call still tries them, and
	// one that recovered answers.
	b.setMode(modeSuccess)
	o := h.call(t, testQuery, catalog.English)
	if p := output(t, o).Provider; p != "b" || a.hits.Load() != 2 || b.hits.Load() != 2 {
		t.Fatalf("provider %q hits a %d b %d", p, a.hits.Load(), b.hits.Load())
	}
}

func TestAllProvidersFailing(t *testing.T) {
	cases := []struct {
		name      string
		modeA     string
		modeB     string
		timeout   time.Duration
		code      string
		retry     time.Duration
		inMessage []string
	}{
		{"mixed reasons", mode5xx, modeLimited, 10 * time.Second, CodeProviderDown, 60 * time.Second,
			[]string{"all search providers failed", "a: HTTP 502", "b: rate limited (HTTP 429) (retry in 60s)"}},
		{"all rate limited", modeLimited, modeLimited, 10 * time.Second, CodeRateLimited, 60 * time.Second,
			[]string{"every search provider is rate limited", "a: rate limited", "b: rate limited"}},
		{"all slow", modeSlow, modeSlow, 100 * time.Millisecond, CodeTimeout, 0,
			[]string{"no search provider answered in time", "a: timeout", "b: timeout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newFixture(t, engineByKind(t, KindSearXNG), c.modeA)
			b := newFixture(t, engineByKind(t, KindBrave), c.modeB)
			a.setHeaders(map[string]string{"Retry-After": "60"})
			b.setHeaders(map[string]string{"Retry-After": "60"})
			h := newHarness(t, Config{
				Providers: []ProviderConfig{a.providerConfig("a", c.timeout), b.providerConfig("b", c.timeout)},
				Cache:     noCache(),
			})
			o := h.call(t, testQuery, catalog.English)
			if o.Code != c.code || o.RetryAfter != c.retry || o.Units != 0 {
				t.Fatalf("code %s retry %s units %v: %s", o.Code, o.RetryAfter, o.Units, o.Message)
			}
			for _, s := range c.inMessage {
				if !strings.Contains(o.Message, s) {
					t.Errorf("message %q lacks %q", o.Message, s)
				}
			}
			if d := errorDetails(t, o); len(d) != 2 || d[0]["provider"] != "a" || d[1]["provider"] != "b" {
				t.Errorf("details %v", d)
			}
		})
	}
}

func TestRateLimitedProviderIsReportedWithoutContact(t *testing.T) {
	a := newFixture(t, engineByKind(t, KindSearXNG), modeLimited)
	a.setHeaders(map[string]string{"Retry-After": "300"})
	b := newFixture(t, engineByKind(t, KindBrave), mode5xx)
	h := newHarness(t, Config{
		Providers: []ProviderConfig{a.providerConfig("a", 10*time.Second), b.providerConfig("b", 10*time.Second)},
		Cache:     noCache(),
	})
	h.call(t, testQuery, catalog.English)
	h.clock.Advance(100 * time.Second)
	o := h.call(t, testQuery, catalog.English)
	if o.Code != CodeProviderDown || a.hits.Load() != 1 || b.hits.Load() != 2 {
		t.Fatalf("code %s hits a %d b %d", o.Code, a.hits.Load(), b.hits.Load())
	}
	if !strings.Contains(o.Message, "a: rate limited, not contacted (retry in 200s)") || o.RetryAfter != 200*time.Second {
		t.Errorf("message %q retry %s", o.Message, o.RetryAfter)
	}
}
