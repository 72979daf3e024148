package fetchpage

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/tools"
)

const articleHTML = `<!doctype html>
<html><head><title>Gophers and their burrows</title><meta charset="utf-8"></head>
<body>
<nav class="menu"><a href="/">Home</a> <a href="/about">About us</a> <a href="/shop">Shop now</a></nav>
<header><div class="banner">Subscribe to our newsletter for daily burrow news!</div></header>
<main><article>
<h1>Gophers and their burrows</h1>
<p>The pocket gopher spends almost its entire life underground, digging a network of tunnels that can
stretch for hundreds of metres. Each burrow system has feeding tunnels, nesting chambers and food stores.</p>
<h2>How they dig</h2>
<p>Gophers dig with their strong front claws and, in hard soil, with their large incisors. Read the
<a href="/guides/digging?x=1">digging guide</a> for the details of soil types and tunnel depth.</p>
<img src="images/burrow.png" alt="A burrow cross-section">
<ul><li>Feeding tunnels run close to the surface.</li><li>Nesting chambers lie up to two metres deep.</li><li>Food stores hold roots and tubers for winter.</li></ul>
<h2>Measurements</h2>
<table><thead><tr><th>Species</th><th>Length (cm)</th></tr></thead>
<tbody><tr><td>Botta's pocket gopher</td><td>18</td></tr><tr><td>Plains pocket gopher</td><td>25</td></tr></tbody></table>
<h2>Counting burrows in Go</h2>
<p>Field researchers often count mounds with a small program like the one below, written in Go.</p>
<pre><code class="language-go">package main

func main() {
	mounds := []int{3, 5, 8}
	println(len(mounds))
}
</code></pre>
<p>The gopher population in a field can be estimated from the number of fresh mounds per hectare,
although the relation depends on the season and the soil moisture in that particular year.</p>
</article></main>
<aside class="sidebar"><h3>Related</h3><a href="/x">Ten facts about moles</a></aside>
<footer><p>Copyright 2026 Burrow Weekly. All rights reserved. Privacy policy. Cookie settings.</p></footer>
</body></html>`

func TestFetchHTMLAsMarkdownAndText(t *testing.T) {
	f := newFixture(t, Config{})
	f.mux.HandleFunc("/article", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, articleHTML)
	})
	out := f.call(map[string]any{"url": f.url("/article")})
	md := f.ok(out)
	base := "http://" + fixtureHost + ":" + f.port
	for _, want := range []string{
		"## How they dig",
		"[digging guide](" + base + "/guides/digging?x=1)",
		"- Feeding tunnels run close to the surface.",
		"| Species",
		"| Botta's pocket gopher",
		"```go\npackage main",
		"mounds := []int{3, 5, 8}",
	} {
		if !strings.Contains(md.Content, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.Content)
		}
	}
	// Images are left out: in a model's context an image reference costs
	// tokens and says nothing, and the extractor drags captions and photo
	// credits in with them.
	if strings.Contains(md.Content, "![") {
		t.Errorf("markdown keeps an image:\n%s", md.Content)
	}
	for _, boiler := range []string{"Subscribe to our newsletter", "Shop now", "Ten facts about moles", "Cookie settings"} {
		if strings.Contains(md.Content, boiler) {
			t.Errorf("markdown keeps boilerplate %q", boiler)
		}
	}
	if md.Title != "Gophers and their burrows" || md.Status != 200 || md.ContentType != "text/html" || md.FinalURL != f.url("/article") {
		t.Errorf("metadata: %+v", md)
	}
	if content, ok := tools.Unfence(out.Text); !ok || !strings.HasPrefix(content, "Title: Gophers and their burrows\n") {
		t.Errorf("text rendering not fenced as untrusted data:\n%s", out.Text)
	}
	if out.Units != 0 {
		t.Errorf("HTML billed %v units", out.Units)
	}

	text := f.ok(f.call(map[string]any{"url": f.url("/article"), "format": "text"}))
	if !strings.Contains(text.Content, "Gophers dig with their strong front claws") {
		t.Errorf("text lacks the article:\n%s", text.Content)
	}
	for _, syntax := range []string{"](", "```", "## ", "| ---"} {
		if strings.Contains(text.Content, syntax) {
			t.Errorf("text format contains Markdown syntax %q:\n%s", syntax, text.Content)
		}
	}

	raw := f.ok(f.call(map[string]any{"url": f.url("/article"), "format": "html"}))
	if raw.Content != articleHTML {
		t.Errorf("html format is not the raw page")
	}
}

