package websearch

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/tools"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestInputErrorsHaveStableCodes(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindSearXNG), modeEmpty)
	h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
	cases := []struct {
		name, args, code, inMessage string
	}{
		{"empty query", `{"query":""}`, CodeInvalidInput, "query is empty"},
		{"blank query", `{"query":"  \t "}`, CodeInvalidInput, "query is empty"},
		{"401 characters", `{"query":"` + strings.Repeat("a", 401) + `"}`, CodeQueryTooLong, "401 characters; the limit is 400"},
		{"401 CJK characters", `{"query":"` + strings.Repeat("钙", 401) + `"}`, CodeQueryTooLong, "401 characters"},
		{"bad site", `{"query":"x","site":"not a domain"}`, CodeInvalidInput, "site:"},
		{"bad allowed domain", `{"query":"x","allowed_domains":["ok.test","-bad-.test"]}`, CodeInvalidInput, "allowed_domains[1]"},
		{"bad lang", `{"query":"x","lang":"!!"}`, CodeInvalidInput, "lang"},
		{"count above 20 (schema)", `{"query":"x","count":21}`, tools.CodeInvalidArgs, "maximum"},
		{"unknown freshness (schema)", `{"query":"x","freshness":"hour"}`, tools.CodeInvalidArgs, "freshness"},
		{"unknown field (schema)", `{"query":"x","base_url":"http://127.0.0.1:1"}`, tools.CodeInvalidArgs, "base_url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := h.call(t, c.args, catalog.English)
			if o.Code != c.code || !strings.Contains(o.Message, c.inMessage) {
				t.Fatalf("code %s message %q; want %s containing %q", o.Code, o.Message, c.code, c.inMessage)
			}
		})
	}
	if f.hits.Load() != 0 {
		t.Errorf("a refused call reached the provider %d times", f.hits.Load())
	}
	// 400 characters exactly is fine.
	if o := h.call(t, `{"query":"`+strings.Repeat("a", 400)+`"}`, catalog.English); o.IsError {
		t.Fatalf("400 characters refused: %s", o.Message)
	}
}

func TestNoProviderConfigured(t *testing.T) {
	cases := []struct {
		name      string
		cfg       Config
		inMessage string
	}{
		{"explicitly empty list", Config{Providers: []ProviderConfig{}}, `"search.providers"`},
		{"key variable unset", Config{Providers: []ProviderConfig{{Kind: KindBrave, APIKeyEnv: "TOOLHOST_TEST_UNSET_BRAVE_KEY"}}}, "TOOLHOST_TEST_UNSET_BRAVE_KEY is not set"},
		{"no key at all", Config{Providers: []ProviderConfig{{Kind: KindTavily}}}, "tavily: no api_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.ResolveKeys(func(string) (string, bool) { return "", false })
			h := newHarness(t, c.cfg)
			o := h.call(t, testQuery, catalog.English)
			if o.Code != CodeNoProvider || !strings.Contains(o.Message, c.inMessage) {
				t.Fatalf("%s: %s", o.Code, o.Message)
			}
		})
	}
}

