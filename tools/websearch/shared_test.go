package websearch

import (
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/internal/sharedcache"
	"github.com/toolhost/toolhost/internal/sharedcache/sharedcachetest"
	"github.com/toolhost/toolhost/tools"
)

// sharedHarness is a web_search "replica" on the shared cache and clock.
func sharedHarness(t *testing.T, cfg Config, shared SharedCache, clock *fakeClock) *harness {
	t.Helper()
	h := &harness{clock: clock, logs: &syncBuffer{}}
	logger := slog.New(slog.NewJSONHandler(h.logs, nil))
	tool, err := New(cfg, Deps{Logger: logger, Clock: clock.Now, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	if h.exec, err = tools.NewExecutor(tools.Options{Logger: logger}, tool); err != nil {
		t.Fatal(err)
	}
	h.tool = tool
	return h
}

// A search answered on one replica is a free cache hit on another that
// shares the Redis cache, until the TTL on the replicas' clock; the cache
// directory is then not written.
func TestSharedCacheAnswersOnAnotherReplica(t *testing.T) {
	rdb, prefix := sharedcachetest.Redis(t)
	f := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	dir := t.TempDir()
	cfg := Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)},
		Cache: CacheConfig{TTL: duration.Duration(5 * time.Minute), Dir: dir}}
	clock := newClock()
	a := sharedHarness(t, cfg, sharedcache.New(rdb, prefix, sharedcache.Options{}), clock)
	b := sharedHarness(t, cfg, sharedcache.New(rdb, prefix, sharedcache.Options{}), clock)

	first := a.call(t, testQuery, catalog.English)
	if output(t, first).Cached || first.Units != 1 || f.hits.Load() != 1 {
		t.Fatalf("first call: cached %v units %v hits %d", output(t, first).Cached, first.Units, f.hits.Load())
	}
	if !b.tool.Free(&tools.Invocation{Args: json.RawMessage(testQuery)}) {
		t.Fatal("replica b does not see the answer as free")
	}
	second := b.call(t, testQuery, catalog.English)
	if out := output(t, second); !out.Cached || second.Units != 0 || f.hits.Load() != 1 || len(out.Results) != 5 {
		t.Fatalf("replica b: cached %v units %v hits %d results %d", out.Cached, second.Units, f.hits.Load(), len(out.Results))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the cache directory holds %d files beside the shared cache", len(entries))
	}
	clock.Advance(5*time.Minute + time.Second)
	c := sharedHarness(t, cfg, sharedcache.New(rdb, prefix, sharedcache.Options{}), clock)
	if out := output(t, c.call(t, testQuery, catalog.English)); out.Cached || f.hits.Load() != 2 {
		t.Fatalf("after the TTL: cached %v hits %d", out.Cached, f.hits.Load())
	}
}