func TestFetchDecodesDeclaredCharsets(t *testing.T) {
	latin1, _ := charmap.Windows1252.NewEncoder().String("Café crème, naïve façade — l'été est là.")
	gbk, _ := simplifiedchinese.GBK.NewEncoder().String("地鼠挖洞的故事")
	cases := []struct {
		name, ctype, body, want string
	}{
		{"header", "text/plain; charset=windows-1252", latin1, "Café crème, naïve façade — l'été est là."},
		{"meta", "text/html", `<html><head><meta charset="gbk"><title>t</title></head><body><article><p>` + gbk + `</p></article></body></html>`, "地鼠挖洞的故事"},
		{"http-equiv", "text/html", `<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head><body><p>` + latin1 + `</p></body></html>`, "Café crème"},
	}
	f := newFixture(t, Config{})
	for _, c := range cases {
		f.mux.HandleFunc("/"+c.name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", c.ctype)
			fmt.Fprint(w, c.body)
		})
		o := f.ok(f.call(map[string]any{"url": f.url("/" + c.name), "format": "text"}))
		if !strings.Contains(o.Content, c.want) {
			t.Errorf("%s: content %q lacks %q", c.name, o.Content, c.want)
		}
	}
}

func TestFetchPaginatesByCharacters(t *testing.T) {
	// 3 000 characters, multi-byte, so byte and character offsets differ.
	body := strings.Repeat("地鼠gopher", 375)
	f := newFixture(t, Config{})
	f.mux.HandleFunc("/long.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, body)
	})
	runes := []rune(body)
	var got strings.Builder
	start := 0
	for i := 0; ; i++ {
		out := f.call(map[string]any{"url": f.url("/long.txt"), "max_length": 1000, "start_index": start})
		o := f.ok(out)
		if o.TotalLength != 3000 || o.StartIndex != start {
			t.Fatalf("part %d: total %d start %d", i, o.TotalLength, o.StartIndex)
		}
		if o.Content != string(runes[start:min(start+1000, 3000)]) || o.ReturnedLength != len([]rune(o.Content)) {
			t.Fatalf("part %d: wrong slice (returned_length %d)", i, o.ReturnedLength)
		}
		got.WriteString(o.Content)
		if !o.Truncated {
			if o.NextStartIndex != nil || strings.Contains(out.Text, "start_index=") {
				t.Fatalf("last part still says how to continue")
			}
			break
		}
		if o.NextStartIndex == nil || *o.NextStartIndex != start+1000 {
			t.Fatalf("part %d: next_start_index %v", i, o.NextStartIndex)
		}
		if !strings.Contains(out.Text, fmt.Sprintf("call fetch_page again with the same url and start_index=%d", start+1000)) {
			t.Fatalf("part %d: text lacks the continuation instruction:\n%s", i, out.Text[len(out.Text)-300:])
		}
		start = *o.NextStartIndex
	}
	if got.String() != body {
		t.Fatal("parts do not add up to the whole")
	}
	// Past the end: empty part, not an error.
	o := f.ok(f.call(map[string]any{"url": f.url("/long.txt"), "start_index": 5000}))
	if o.Content != "" || o.Truncated || o.StartIndex != 3000 {
		t.Fatalf("past the end: %+v", o)
	}
	// Chinese continuation instruction.
	out := f.callWith(tools.Proposal{Lang: catalog.Chinese}, map[string]any{"url": f.url("/long.txt"), "max_length": 10})
	if !strings.Contains(out.Text, "start_index=10 再次调用 fetch_page") {
		t.Fatalf("zh text: %s", out.Text)
	}
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func brotliBytes(b []byte) []byte {
	var buf bytes.Buffer
	bw := brotli.NewWriterLevel(&buf, 1)
	bw.Write(b)
	bw.Close()
	return buf.Bytes()
}

