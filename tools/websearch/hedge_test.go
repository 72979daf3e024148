package websearch

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/tools"
)

// joins makes h's tool tell the returned channel each time a caller
// waits for a search in flight; room for n.
func joins(h *harness, n int) <-chan struct{} {
	ch := make(chan struct{}, n)
	h.tool.joined = func() { tell(ch) }
	return ch
}

func TestHedgingAsksTheNextProviderWhenTheCurrentIsSlow(t *testing.T) {
	slow := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	slow.hold() // until the test ends: it never answers in time
	fast := newFixture(t, engineByKind(t, KindBrave), modeSuccess)
	h := newHarness(t, Config{
		Providers:  []ProviderConfig{slow.providerConfig("slow", 8*time.Second), fast.providerConfig("fast", 8*time.Second)},
		Cache:      noCache(),
		HedgeDelay: duration.Duration(100 * time.Millisecond),
	})
	start := time.Now()
	o := h.call(t, testQuery, catalog.English)
	out := output(t, o)
	if out.Provider != "fast" || o.Units != 1 {
		t.Fatalf("provider %q units %v", out.Provider, o.Units)
	}
	// Not the slow provider's 8 s timeout: the fast one was asked after
	// 100 ms.
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("hedged search took %v", took)
	}
	if slow.hits.Load() != 1 || fast.hits.Load() != 1 {
		t.Fatalf("hits slow %d fast %d", slow.hits.Load(), fast.hits.Load())
	}
	// The loser's request is cancelled (as the call returns; the fixture
	// sees it a moment later), not left running.
	slow.waitCancelled(t, "the slow provider's request to be cancelled")
	if n := slow.cancelled.Load(); n != 1 {
		t.Fatalf("%d slow requests cancelled, want 1", n)
	}
	// A cancelled loser is not a failing provider: it stays first.
	slow.setMode(modeSuccess)
	if p := output(t, h.call(t, testQuery, catalog.English)).Provider; p != "slow" {
		t.Fatalf("after the race the slow provider was demoted: %q answered", p)
	}
}

func TestHedgeDelayFollowsTheProvidersRecentP90(t *testing.T) {
	var l latencies
	if _, ok := l.p90(); ok {
		t.Fatal("p90 without samples")
	}
	for i := 1; i <= 20; i++ {
		l.add(time.Duration(i) * 10 * time.Millisecond)
	}
	if p, ok := l.p90(); !ok || p != 180*time.Millisecond {
		t.Fatalf("p90 %v %v", p, ok)
	}
	tool := &Tool{hedge: defaultHedgeDelay}
	s := &slot{}
	if d := tool.hedgeDelay(s); d != defaultHedgeDelay {
		t.Fatalf("default hedge delay %v", d)
	}
	for range minLatencySamples {
		s.lat.add(time.Millisecond)
	}
	if d := tool.hedgeDelay(s); d != minHedgeDelay {
		t.Fatalf("a fast provider's hedge delay %v, want the floor %v", d, minHedgeDelay)
	}
	tool.hedge = -1
	if d := tool.hedgeDelay(s); d != 0 {
		t.Fatalf("hedging off: %v", d)
	}
}

func TestOverallDeadlineBoundsTheSearch(t *testing.T) {
	var fx []*fixture
	var pcs []ProviderConfig
	for i, kind := range []string{KindSearXNG, KindBrave, KindTavily} {
		f := newFixture(t, engineByKind(t, kind), modeSlow)
		fx = append(fx, f)
		pcs = append(pcs, f.providerConfig(string(rune('a'+i)), 8*time.Second))
	}
	h := newHarness(t, Config{Providers: pcs, Cache: noCache(), Deadline: duration.Duration(400 * time.Millisecond), HedgeDelay: duration.Duration(100 * time.Millisecond)})
	start := time.Now()
	o := h.call(t, testQuery, catalog.English)
	// Three providers of 8 s each used to mean 24 s.
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("search took %v", took)
	}
	if !o.IsError || o.Code != CodeTimeout || o.Units != 0 {
		t.Fatalf("%s: %s (units %v)", o.Code, o.Message, o.Units)
	}
	for _, name := range []string{"a", "b", "c"} {
		if !strings.Contains(o.Message, name+": timeout") {
			t.Errorf("message does not say %s timed out: %s", name, o.Message)
		}
	}
	for _, f := range fx {
		f.waitCancelled(t, "every request to be cancelled")
		if n := f.cancelled.Load(); n != 1 {
			t.Fatalf("%d requests cancelled on one engine, want 1", n)
		}
	}
}

