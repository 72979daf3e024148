package fetchpage

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/sharedcache"
	"github.com/toolhost/toolhost/internal/sharedcache/sharedcachetest"
	"github.com/toolhost/toolhost/tools"
)

// A page fetched by one replica is a cache hit on another that shares the
// Redis cache, with what the extraction cut; a PDF is not shared.
func TestSharedCacheServesAnotherReplica(t *testing.T) {
	rdb, prefix := sharedcachetest.Redis(t)
	f := newFixture(t, Config{IgnoreRobots: true})
	f.mux.HandleFunc("/p", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "shared body \u202e\x00 end")
	})
	replica := func() *tools.Executor {
		tool, err := New(Config{IgnoreRobots: true, AllowPrivate: []string{fixtureHost}}, WithResolver(f.dns),
			WithShared(sharedcache.New(rdb, prefix, sharedcache.Options{})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tool.Close)
		exec, err := tools.NewExecutor(tools.Options{}, tool)
		if err != nil {
			t.Fatal(err)
		}
		return exec
	}
	f.exec = replica()
	first := f.ok(f.call(map[string]any{"url": f.url("/p")}))
	f.exec = replica()
	second := f.ok(f.call(map[string]any{"url": f.url("/p")}))
	if f.hits.Load() != 1 || first.Cached || !second.Cached || second.Content != first.Content || !strings.HasPrefix(second.Content, "shared body") {
		t.Fatalf("hits %d; first %+v; second %+v", f.hits.Load(), first, second)
	}
}
