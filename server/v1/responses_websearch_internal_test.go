package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/server/v1/loop"
)

func TestCitationsMarkEachLinkToAResult(t *testing.T) {
	a := searchResult{URL: "https://a.example/x", Title: "A"}
	long := searchResult{URL: "https://a.example/x/y", Title: "A deeper"}
	b := searchResult{URL: "https://b.example", Title: "B"}
	cases := []struct {
		name    string
		text    string
		results []searchResult
		want    []string // cited URLs in text order
	}{
		{"none", "no links here", []searchResult{a}, nil},
		{"one", "see https://a.example/x.", []searchResult{a}, []string{a.URL}},
		{"twice", "https://a.example/x and again https://a.example/x", []searchResult{a}, []string{a.URL, a.URL}},
		{"longer link wins over its prefix", "read https://a.example/x/y now", []searchResult{a, long}, []string{long.URL}},
		{"text order", "[B](https://b.example) then [A](https://a.example/x)", []searchResult{a, b}, []string{b.URL, a.URL}},
		{"duplicate results", "https://b.example", []searchResult{b, b, b}, []string{b.URL}},
		{"empty url ignored", "anything", []searchResult{{URL: ""}}, nil},
		{"unicode before", "日本語 ✓ 🎉 https://b.example", []searchResult{b}, []string{b.URL}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := citations(tc.text, tc.results)
			if len(got) != len(tc.want) {
				t.Fatalf("citations %v, want %v", got, tc.want)
			}
			runes := []rune(tc.text)
			for i, c := range got {
				if c.URL != tc.want[i] || c.Type != "url_citation" || string(runes[c.StartIndex:c.EndIndex]) != c.URL {
					t.Errorf("citation %d = %+v over %q", i, c, tc.text)
				}
			}
		})
	}
}

// A long text full of links to many results: every link is cited once,
// indices inside the text.
func TestCitationsHostileText(t *testing.T) {
	var results []searchResult
	var sb strings.Builder
	for i := range 40 {
		u := "https://x.example/" + strings.Repeat("p", i)
		results = append(results, searchResult{URL: u})
		sb.WriteString("é " + u + " ")
	}
	text := strings.Repeat(sb.String(), 50)
	got := citations(text, results)
	if len(got) != 40*50 {
		t.Fatalf("%d citations", len(got))
	}
	n := utf8.RuneCountInString(text)
	for _, c := range got {
		if c.StartIndex < 0 || c.EndIndex > n || c.StartIndex >= c.EndIndex {
			t.Fatalf("citation %+v outside the text", c)
		}
	}
}

func TestSearchResultsOfACall(t *testing.T) {
	ok := loop.Call{Name: searchToolName, Status: loop.StatusDone, Structured: json.RawMessage(`{"results":[{"url":"https://a.example","title":"A"}]}`)}
	page := loop.Call{Name: openToolName, Status: loop.StatusDone, Structured: json.RawMessage(`{"url":"https://p.example","title":"P"}`)}
	failed := loop.Call{Name: searchToolName, Status: loop.StatusFailed, IsError: true, Structured: json.RawMessage(`{"results":[{"url":"https://a.example"}]}`)}
	garbage := loop.Call{Name: searchToolName, Status: loop.StatusDone, Structured: json.RawMessage(`[1,2`)}
	for name, tc := range map[string]struct {
		c    loop.Call
		want int
	}{"search": {ok, 1}, "page": {page, 1}, "failed": {failed, 0}, "garbage": {garbage, 0}} {
		if got := searchResults(tc.c); len(got) != tc.want {
			t.Errorf("%s: %v", name, got)
		}
	}
	it := newWebSearchCallItem(page, true)
	if it.Action.Type != "open_page" || it.Status != "completed" {
		t.Errorf("fetch_page item %+v", it)
	}
	if it := newWebSearchCallItem(failed, true); it.Status != "failed" || it.Action.Sources != nil {
		t.Errorf("failed item %+v", it)
	}
}

func TestUpstreamNameIsAFunctionNameAndOnePerPair(t *testing.T) {
	seen := map[string]string{}
	for _, pair := range [][2]string{{"crm", "lookup"}, {"", "flat"}, {strings.Repeat("n", 80), "f"}, {strings.Repeat("n", 80), "g"}, {"名前", "f"}, {"a.b", "c"}, {"a_b", "c"}, {"ns", strings.Repeat("\u202e", 30)}} {
		got := upstreamName(pair[0], pair[1])
		if pair[0] != "" && !functionNameOK.MatchString(got) {
			t.Errorf("%q is not a function name", got)
		}
		key := pair[0] + "\x00" + pair[1]
		if prev, ok := seen[got]; ok && prev != key {
			t.Errorf("%q stands for two pairs", got)
		}
		seen[got] = key
	}
	if upstreamName("crm", "lookup") != "crm__lookup" {
		t.Errorf("a plain join changed")
	}
}

func TestCustomInputOf(t *testing.T) {
	for args, want := range map[string]string{`{"input":"a\nb"}`: "a\nb", `not json`: "not json", `{"input":""}`: "", `{}`: ""} {
		if got := customInputOf(args); got != want {
			t.Errorf("customInputOf(%s) = %q", args, got)
		}
	}
}
