package websearch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config/duration"
)

func TestCacheServesRepeatsFreeUntilTTL(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	h := newHarness(t, Config{
		Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)},
		Cache:     CacheConfig{TTL: duration.Duration(5 * time.Minute), MemoryOnly: true},
	})
	first := h.call(t, testQuery, catalog.English)
	if out := output(t, first); out.Cached || first.Units != 1 {
		t.Fatalf("first call cached %v units %v", out.Cached, first.Units)
	}
	cases := []struct {
		name     string
		args     string
		advance  time.Duration
		cached   bool
		wantHits int64
	}{
		{"same call", testQuery, 0, true, 1},
		{"case and spacing do not matter", `{"query":"  Perovskite   ENCAPSULATION stability ","count":5}`, 0, true, 1},
		{"another count is another answer", `{"query":"perovskite encapsulation stability","count":6}`, 0, false, 2},
		{"a filter is another answer", `{"query":"perovskite encapsulation stability","count":5,"blocked_domains":["spam.test"]}`, 0, false, 3},
		{"still fresh just before the TTL", testQuery, 5*time.Minute - time.Second, true, 3},
		{"expired after the TTL", testQuery, 2 * time.Second, false, 4},
	}
	for _, c := range cases {
		h.clock.Advance(c.advance)
		o := h.call(t, c.args, catalog.English)
		out := output(t, o)
		wantUnits := 1.0
		if c.cached {
			wantUnits = 0
		}
		if out.Cached != c.cached || o.Units != wantUnits || f.hits.Load() != c.wantHits {
			t.Fatalf("%s: cached %v units %v hits %d", c.name, out.Cached, o.Units, f.hits.Load())
		}
		if c.cached && (out.Provider != "searxng" || len(out.Results) != 5) {
			t.Fatalf("%s: cached answer %+v", c.name, out)
		}
	}
}

func TestCacheIsBoundedByEntries(t *testing.T) {
	for _, memoryOnly := range []bool{true, false} {
		name := "disk"
		if memoryOnly {
			name = "memory"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, engineByKind(t, KindSearXNG), modeEmpty)
			dir := t.TempDir()
			h := newHarness(t, Config{
				Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)},
				Cache:     CacheConfig{MaxEntries: 2, Dir: dir, MemoryOnly: memoryOnly},
			})
			for _, q := range []string{"one", "two", "three"} {
				h.call(t, `{"query":"`+q+`"}`, catalog.English)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			if memoryOnly && len(files) != 0 {
				t.Fatalf("memory-only cache wrote %d files", len(files))
			}
			if !memoryOnly && len(files) != 2 {
				t.Fatalf("%d files on disk, bound is 2", len(files))
			}
			if !output(t, h.call(t, `{"query":"three"}`, catalog.English)).Cached {
				t.Fatal("most recent entry not cached")
			}
			if memoryOnly {
				// "one" was the least recently used: evicted.
				o := h.call(t, `{"query":"one"}`, catalog.English)
				if output(t, o).Cached || f.hits.Load() != 4 {
					t.Fatalf("evicted entry served: hits %d", f.hits.Load())
				}
			}
		})
	}
}

func TestCacheOnDiskIsSharedBetweenInstances(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	dir := filepath.Join(t.TempDir(), "websearch-cache")
	cfg := Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: CacheConfig{Dir: dir}}
	a := newHarness(t, cfg)
	if out := output(t, a.call(t, testQuery, catalog.English)); out.Cached {
		t.Fatal("first call cached")
	}
	b := newHarness(t, cfg) // a second process, in effect: nothing in memory
	o := b.call(t, testQuery, catalog.English)
	if out := output(t, o); !out.Cached || len(out.Results) != 5 || o.Units != 0 || f.hits.Load() != 1 {
		t.Fatalf("second instance: cached %v results %d units %v hits %d", out.Cached, len(out.Results), o.Units, f.hits.Load())
	}
	// Expired on disk: asked again, and the stale file is replaced.
	c := newHarness(t, cfg)
	c.clock.Advance(defaultCacheTTL + time.Second)
	if out := output(t, c.call(t, testQuery, catalog.English)); out.Cached || f.hits.Load() != 2 {
		t.Fatalf("expired entry served: cached %v hits %d", out.Cached, f.hits.Load())
	}
	// Another provider list never sees these answers.
	g := newFixture(t, engineByKind(t, KindSearXNG), modeEmpty)
	other := newHarness(t, Config{Providers: []ProviderConfig{g.providerConfig("", 10*time.Second)}, Cache: CacheConfig{Dir: dir}})
	if out := output(t, other.call(t, testQuery, catalog.English)); out.Cached {
		t.Fatal("answer of another provider list served")
	}
	// A damaged file is ignored and removed, not served.
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range files {
		if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := newHarness(t, cfg)
	d.clock.Advance(defaultCacheTTL + time.Second)
	if out := output(t, d.call(t, testQuery, catalog.English)); out.Cached {
		t.Fatal("damaged file served")
	}
}

func TestCacheDisabled(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindSearXNG), modeEmpty)
	h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
	h.call(t, testQuery, catalog.English)
	if out := output(t, h.call(t, testQuery, catalog.English)); out.Cached || f.hits.Load() != 2 {
		t.Fatalf("cached %v hits %d", out.Cached, f.hits.Load())
	}
}