func TestFetchErrorsHaveStableCodes(t *testing.T) {
	f := newFixture(t, Config{MaxHTMLBytes: 1 << 20, Timeout: duration.Duration(2 * time.Second)})
	f.dns.set("other.test", "127.0.0.1")
	bomb := bytes.Repeat([]byte("A"), 8<<20) // 8 MiB of A, 8× the cap: a few KiB compressed
	gzBomb, brBomb := gzipBytes(bomb), brotliBytes(bomb)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	f.mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop?n=x"+r.URL.Query().Get("n"), http.StatusFound)
	})
	f.mux.HandleFunc("/to-other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://other.test:"+f.port+"/plain", http.StatusMovedPermanently)
	})
	f.mux.HandleFunc("/plain", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain")
	})
	f.mux.HandleFunc("/missing", http.NotFound)
	f.mux.HandleFunc("/png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n...."))
	})
	f.mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(2<<20))
		w.Write(bytes.Repeat([]byte("x"), 2<<20))
	})
	f.mux.HandleFunc("/big-unannounced", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fl := w.(http.Flusher)
		for range 40 {
			w.Write(bytes.Repeat([]byte("y"), 64<<10))
			fl.Flush()
		}
	})
	f.mux.HandleFunc("/gzip-bomb", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzBomb)
	})
	f.mux.HandleFunc("/br-bomb", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "br")
		w.Write(brBomb)
	})
	f.mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	f.mux.HandleFunc("/empty", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><head><script>var x = 1;</script><style>p{}</style></head><body>  </body></html>")
	})
	f.mux.HandleFunc("/bad.pdf", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF-1.4\nthis is not really a PDF at all\n%%EOF\n"))
	})

	cases := []struct {
		name string
		args map[string]any
		code string
	}{
		{"ftp scheme", map[string]any{"url": "ftp://" + fixtureHost + "/x"}, CodeInvalidURL},
		{"file scheme", map[string]any{"url": "file:///etc/passwd"}, CodeInvalidURL},
		{"relative", map[string]any{"url": "/just/a/path"}, CodeInvalidURL},
		{"credentials", map[string]any{"url": "http://user:pw@" + fixtureHost + ":" + f.port + "/plain"}, CodeInvalidURL},
		{"too long", map[string]any{"url": f.url("/plain?q=" + strings.Repeat("a", 2100))}, CodeURLTooLong},
		{"not in allowed_domains", map[string]any{"url": f.url("/plain"), "allowed_domains": []string{"example.org"}}, CodeDomainNotAllowed},
		{"blocked parent domain", map[string]any{"url": "http://sub." + fixtureHost + ":" + f.port + "/plain", "blocked_domains": []string{fixtureHost}}, CodeDomainNotAllowed},
		{"redirect to a domain outside the list", map[string]any{"url": f.url("/to-other"), "allowed_domains": []string{fixtureHost}}, CodeDomainNotAllowed},
		{"redirect loop", map[string]any{"url": f.url("/loop")}, CodeTooManyRedirects},
		{"404", map[string]any{"url": f.url("/missing")}, CodeHTTPError},
		{"image", map[string]any{"url": f.url("/png")}, CodeUnsupportedContent},
		{"announced too large", map[string]any{"url": f.url("/big")}, CodeTooLarge},
		{"streamed too large", map[string]any{"url": f.url("/big-unannounced")}, CodeTooLarge},
		{"gzip bomb", map[string]any{"url": f.url("/gzip-bomb")}, CodeTooLarge},
		{"brotli bomb", map[string]any{"url": f.url("/br-bomb")}, CodeTooLarge},
		{"server never answers", map[string]any{"url": f.url("/hang")}, CodeTimeout},
		{"no content", map[string]any{"url": f.url("/empty")}, CodeExtractionFailed},
		{"corrupt pdf", map[string]any{"url": f.url("/bad.pdf")}, CodeExtractionFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := f.call(c.args)
			if !out.IsError || out.Code != c.code {
				t.Fatalf("want %s, got error=%v code=%q msg=%q", c.code, out.IsError, out.Code, out.Message)
			}
			if out.Message == "" {
				t.Fatal("empty message")
			}
		})
	}
	// The allowed list covers subdomains and redirects within it.
	o := f.ok(f.call(map[string]any{"url": "http://sub." + fixtureHost + ":" + f.port + "/plain", "allowed_domains": []string{fixtureHost}}))
	if o.Content != "plain" {
		t.Fatalf("subdomain of an allowed domain: %q", o.Content)
	}
}

