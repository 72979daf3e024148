package websearch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
)

// The mixed fixture ignores every filter, as many engines do; the tool must
// filter anyway.
func TestDomainFiltersApplyWhenTheEngineIgnoresThem(t *testing.T) {
	cases := []struct {
		name      string
		args      string
		wantHosts []string
		wantQ     string // what the engine was asked
	}{
		{"allowed covers subdomains, not look-alikes",
			`{"query":"solar module reliability","allowed_domains":["example.org"]}`,
			[]string{"example.org", "docs.example.org"}, "solar module reliability site:example.org"},
		{"blocked covers subdomains",
			`{"query":"solar module reliability","blocked_domains":["spam.test"]}`,
			[]string{"example.org", "docs.example.org", "badexample.org", "example.org.evil.test", "www.example.com", "xn--bcher-kva.example"},
			"solar module reliability -site:spam.test"},
		{"site given as a URL with www and upper case",
			`{"query":"solar module reliability","site":"https://WWW.Example.com/some/page"}`,
			[]string{"www.example.com"}, "solar module reliability site:example.com"},
		{"internationalized domain",
			`{"query":"solar module reliability","allowed_domains":["bücher.example"]}`,
			[]string{"xn--bcher-kva.example"}, "solar module reliability site:xn--bcher-kva.example"},
		{"several allowed, one blocked inside them",
			`{"query":"solar module reliability","allowed_domains":["example.org","spam.test"],"blocked_domains":["cdn.spam.test","docs.example.org"]}`,
			[]string{"example.org", "spam.test"}, "solar module reliability -site:cdn.spam.test -site:docs.example.org"},
		{"site and allowed together must both hold",
			`{"query":"solar module reliability","site":"example.org","allowed_domains":["docs.example.org","example.com"]}`,
			[]string{"docs.example.org"}, "solar module reliability site:example.org"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, engineByKind(t, KindSearXNG), modeMixed)
			h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
			out := output(t, h.call(t, c.args, catalog.English))
			var hosts []string
			for _, r := range out.Results {
				hosts = append(hosts, strings.SplitN(strings.TrimPrefix(r.URL, "https://"), "/", 2)[0])
			}
			if strings.Join(hosts, " ") != strings.Join(c.wantHosts, " ") {
				t.Errorf("hosts %v, want %v", hosts, c.wantHosts)
			}
			if q := f.lastRequest().Query["q"][0]; q != c.wantQ {
				t.Errorf("engine asked %q, want %q", q, c.wantQ)
			}
		})
	}
}

// Tavily filters natively; the request carries the lists, and the answer is
// filtered again because a fixture (or a bug upstream) may not honour them.
func TestTavilyGetsDomainListsAndIsStillFiltered(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindTavily), modeSuccess)
	h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
	out := output(t, h.call(t, `{"query":"perovskite","allowed_domains":["nature.com"]}`, catalog.English))
	if len(out.Results) != 1 || out.Results[0].Source != "nature.com" {
		t.Fatalf("results %+v", out.Results)
	}
	var body struct {
		Include []string `json:"include_domains"`
	}
	_ = json.Unmarshal(f.lastRequest().Body, &body)
	if len(body.Include) != 1 || body.Include[0] != "nature.com" {
		t.Errorf("include_domains %v", body.Include)
	}
}

// Unicode spellings of a host meet the lists in their IDNA form: fullwidth
// letters, the ideographic full stop and a trailing dot do not slip past a
// blocked domain, and a host that does not normalise is dropped.
func TestDomainFiltersSeeHostsInTheirIDNAForm(t *testing.T) {
	q := query{Blocked: []string{"blocked.test"}}
	for _, host := range []string{"ＢＬＯＣＫＥＤ.test", "blocked。test", "blocked.test。", "BLOCKED.TEST.", "www.ｂｌｏｃｋｅｄ．test", "a\u00adb.blocked.test", "bad_host\x00.example"} {
		if domainAllowed(host, q) {
			t.Errorf("%q passed blocked_domains [blocked.test]", host)
		}
	}
	if !domainAllowed("example.org", q) {
		t.Error("example.org was dropped")
	}
	for _, d := range []string{"ＢＬＯＣＫＥＤ.test", "blocked。test", "blocked.test。"} {
		if got, err := normalizeDomain(d); err != nil || got != "blocked.test" {
			t.Errorf("normalizeDomain(%q) = %q, %v", d, got, err)
		}
	}
}
