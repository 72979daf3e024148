package websearch

import (
	"strings"
	"testing"
)

func TestCleanURL(t *testing.T) {
	cases := []struct {
		in, want string // want "" = dropped
	}{
		{"https://example.com/a?utm_source=x&id=7&utm_medium=y", "https://example.com/a?id=7"},
		{"https://example.com/a?gclid=1&fbclid=2&msclkid=3", "https://example.com/a"},
		{"https://example.com/a?b=2&a=1&_ga=3", "https://example.com/a?b=2&a=1"},
		{"HTTPS://Example.COM:443/Path", "https://example.com/Path"},
		{"http://example.com:80/", "http://example.com/"},
		{"https://example.com:8443/x", "https://example.com:8443/x"},
		{"https://example.com/a#:~:text=hello", "https://example.com/a"},
		{"https://example.com/a#section", "https://example.com/a#section"},
		{"//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.nrel.gov%2Fpv%2F%3Futm_campaign%3Dz&amp;rut=abc", "https://www.nrel.gov/pv/"},
		{"https://duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FX&rut=1", "https://en.wikipedia.org/wiki/X"},
		{"https://www.google.com/url?q=https://example.com/p%3Fid%3D3&sa=U&ved=2ah", "https://example.com/p?id=3"},
		{"https://www.bing.com/ck/a?!&&p=abc&u=a1aHR0cHM6Ly9leGFtcGxlLmNvbS9iaW5nP3V0bV9zb3VyY2U9YmluZw&ntb=1", "https://example.com/bing"},
		{"https://r.search.yahoo.com/_ylt=A0/RV=2/RE=1/RO=10/RU=https%3a%2f%2fexample.com%2fyahoo/RK=2/RS=x-", "https://example.com/yahoo"},
		{"javascript:alert(1)", ""},
		{"ftp://example.com/file", ""},
		{"https://user:pw@example.com/", ""},
		{"https:///nohost", ""},
		{"https://duckduckgo.com/l/?uddg=javascript%3Aalert(1)", ""},
	}
	for _, c := range cases {
		u, ok := cleanURL(c.in)
		got := ""
		if ok {
			got = u.String()
		}
		if got != c.want {
			t.Errorf("cleanURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Tom &amp; Jerry", "Tom & Jerry"},
		{"Tom &amp;amp; Jerry", "Tom & Jerry"},
		{"<b>bold</b> and <strong>strong</strong>", "bold and strong"},
		{"H<sub>2</sub>O at 10<sup>-4</sup>", "H2O at 10-4"},
		{"line<br>break<br/>again", "line break again"},
		{"<p>one</p><p>two</p>", "one two"},
		{"  spaced \n\t out  ", "spaced out"},
		{"zero\u200bwidth\ufeff", "zerowidth"},
		{"<script>alert(1)</script>safe", "safe"},
		{"a < b and c > d", "a < b and c > d"},
		{"Glass&#8211;Glass &#x2014; ok", "Glass–Glass — ok"},
		{"", ""},
	}
	for _, c := range cases {
		if got := cleanText(c.in, 400); got != c.want {
			t.Errorf("cleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("字", 500)
	got := cleanText(long, 10)
	if got != strings.Repeat("字", 9)+"…" {
		t.Errorf("cap: %q", got)
	}
}

func TestCleanDate(t *testing.T) {
	cases := []struct{ in, want string }{
		{"2023-04-12T00:00:00", "2023-04-12T00:00:00Z"},
		{"2024-05-20T09:30:00+02:00", "2024-05-20T07:30:00Z"},
		{"2023-04-12T00:00:00.0000000", "2023-04-12T00:00:00Z"},
		{"2024-01-08", "2024-01-08T00:00:00Z"},
		{"Wed, 06 Mar 2024 18:40:08 GMT", "2024-03-06T18:40:08Z"},
		{"January 28, 2023", "2023-01-28T00:00:00Z"},
		{"3 days ago", ""},
		{"0001-01-01T00:00:00", ""},
		{"", ""},
	}
	for _, c := range cases {
		if got := cleanDate(c.in); got != c.want {
			t.Errorf("cleanDate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDuplicatesMergeKeepingFirstRank(t *testing.T) {
	hits := []hit{
		{Title: "A", URL: "https://www.example.com/page?utm_source=x", Snippet: ""},
		{Title: "B", URL: "https://other.test/"},
		{Title: "A again", URL: "http://example.com/page/", Snippet: "from the copy", Published: "2024-01-01"},
		{Title: "C", URL: "https://third.test/x"},
	}
	got := clean(hits, query{Count: 2})
	if len(got) != 2 || got[0].Title != "A" || got[0].Snippet != "from the copy" || got[0].PublishedAt != "2024-01-01T00:00:00Z" || got[1].Title != "B" {
		t.Fatalf("%+v", got)
	}
}

func TestNormalizeDomain(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Example.COM", "example.com"},
		{"https://www.example.com/path?q=1", "example.com"},
		{"*.example.com", "example.com"},
		{"example.com.", "example.com"},
		{"example.com:8080", "example.com"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"exa mple.com", ""},
		{"-bad.com", ""},
		{"", ""},
		{"a..b", ""},
	}
	for _, c := range cases {
		got, err := normalizeDomain(c.in)
		if (err != nil) != (c.want == "") || got != c.want {
			t.Errorf("normalizeDomain(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func FuzzCleanURL(f *testing.F) {
	for _, s := range []string{"https://example.com/a?utm_source=x", "//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.test", "https://www.bing.com/ck/a?u=a1aHR0cHM6Ly9hLnRlc3Q", "http://[::1]:80/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := cleanURL(s)
		if !ok {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("scheme %q from %q", u.Scheme, s)
		}
		for _, p := range strings.Split(u.RawQuery, "&") {
			name, _, _ := strings.Cut(p, "=")
			if strings.HasPrefix(strings.ToLower(name), "utm_") {
				t.Fatalf("tracking parameter kept in %q from %q", u, s)
			}
		}
	})
}

func FuzzParseHTMLResults(f *testing.F) {
	f.Add([]byte(`<div id="links"><div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.test">t</a><a class="result__snippet">s</a></div></div>`))
	f.Add([]byte(`<div class="no-results">No results.</div>`))
	f.Add([]byte(`<div class="anomaly-modal__mask"></div>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		hits, err := parseHTMLResults(b)
		if err == nil {
			for _, h := range hits {
				if h.URL == "" {
					t.Fatal("hit without URL")
				}
			}
			clean(hits, query{Count: 20})
		}
	})
}