func TestFetchHTTPErrorCarriesStatus(t *testing.T) {
	f := newFixture(t, Config{})
	f.mux.HandleFunc("/gone", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "gone", http.StatusGone) })
	out := f.call(map[string]any{"url": f.url("/gone")})
	if out.Code != CodeHTTPError || !strings.Contains(out.Message, "410") {
		t.Fatalf("got %s: %s", out.Code, out.Message)
	}
	var te *tools.Error
	_, err := f.tool.Call(t.Context(), invocationFor(t, f, map[string]any{"url": f.url("/gone")}))
	if !asToolErr(err, &te) || te.Details != (httpErrorDetails{Status: 410}) {
		t.Fatalf("details: %v", err)
	}
}

func TestFetchObeysRobots(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		path   string
		code   string // "" = fetched
	}{
		{"disallowed path", 200, "User-agent: *\nDisallow: /private/\n", "/private/page", CodeRobotsDisallowed},
		{"allowed path", 200, "User-agent: *\nDisallow: /private/\n", "/public", ""},
		{"our agent disallowed", 200, "User-agent: toolhost-fetch\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "/public", CodeRobotsDisallowed},
		{"other agent disallowed", 200, "User-agent: BadBot\nDisallow: /\n", "/public", ""},
		{"robots 404 allows", 404, "", "/public", ""},
		{"robots 403 allows", 403, "", "/public", ""},
		{"robots 503 blocks", 503, "", "/public", CodeRobotsDisallowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			var robotsHits atomic.Int64
			f.mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, _ *http.Request) {
				robotsHits.Add(1)
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			})
			f.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprint(w, "page")
			})
			out := f.call(map[string]any{"url": f.url(c.path)})
			if c.code == "" {
				if o := f.ok(out); o.Content != "page" {
					t.Fatalf("content %q", o.Content)
				}
			} else if out.Code != c.code {
				t.Fatalf("want %s, got %q: %s", c.code, out.Code, out.Message)
			}
			// A second URL on the same host reuses the cached robots.txt.
			f.call(map[string]any{"url": f.url(c.path + "?again")})
			if n := robotsHits.Load(); n != 1 {
				t.Fatalf("robots.txt fetched %d times", n)
			}
		})
	}
	// Switched off by config: no robots.txt request at all.
	f := newFixture(t, Config{IgnoreRobots: true})
	f.mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, _ *http.Request) {
		t.Error("robots.txt fetched although ignore_robots is set")
		fmt.Fprint(w, "User-agent: *\nDisallow: /\n")
	})
	f.mux.HandleFunc("/p", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "page")
	})
	f.ok(f.call(map[string]any{"url": f.url("/p")}))
}