func TestFailureStartsTheNextProviderWithoutWaitingForTheHedge(t *testing.T) {
	bad := newFixture(t, engineByKind(t, KindSearXNG), mode5xx)
	good := newFixture(t, engineByKind(t, KindBrave), modeSuccess)
	h := newHarness(t, Config{
		Providers:  []ProviderConfig{bad.providerConfig("bad", 8*time.Second), good.providerConfig("good", 8*time.Second)},
		Cache:      noCache(),
		HedgeDelay: duration.Duration(time.Hour),
	})
	start := time.Now()
	if p := output(t, h.call(t, testQuery, catalog.English)).Provider; p != "good" {
		t.Fatalf("provider %q", p)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v: the failure did not start the next provider", took)
	}
}

func TestIdenticalConcurrentSearchesMakeOneEngineRequest(t *testing.T) {
	eng := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	eng.hold()
	h := newHarness(t, Config{Providers: []ProviderConfig{eng.providerConfig("searx", 8*time.Second)}, Cache: CacheConfig{MemoryOnly: true}})
	const n = 5
	joined := joins(h, n)
	outs := make([]*tools.Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outs[i] = h.call(t, testQuery, catalog.English) })
	}
	// The engine answers only once every caller waits for the search in
	// flight: none of them can be answered from the cache.
	for range n {
		waitOn(t, joined, "every caller to wait for the search")
	}
	eng.release()
	wg.Wait()
	var units float64
	fresh := 0
	for _, o := range outs {
		out := output(t, o)
		if len(out.Results) != 5 || out.Provider != "searx" {
			t.Fatalf("results %d provider %q", len(out.Results), out.Provider)
		}
		units += o.Units
		if !out.Cached {
			fresh++
		}
	}
	if eng.hits.Load() != 1 || units != 1 || fresh != 1 {
		t.Fatalf("engine hits %d, units %v, uncached answers %d; want 1, 1, 1", eng.hits.Load(), units, fresh)
	}
}

func TestSharedSearchSurvivesTheFirstCallerLeaving(t *testing.T) {
	eng := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	eng.hold()
	h := newHarness(t, Config{Providers: []ProviderConfig{eng.providerConfig("searx", 8*time.Second)}, Cache: noCache()})
	joined := joins(h, 2)
	c, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := make(chan *tools.Outcome)
	go func() {
		out, _ := h.exec.Execute(c, tools.Proposal{Tool: "web_search", Args: json.RawMessage(testQuery), CallID: "leaver", Lang: catalog.English})
		first <- out
	}()
	eng.waitArrival(t, "the first caller's search to reach the engine")
	waitOn(t, joined, "the first caller to wait for its search")
	second := make(chan *tools.Outcome)
	go func() { second <- h.call(t, testQuery, catalog.English) }()
	waitOn(t, joined, "the second caller to share the search")
	cancel()
	if o := <-first; !o.IsError {
		t.Fatalf("the cancelled caller got a result: %+v", o)
	}
	// The search outlives the caller that started it: the engine answers
	// after that caller left.
	eng.release()
	o := <-second
	if out := output(t, o); len(out.Results) != 5 {
		t.Fatalf("second caller: %+v", out)
	}
	if eng.hits.Load() != 1 || eng.cancelled.Load() != 0 {
		t.Fatalf("engine hits %d cancelled %d", eng.hits.Load(), eng.cancelled.Load())
	}
}

