package fetchpage

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestExtractHTMLKeepsStructure(t *testing.T) {
	page, _ := url.Parse("https://example.org/blog/post.html")
	cases := []struct {
		name    string
		html    string
		want    []string
		notWant []string
	}{
		{
			name: "base href decides relative links",
			html: `<html><head><base href="https://cdn.example.net/docs/"></head><body><article><p>` + strings.Repeat("Burrows are long and winding tunnels. ", 12) +
				`See <a href="guide.html">the guide</a> and <a href="javascript:alert(1)">this trick</a>.</p></article></body></html>`,
			want:    []string{"[the guide](https://cdn.example.net/docs/guide.html)", "this trick"},
			notWant: []string{"javascript:"},
		},
		{
			name: "code language from the highlighter's class",
			html: `<html><body><article><p>` + strings.Repeat("Here is how to print in Python, step by step. ", 10) + `</p>
<div class="highlight highlight-source-python"><pre>for i in range(3):
    print(i)
</pre></div><p>` + strings.Repeat("That prints three numbers, one per line. ", 8) + `</p></article></body></html>`,
			want: []string{"```python\nfor i in range(3):\n    print(i)"},
		},
		{
			// Pygments' codehilite: every token a <span>; the extractor
			// joined the lines into one.
			name: "line breaks of highlighted code",
			html: `<html><body><article><p>` + strings.Repeat("I took another look at the test that failed in the suite. ", 10) + `</p>
<div class="codehilite"><pre><span class="kn">import</span> <span class="nn">os</span>

<span class="kn">from</span> <span class="nn">django.conf</span> <span class="kn">import</span> <span class="n">settings</span>
<span class="kn">from</span> <span class="nn">selenium</span> <span class="kn">import</span> <span class="n">webdriver</span>
</pre></div><p>` + strings.Repeat("It seemed pretty isolated to me at the time. ", 8) + `</p></article></body></html>`,
			want: []string{"```\nimport os\n\nfrom django.conf import settings\nfrom selenium import webdriver\n```"},
		},
		{
			name:    "short page falls back to the body without navigation",
			html:    `<html><head><title>Hi</title></head><body><nav><a href="/a">Menu item</a></nav><p>Just one short line.</p><footer>Footer junk</footer></body></html>`,
			want:    []string{"Just one short line."},
			notWant: []string{"Menu item", "Footer junk"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			art, err := ExtractHTML([]byte(c.html), page, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(art.Markdown, w) {
					t.Errorf("markdown lacks %q:\n%s", w, art.Markdown)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(art.Markdown, w) || strings.Contains(art.Text, w) {
					t.Errorf("output keeps %q:\n%s", w, art.Markdown)
				}
			}
		})
	}
}

func TestFetchDecodesContentEncodings(t *testing.T) {
	body := []byte(strings.Repeat("the same plain text, encoded on the wire; ", 50))
	var zl, raw bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(body)
	zw.Close()
	fw, _ := flate.NewWriter(&raw, flate.DefaultCompression)
	fw.Write(body)
	fw.Close()
	cases := []struct {
		enc  string
		wire []byte
	}{
		{"gzip", gzipBytes(body)},
		{"br", brotliBytes(body)},
		{"deflate", zl.Bytes()},
		{"deflate", raw.Bytes()},
		{"identity", body},
	}
	f := newFixture(t, Config{IgnoreRobots: true})
	for i, c := range cases {
		path := fmt.Sprintf("/enc%d", i)
		f.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if ae := r.Header.Get("Accept-Encoding"); !strings.Contains(ae, "br") || !strings.Contains(ae, "gzip") {
				t.Errorf("Accept-Encoding %q", ae)
			}
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", c.enc)
			w.Write(c.wire)
		})
		o := f.ok(f.call(map[string]any{"url": f.url(path), "max_length": 200000}))
		if o.Content != string(body) {
			t.Errorf("%s (#%d): content differs", c.enc, i)
		}
	}
	f.mux.HandleFunc("/zstd", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "zstd")
		w.Write([]byte("(R\xb5/..."))
	})
	if out := f.call(map[string]any{"url": f.url("/zstd")}); out.Code != CodeUnsupportedContent {
		t.Fatalf("unknown encoding: %s %s", out.Code, out.Message)
	}
}

// FuzzExtractHTML feeds arbitrary bytes through the HTML path the tool runs
// (UTF-8 repair, extraction, Markdown). It must not panic, must return valid
// UTF-8, and must finish (go test -fuzz bounds each input's time).
//
//	go test ./tools/fetchpage -run '^$' -fuzz FuzzExtractHTML -fuzztime 60s
func FuzzExtractHTML(f *testing.F) {
	for _, seed := range []string{
		articleHTML,
		"",
		"<",
		"<html><body><p>x</p></body></html>",
		"<table><tr><td><table><tr><td>nested</td></tr></table></td></tr></table>",
		"<pre><code class=language-go>func main() {}</code></pre>",
		"<a href='javascript:alert(1)'>x</a><img src=//evil/x.png alt=\"]\\\")(\">",
		"<base href='::::'><a href='%zz'>bad</a>",
		"<ul><li><ol><li><ul><li>deep</li></ul></li></ol></li></ul>",
		"<svg><script>alert(1)</script></svg><math><mi>x</mi></math>",
		"\xff\xfe<\x00h\x00t\x00m\x00l\x00>",
		"<meta charset=gbk><p>\xb5\xd8\xca\xf3</p>",
	} {
		f.Add([]byte(seed))
	}
	page, _ := url.Parse("https://example.org/a/b")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256<<10 {
			return
		}
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
		for _, md := range []bool{true, false} {
			art, err := ExtractHTML(data, page, md)
			if err != nil {
				continue
			}
			if !utf8.ValidString(art.Markdown) || !utf8.ValidString(art.Text) || !utf8.ValidString(art.Title) {
				t.Fatalf("invalid UTF-8 out of %q", data)
			}
			if md && strings.Contains(art.Markdown, "javascript:") && !strings.Contains(string(data), "javascript:") {
				t.Fatalf("javascript: link invented")
			}
		}
	})
}

// TestExtractHTMLConcurrently guards the shared Markdown converter and the
// extractor's package state: calls in parallel give the same result (run
// with -race).
func TestExtractHTMLConcurrently(t *testing.T) {
	page, _ := url.Parse("https://example.org/a")
	want, err := ExtractHTML([]byte(articleHTML), page, true)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := ExtractHTML([]byte(articleHTML), page, true)
			if err != nil || *got != *want {
				t.Errorf("concurrent result differs: %v", err)
			}
		})
	}
	wg.Wait()
}
