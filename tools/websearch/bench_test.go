package websearch

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

func BenchmarkClean20Hits(b *testing.B) {
	hits := make([]hit, 20)
	for i := range hits {
		hits[i] = hit{
			Title:     fmt.Sprintf("Result <b>%d</b> &amp; more", i),
			URL:       fmt.Sprintf("//duckduckgo.com/l/?uddg=https%%3A%%2F%%2Fwww.site%d.test%%2Fpage%%3Futm_source%%3Dx%%26id%%3D%d&rut=abc", i%15, i),
			Snippet:   "A <b>snippet</b> with &quot;entities&quot; and <sub>markup</sub> that is long enough to be realistic for a search engine result page.",
			Published: "2024-05-20T09:30:00",
		}
	}
	q := query{Count: 20, Blocked: []string{"spam.test"}}
	b.ReportAllocs()
	for b.Loop() {
		clean(hits, q)
	}
}

func BenchmarkParseHTMLResultsPage(b *testing.B) {
	page := readTestdata(b, "html/success.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseHTMLResults(page); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallCacheHit is a whole pipeline call answered from the cache.
func BenchmarkCallCacheHit(b *testing.B) {
	f := newFixture(b, engineByKind(b, KindSearXNG), modeSuccess)
	tool, err := New(Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: CacheConfig{MemoryOnly: true}}, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	exec, err := tools.NewExecutor(tools.Options{}, tool)
	if err != nil {
		b.Fatal(err)
	}
	p := tools.Proposal{Tool: "web_search", Args: json.RawMessage(testQuery), Lang: catalog.English}
	if o, _ := exec.Execute(b.Context(), p); o.IsError {
		b.Fatal(o.Message)
	}
	b.ReportAllocs()
	for b.Loop() {
		if o, _ := exec.Execute(b.Context(), p); o.IsError || o.Units != 0 {
			b.Fatal("not a cache hit")
		}
	}
}

// BenchmarkCallSearXNGFixture is a whole pipeline call that reaches a
// SearXNG-format engine on loopback (no cache).
func BenchmarkCallSearXNGFixture(b *testing.B) {
	f := newFixture(b, engineByKind(b, KindSearXNG), modeSuccess)
	tool, err := New(Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()}, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	exec, err := tools.NewExecutor(tools.Options{}, tool)
	if err != nil {
		b.Fatal(err)
	}
	p := tools.Proposal{Tool: "web_search", Args: json.RawMessage(testQuery), Lang: catalog.English}
	b.ReportAllocs()
	for b.Loop() {
		if o, _ := exec.Execute(b.Context(), p); o.IsError {
			b.Fatal(o.Message)
		}
	}
}