func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		proxied.Add(1)
		fmt.Fprint(w, "from the proxy")
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	f := newFixture(t, Config{})
	f.mux.HandleFunc("/p", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "direct")
	})
	if o := f.ok(f.call(map[string]any{"url": f.url("/p")})); o.Content != "direct" || proxied.Load() != 0 {
		t.Fatalf("content %q, proxy requests %d", o.Content, proxied.Load())
	}
}

func TestFetchServesRepeatsFromCache(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true})
	f.mux.HandleFunc("/p", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "cached body")
	})
	first := f.ok(f.call(map[string]any{"url": f.url("/p")}))
	second := f.ok(f.call(map[string]any{"url": f.url("/p"), "max_length": 6}))
	if f.hits.Load() != 1 || first.Cached || !second.Cached || second.Content != "cached" {
		t.Fatalf("hits %d, first cached %v, second %+v", f.hits.Load(), first.Cached, second)
	}
	// Another format is another entry.
	f.ok(f.call(map[string]any{"url": f.url("/p"), "format": "text"}))
	if f.hits.Load() != 2 {
		t.Fatalf("hits %d", f.hits.Load())
	}
}

func TestCacheExpiresAndBoundsBytes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := newCache(time.Minute, 4000, func() time.Time { return now }, nil, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	c.put(ctx, "a", &document{Content: strings.Repeat("a", 900)})
	c.put(ctx, "b", &document{Content: strings.Repeat("b", 900)})
	if _, ok := c.get(ctx, "a"); !ok {
		t.Fatal("a missing")
	}
	c.put(ctx, "c", &document{Content: strings.Repeat("c", 900)})
	c.put(ctx, "d", &document{Content: strings.Repeat("d", 900)}) // over 4000: evicts b, the least recently used
	if _, ok := c.get(ctx, "b"); ok {
		t.Fatal("b survived eviction")
	}
	if _, ok := c.get(ctx, "a"); !ok {
		t.Fatal("a evicted although recently used")
	}
	c.put(ctx, "huge", &document{Content: strings.Repeat("h", 2000)}) // over half of the cache: not kept
	if _, ok := c.get(ctx, "huge"); ok {
		t.Fatal("huge entry kept")
	}
	now = now.Add(time.Minute)
	if _, ok := c.get(ctx, "a"); ok {
		t.Fatal("a served after its TTL")
	}
}

func TestFetchLimitsConcurrencyPerHost(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true, PerHostConcurrency: 1, CacheTTL: duration.Duration(-1)})
	var inFlight, maxSeen atomic.Int64
	arrived := make(chan struct{}, 3)
	release := make(chan struct{})
	f.mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		n := inFlight.Add(1)
		for m := maxSeen.Load(); n > m; m = maxSeen.Load() {
			if maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "ok")
	})
	counted := make(chan struct{}, 3)
	f.tool.hosts.counted = func() {
		select {
		case counted <- struct{}{}:
		default: // never block a fetch
		}
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { f.ok(f.call(map[string]any{"url": f.url(fmt.Sprintf("/slow?i=%d", i))})) })
	}
	u, _ := url.Parse(f.url("/slow"))
	host := f.tool.hostKey(context.Background(), u) // the address it resolves to
	<-arrived
	// One request holds the only slot; wait until the other two calls queue
	// for it (none leaves before release), then check nobody else got
	// through.
	for range 3 {
		<-counted
	}
	if n := f.tool.hosts.refs(host); n != 3 {
		t.Errorf("fetches holding or waiting for the slot: %d, want 3", n)
	}
	if n := f.tool.hosts.inFlight(host); n != 1 || inFlight.Load() != 1 {
		t.Errorf("slots held %d, requests at the server %d", n, inFlight.Load())
	}
	close(release)
	wg.Wait()
	if maxSeen.Load() != 1 {
		t.Fatalf("server saw %d requests at once", maxSeen.Load())
	}
}