func TestRenamedProviderIsNamedAsItIsNow(t *testing.T) {
	eng := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	dir := t.TempDir()
	old := eng.providerConfig("old-name", 8*time.Second)
	h1 := newHarness(t, Config{Providers: []ProviderConfig{old}, Cache: CacheConfig{Dir: dir}})
	if p := output(t, h1.call(t, testQuery, catalog.English)).Provider; p != "old-name" {
		t.Fatalf("provider %q", p)
	}
	renamed := old
	renamed.Name = "new-name"
	h2 := newHarness(t, Config{Providers: []ProviderConfig{renamed}, Cache: CacheConfig{Dir: dir}})
	out := output(t, h2.call(t, testQuery, catalog.English))
	if !out.Cached || out.Provider != "new-name" || eng.hits.Load() != 1 {
		t.Fatalf("cached %v provider %q hits %d", out.Cached, out.Provider, eng.hits.Load())
	}
	// Another engine behind the same name is another identity: no answer
	// of the first one is served for it.
	other := newFixture(t, engineByKind(t, KindSearXNG), modeEmpty)
	moved := other.providerConfig("new-name", 8*time.Second)
	h3 := newHarness(t, Config{Providers: []ProviderConfig{moved}, Cache: CacheConfig{Dir: dir}})
	if out := output(t, h3.call(t, testQuery, catalog.English)); out.Cached || other.hits.Load() != 1 {
		t.Fatalf("another engine was served the first one's answer: cached %v", out.Cached)
	}
}

func TestDomainFiltersRefuseWildcardsAndIPLiterals(t *testing.T) {
	eng := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	h := newHarness(t, Config{Providers: []ProviderConfig{eng.providerConfig("searx", 8*time.Second)}, Cache: noCache()})
	for _, args := range []string{
		`{"query":"gophers","site":"*.example.org"}`,
		`{"query":"gophers","allowed_domains":["example.com","*.example.org"]}`,
		`{"query":"gophers","blocked_domains":["*"]}`,
		`{"query":"gophers","site":"127.0.0.1"}`,
		`{"query":"gophers","allowed_domains":["[::1]"]}`,
		`{"query":"gophers","allowed_domains":["https://10.0.0.1/path"]}`,
		`{"query":"gophers","blocked_domains":["0x7f.1"]}`,
		`{"query":"gophers","blocked_domains":["2130706433"]}`,
		`{"query":"gophers","site":"192.168.1.1:8080"}`,
	} {
		o := h.call(t, args, catalog.English)
		if !o.IsError || o.Code != CodeInvalidInput {
			t.Errorf("%s: %s %s", args, o.Code, o.Message)
		}
	}
	if eng.hits.Load() != 0 {
		t.Fatalf("a refused call reached the engine")
	}
	for _, args := range []string{
		`{"query":"gophers","site":"example.org"}`,
		`{"query":"gophers","allowed_domains":["https://www.example.org/path","münchen.de"]}`,
		`{"query":"gophers","blocked_domains":["web3.example"]}`,
	} {
		if o := h.call(t, args, catalog.English); o.IsError {
			t.Errorf("%s: %s %s", args, o.Code, o.Message)
		}
	}
}

func TestFailureCarriesItsCodeInStructuredContent(t *testing.T) {
	eng := newFixture(t, engineByKind(t, KindSearXNG), mode5xx)
	h := newHarness(t, Config{Providers: []ProviderConfig{eng.providerConfig("searx", 8*time.Second)}, Cache: noCache()})
	o := h.call(t, testQuery, catalog.English)
	var body struct {
		Error struct {
			Code, Message string
			Providers     []map[string]any
		}
	}
	if err := json.Unmarshal(o.Structured, &body); err != nil || body.Error.Code != CodeProviderDown || body.Error.Message == "" || len(body.Error.Providers) != 1 {
		t.Fatalf("structured %s (%v)", o.Structured, err)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(h.tool.Spec().Output, &schema); err != nil || schema.Properties["error"] == nil {
		t.Fatalf("the output schema does not document error: %v", err)
	}
}