func TestResolveKeysFromLookup(t *testing.T) {
	cfg := Config{Providers: []ProviderConfig{{Kind: KindBrave, APIKeyEnv: "K"}, {Kind: KindTavily, APIKey: "inline", APIKeyEnv: "K"}}}
	cfg.ResolveKeys(func(name string) (string, bool) { return " from-env\n", name == "K" })
	if cfg.Providers[0].APIKey != "from-env" || cfg.Providers[1].APIKey != "inline" {
		t.Fatalf("%+v", cfg.Providers)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		p    []ProviderConfig
		want string
	}{
		{"unknown kind", []ProviderConfig{{Kind: "google"}}, "unknown kind"},
		{"searxng without base_url", []ProviderConfig{{Kind: "searxng"}}, "needs base_url"},
		{"ftp base_url", []ProviderConfig{{Kind: "searxng", BaseURL: "ftp://x.test"}}, "http or https"},
		{"base_url with query", []ProviderConfig{{Kind: "searxng", BaseURL: "http://x.test/?a=1"}}, "without user, query"},
		{"duplicate names", []ProviderConfig{{Kind: "html"}, {Kind: "duckduckgo"}}, "duplicate name"},
		{"negative timeout", []ProviderConfig{{Kind: "html", Timeout: duration.Duration(-time.Second)}}, "negative timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(Config{Providers: c.p}, Deps{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestDefaultIsTheNoKeyHTMLProvider(t *testing.T) {
	tool, err := New(Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if p := tool.Providers(); len(p) != 1 || p[0] != "html" || tool.fingerprint != "html="+defaultHTMLURL {
		t.Fatalf("providers %v fingerprint %q", p, tool.fingerprint)
	}
}

func TestRenderingFollowsTheCallerLanguage(t *testing.T) {
	f := newFixture(t, engineByKind(t, KindSearXNG), modeSuccess)
	h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: noCache()})
	cases := []struct {
		lang          catalog.Lang
		head, summary string
		published     string
	}{
		{catalog.Chinese, "网页搜索「perovskite encapsulation stability」，5 条：\n\n1. Encapsulation strategies for stable perovskite solar cells\n   https://www.nature.com/articles/s41560-023-01234-5\n   发布时间：2023-04-12T00:00:00Z\n   We review", "web 5 条", "发布时间"},
		{catalog.English, "Web search \"perovskite encapsulation stability\", 5 results:\n\n1. Encapsulation strategies for stable perovskite solar cells\n   https://www.nature.com/articles/s41560-023-01234-5\n   Published: 2023-04-12T00:00:00Z\n   We review", "web: 5 results", "Published:"},
	}
	for _, c := range cases {
		t.Run(string(c.lang), func(t *testing.T) {
			o := h.call(t, testQuery, c.lang)
			if !strings.Contains(o.Text, c.head) || o.Summary != c.summary {
				t.Fatalf("text %q summary %q", o.Text, o.Summary)
			}
			if content, ok := tools.Unfence(o.Text); !ok || !strings.HasPrefix(o.Text, "<untrusted-data boundary=") || !strings.HasPrefix(content, c.head[:10]) {
				t.Errorf("results not fenced as untrusted: %q", o.Text[:80])
			}
		})
	}
	if s := summary(1, catalog.English); s != "web: 1 result" {
		t.Errorf("singular %q", s)
	}
}

func TestAPIKeysNeverLeak(t *testing.T) {
	for _, kind := range []string{KindBrave, KindTavily} {
		t.Run(kind, func(t *testing.T) {
			eng := engineByKind(t, kind)
			f := newFixture(t, eng, modeSuccess)
			pc := f.providerConfig("", 10*time.Second)
			wrong := pc
			wrong.Name = "wrongkey"
			wrong.APIKey = eng.key + "-WRONG" // the fixture echoes a bad key back
			h := newHarness(t, Config{Providers: []ProviderConfig{wrong, pc}, Cache: noCache()})
			o := h.call(t, testQuery, catalog.English)
			if output(t, o).Provider != kind {
				t.Fatalf("provider %q", output(t, o).Provider)
			}
			// All providers wrong: the failure text and structure too.
			h2 := newHarness(t, Config{Providers: []ProviderConfig{wrong}, Cache: noCache()})
			o2 := h2.call(t, testQuery, catalog.English)
			if o2.Code != CodeProviderDown || !strings.Contains(o2.Message, "HTTP 401") {
				t.Fatalf("%s: %s", o2.Code, o2.Message)
			}
			for where, s := range map[string]string{
				"text": o.Text, "structured": string(o.Structured), "error": o2.Message + string(o2.Structured),
				"logs": h.logs.String() + h2.logs.String(), "spec": mustJSON(t, h.tool.Spec()),
			} {
				if strings.Contains(s, eng.key) {
					t.Errorf("API key in %s: %s", where, s)
				}
			}
			if kind == KindBrave && !strings.Contains(o2.Message, "[redacted]") {
				t.Errorf("echoed key not redacted: %s", o2.Message)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The spec is the contract: a change must be deliberate (go test -update).
func TestSpecSnapshot(t *testing.T) {
	tool, err := New(Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	spec := tool.Spec()
	if err := spec.Check(); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "spec.golden")
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if string(want) != string(b)+"\n" {
		t.Fatalf("spec changed; if on purpose, run go test ./tools/websearch -run TestSpecSnapshot -update\n%s", b)
	}
	if spec.PaidUnit != "search_call" || !spec.Annotations.ReadOnly || !spec.Annotations.Idempotent || !spec.Annotations.OpenWorld || spec.SideEffect != catalog.SideEffectNone {
		t.Errorf("spec %+v", spec)
	}
}

// structuredContent must match the published output schema, fresh and cached.
func TestOutputMatchesItsSchema(t *testing.T) {
	tool, err := New(Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.Spec().Output))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("out.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("out.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{modeSuccess, modeEmpty} {
		f := newFixture(t, engineByKind(t, KindSearXNG), mode)
		h := newHarness(t, Config{Providers: []ProviderConfig{f.providerConfig("", 10*time.Second)}, Cache: CacheConfig{MemoryOnly: true}})
		for _, want := range []bool{false, true} {
			o := h.call(t, testQuery, catalog.English)
			if output(t, o).Cached != want {
				t.Fatalf("%s: cached %v", mode, !want)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(o.Structured))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s cached=%v: %v\n%s", mode, want, err, o.Structured)
			}
		}
	}
}