func TestFetchReportsDownloadProgress(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true})
	f.mux.HandleFunc("/large.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(2<<20))
		w.Write(bytes.Repeat([]byte("z"), 2<<20))
	})
	var mu sync.Mutex
	var progress []float64
	var totals []float64
	out := f.callWith(tools.Proposal{Progress: func(p, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, p)
		totals = append(totals, total)
	}}, map[string]any{"url": f.url("/large.txt"), "max_length": 10})
	f.ok(out)
	mu.Lock()
	defer mu.Unlock()
	if len(progress) < 4 {
		t.Fatalf("%d progress notifications for 2 MiB", len(progress))
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] || totals[i] != 2<<20 {
			t.Fatalf("progress not increasing toward the total: %v / %v", progress, totals)
		}
	}
	if progress[len(progress)-1] != 2<<20 {
		t.Fatalf("last progress %v", progress[len(progress)-1])
	}
}

// makePDF builds a small text PDF, one content stream per page, with a
// standard Type1 font.
func makePDF(pages []string) []byte {
	var objs []string
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, then page/content pairs.
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs,
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, p := range pages {
		var cs strings.Builder
		cs.WriteString("BT /F1 12 Tf 72 720 Td 14 TL\n")
		for _, line := range strings.Split(p, "\n") {
			fmt.Fprintf(&cs, "(%s) Tj T*\n", line)
		}
		cs.WriteString("ET")
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", cs.Len(), cs.String()))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func TestFetchPDFBillsPagesExtracted(t *testing.T) {
	pdf := makePDF([]string{"First page about gophers\nsecond line here", "Second page about burrows", "Third page about mounds"})
	cases := []struct {
		name      string
		maxPages  int
		path      string
		ctype     string
		units     int
		truncated bool
	}{
		{"declared", 0, "/doc.pdf", "application/pdf", 3, false},
		{"sniffed by magic", 0, "/download", "application/octet-stream", 3, false},
		{"page budget", 2, "/doc.pdf", "application/pdf", 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Config{IgnoreRobots: true, MaxPDFPages: c.maxPages})
			f.mux.HandleFunc(c.path, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", c.ctype)
				w.Write(pdf)
			})
			var progress atomic.Int64
			out := f.callWith(tools.Proposal{Progress: func(float64, float64, string) { progress.Add(1) }},
				map[string]any{"url": f.url(c.path)})
			o := f.ok(out)
			if out.Units != float64(c.units) || o.PagesExtracted != c.units || o.Pages != 3 {
				t.Fatalf("units %v, pages %d, extracted %d", out.Units, o.Pages, o.PagesExtracted)
			}
			if o.ContentType != "application/pdf" && c.ctype == "application/pdf" {
				t.Fatalf("content type %q", o.ContentType)
			}
			for i, want := range []string{"First page about gophers", "Second page about burrows", "Third page about mounds"}[:c.units] {
				if !strings.Contains(o.Content, fmt.Sprintf("--- page %d of 3 ---", i+1)) || !strings.Contains(o.Content, want) {
					t.Fatalf("content lacks page %d %q:\n%s", i+1, want, o.Content)
				}
			}
			if strings.Contains(o.Content, "page budget reached") != c.truncated {
				t.Fatalf("budget note wrong:\n%s", o.Content)
			}
			if progress.Load() < int64(c.units) {
				t.Fatalf("%d progress notifications for %d pages", progress.Load(), c.units)
			}
			// A repeat comes from the cache and is not billed again.
			again := f.call(map[string]any{"url": f.url(c.path)})
			if f.ok(again); again.Units != 0 {
				t.Fatalf("cached PDF billed %v", again.Units)
			}
		})
	}
}

func TestSpecIsComplete(t *testing.T) {
	tool, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := tool.Spec()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.PaidUnit != "pdf_page" || !s.Annotations.ReadOnly || !s.Annotations.OpenWorld || s.SideEffect != catalog.SideEffectNone {
		t.Fatalf("spec: %+v", s)
	}
	var out map[string]any
	if err := json.Unmarshal(s.Output, &out); err != nil {
		t.Fatal(err)
	}
}
