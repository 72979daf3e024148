// Command webquality measures fetch_page's extraction the way a user meets
// it: every page of a corpus is served by a real HTTP server on 127.0.0.1
// the way ordinary web servers serve static files (Content-Type text/html
// with no charset, gzip when the client accepts it), a `toolhost serve`
// process fetches it through fetch_page when an MCP client (the go-sdk
// one) asks, and the answer — paged through with start_index like a model
// would — is scored against the corpus's truth with the metric of the
// article-extraction benchmark (its evaluate.py; see score.go).
//
// The corpus is a folder in the benchmark's layout: ground-truth.json
// ({id: {"articleBody", "url"}}) and html/ID.html.gz. The benchmark itself
// (scrapinghub/article-extraction-benchmark, 181 pages, MIT) is kept in
// testdata/article-extraction-benchmark, where `make quality` reads it;
// docs/performance.md has its scores.
//
// Formats: text scores format=text; markdown scores format=markdown after
// normalising it to what a reader sees (link targets, image references and
// fence info strings dropped; see normaliseMarkdown). With -min-text and
// -min-markdown the command exits 1 when an F1 falls below them, which is
// how `make quality` gates on it.
//
// -direct skips the server and calls the extractor in this process (a
// diagnostic: it misses the HTTP, charset and MCP layers).
//
//	go run ./bench/webquality -toolhost bin/toolhost -dir /path/to/article-extraction-benchmark
package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/tools/fetchpage"
)

type config struct {
	dir         string
	toolhost    string
	formats     []string
	direct      bool
	clients     int
	boot        int
	verbose     bool
	dump        string
	minText     float64
	minMarkdown float64
	corpus      string
	minSnippet  float64
}

func main() {
	var cfg config
	var formats string
	flag.StringVar(&cfg.dir, "dir", os.Getenv("ARTICLE_BENCHMARK_DIR"), "corpus folder: ground-truth.json and html/ID.html.gz (default $ARTICLE_BENCHMARK_DIR)")
	flag.StringVar(&cfg.toolhost, "toolhost", "bin/toolhost", "the toolhost binary to start")
	flag.StringVar(&formats, "format", "text,markdown", "formats to score, comma separated: text, markdown")
	flag.BoolVar(&cfg.direct, "direct", false, "call the extractor in this process instead of through toolhost serve (diagnostic)")
	flag.IntVar(&cfg.clients, "clients", 2, "MCP calls in flight at once")
	flag.IntVar(&cfg.boot, "bootstrap", 1000, "bootstrap resamples for the ± figures")
	flag.BoolVar(&cfg.verbose, "v", false, "print every page's precision and recall")
	flag.StringVar(&cfg.dump, "dump", "", "write each page's output to this folder")
	flag.Float64Var(&cfg.minText, "min-text", 0, "exit 1 when the text F1 is below this")
	flag.Float64Var(&cfg.minMarkdown, "min-markdown", 0, "exit 1 when the normalised-Markdown F1 is below this")
	flag.StringVar(&cfg.corpus, "corpus", "benchmark", "benchmark: the article-extraction benchmark in -dir; trafilatura: trafilatura's evaluation pages from the go-trafilatura module (with/without snippets)")
	flag.Float64Var(&cfg.minSnippet, "min-snippet-f1", 0, "trafilatura corpus: exit 1 when the snippet F1 is below this")
	flag.Parse()
	cfg.formats = strings.Split(formats, ",")
	if cfg.dir == "" && cfg.corpus == "benchmark" {
		fmt.Fprintln(os.Stderr, "webquality: -dir (or ARTICLE_BENCHMARK_DIR) must name a corpus folder")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	ok, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webquality:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

type truth struct {
	ArticleBody string `json:"articleBody"`
	URL         string `json:"url"`
}

type page struct {
	id    string
	truth truth
	html  []byte
	cas   *snippetCase // trafilatura corpus only
}

func loadCorpus(dir string) ([]page, error) {
	b, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return nil, err
	}
	var gt map[string]truth
	if err := json.Unmarshal(b, &gt); err != nil {
		return nil, fmt.Errorf("ground-truth.json: %w", err)
	}
	pages := make([]page, 0, len(gt))
	for id, t := range gt {
		h, err := readGzip(filepath.Join(dir, "html", id+".html.gz"))
		if err != nil {
			return nil, err
		}
		pages = append(pages, page{id: id, truth: t, html: h})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].id < pages[j].id })
	return pages, nil
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

// fetcher returns fetch_page's content for one page in one format.
type fetcher func(ctx context.Context, p page, format string) (string, error)

func run(ctx context.Context, cfg config, out io.Writer) (bool, error) {
	pages, err := loadPages(&cfg)
	if err != nil {
		return false, err
	}
	var htmlBytes int64
	for _, p := range pages {
		htmlBytes += int64(len(p.html))
	}
	fetch, cpu, how, stop, err := fetchWith(ctx, cfg, pages)
	if err != nil {
		return false, err
	}
	defer stop()
	fmt.Fprintf(out, "corpus %s: %d pages, %.1f MB of HTML; fetched %s\n\n", cfg.dir, len(pages), float64(htmlBytes)/1e6, how)
	if cfg.corpus == "trafilatura" {
		fmt.Fprintln(out, "| format | snippet F1 | precision | recall | accuracy | MB HTML per server CPU-second |")
	} else {
		fmt.Fprintln(out, "| format | F1 | precision | recall | exact | MB HTML per server CPU-second |")
	}
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	pass := true
	for _, format := range cfg.formats {
		format = strings.TrimSpace(format)
		if format != "text" && format != "markdown" {
			return false, fmt.Errorf("unknown format %q", format)
		}
		cpu0, err := cpu()
		if err != nil {
			return false, err
		}
		preds, errs := fetchAll(ctx, pages, fetch, format, cfg.clients)
		cpu1, err := cpu()
		if err != nil {
			return false, err
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		rate := float64(htmlBytes) / 1e6 / (cpu1 - cpu0).Seconds()
		score := scoreArticles
		if cfg.corpus == "trafilatura" {
			score = scoreSnippets
		}
		if !score(out, cfg, pages, format, preds, errs, rate) {
			pass = false
		}
	}
	return pass, nil
}

// loadPages reads the corpus cfg names; for the trafilatura corpus it also
// sets cfg.dir to where it was found.
func loadPages(cfg *config) ([]page, error) {
	switch cfg.corpus {
	case "benchmark":
		return loadCorpus(cfg.dir)
	case "trafilatura":
		dir, err := trafilaturaDir()
		if err != nil {
			return nil, err
		}
		cases, err := loadSnippetCorpus(dir)
		if err != nil {
			return nil, err
		}
		var pages []page
		for i := range cases {
			c := &cases[i]
			pages = append(pages, page{id: c.file, truth: truth{URL: c.url}, html: c.html, cas: c})
		}
		cfg.dir = dir + " (test-files/comparison)"
		return pages, nil
	}
	return nil, fmt.Errorf("unknown corpus %q", cfg.corpus)
}

// fetchWith returns how the pages are fetched: in this process (-direct)
// or through a toolhost serve it starts, reading them from a loopback
// server; with the CPU clock that counts the extraction's work, a
// description for the report, and the function that stops what it
// started.
func fetchWith(ctx context.Context, cfg config, pages []page) (fetch fetcher, cpu func() (time.Duration, error), how string, stop func(), err error) {
	if cfg.direct {
		return directFetch, func() (time.Duration, error) { return selfCPU(), nil }, "in process (-direct)", func() {}, nil
	}
	srv, err := servePages(pages)
	if err != nil {
		return nil, nil, "", nil, err
	}
	th, err := startToolhost(ctx, cfg.toolhost)
	if err != nil {
		srv.Close()
		return nil, nil, "", nil, err
	}
	stop = func() {
		th.stop()
		srv.Close()
	}
	cpu = func() (time.Duration, error) { return procCPU(th.cmd.Process.Pid) }
	how = "through toolhost serve (MCP, go-sdk client) from a loopback HTTP server sending text/html without charset"
	return th.fetchVia(srv.base), cpu, how, stop, nil
}

// fetchAll fetches every page in format with clients calls at a time.
func fetchAll(ctx context.Context, pages []page, fetch fetcher, format string, clients int) ([]string, []error) {
	preds := make([]string, len(pages))
	errs := make([]error, len(pages))
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, clients) {
		wg.Go(func() {
			for i := range next {
				preds[i], errs[i] = fetch(ctx, pages[i], format)
			}
		})
	}
	for i := range pages {
		next <- i
	}
	close(next)
	wg.Wait()
	return preds, errs
}

// dump writes a page's prediction into cfg.dump when it is set.
func dump(cfg config, name, format, pred string) {
	if cfg.dump == "" {
		return
	}
	_ = os.MkdirAll(cfg.dump, 0o755)
	_ = os.WriteFile(filepath.Join(cfg.dump, name+"."+format), []byte(pred), 0o644)
}

// scoreSnippets scores the trafilatura corpus's predictions by its
// wanted and unwanted snippets, prints the row of format and reports
// whether the snippet F1 reaches cfg.minSnippet.
func scoreSnippets(out io.Writer, cfg config, pages []page, format string, preds []string, errs []error, rate float64) bool {
	var tp, fn, fp, tn, failed int
	for i, p := range pages {
		if errs[i] != nil {
			failed++
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", p.id, format, errs[i])
		}
		pred := preds[i]
		dump(cfg, p.id, format, pred)
		if format == "markdown" {
			pred = normaliseMarkdown(pred)
		}
		a, b, c, d := snippetScore(*p.cas, pred)
		tp, fn, fp, tn = tp+a, fn+b, fp+c, tn+d
		if cfg.verbose && (b > 0 || c > 0) {
			fmt.Fprintf(out, "%s %s missing %d, unwanted %d\n", p.id, format, b, c)
		}
	}
	prec := float64(tp) / float64(max(1, tp+fp))
	rec := float64(tp) / float64(max(1, tp+fn))
	f1 := 2 * prec * rec / (prec + rec)
	acc := float64(tp+tn) / float64(max(1, tp+tn+fp+fn))
	fmt.Fprintf(out, "| %s | %.3f | %.3f | %.3f | %.3f | %.1f |\n", format, f1, prec, rec, acc, rate)
	if failed > 0 {
		fmt.Fprintf(out, "(%d pages failed to fetch)\n", failed)
	}
	if f1 < cfg.minSnippet {
		fmt.Fprintf(out, "FAIL: %s snippet F1 %.3f is below %.3f\n", format, f1, cfg.minSnippet)
		return false
	}
	return true
}

// scoreArticles scores the benchmark corpus's predictions against the
// article bodies (shingle precision and recall, exact matches), prints the
// row of format and reports whether its F1 reaches the format's minimum.
func scoreArticles(out io.Writer, cfg config, pages []page, format string, preds []string, errs []error, rate float64) bool {
	var scores [][3]float64
	var exact []float64
	failed := 0
	for i, p := range pages {
		pred := preds[i]
		if errs[i] != nil {
			failed++
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", shortID(p.id), format, errs[i])
		}
		dump(cfg, shortID(p.id), format, pred)
		if format == "markdown" {
			pred = normaliseMarkdown(pred)
		}
		pred = strings.ReplaceAll(pred, "\u00ad", "")
		s := shingleMatch(p.truth.ArticleBody, pred)
		scores = append(scores, s)
		exact = append(exact, exactMatch(p.truth.ArticleBody, pred))
		if cfg.verbose {
			pp, rr, _ := metrics([][3]float64{s})
			fmt.Fprintf(out, "%s %s P=%.3f R=%.3f %s\n", shortID(p.id), format, pp, rr, p.truth.URL)
		}
	}
	s := summarise(scores, exact, cfg.boot)
	fmt.Fprintf(out, "| %s | %.3f ± %.3f | %.3f ± %.3f | %.3f ± %.3f | %.3f | %.1f |\n",
		format, s.F1, s.SdF1, s.P, s.SdP, s.R, s.SdR, s.Acc, rate)
	if failed > 0 {
		fmt.Fprintf(out, "(%d pages failed to fetch and scored as empty)\n", failed)
	}
	minF1 := cfg.minText
	if format == "markdown" {
		minF1 = cfg.minMarkdown
	}
	if s.F1 < minF1 {
		fmt.Fprintf(out, "FAIL: %s F1 %.3f is below %.3f\n", format, s.F1, minF1)
		return false
	}
	return true
}

func directFetch(_ context.Context, p page, format string) (string, error) {
	u, _ := url.Parse(p.truth.URL)
	art, err := fetchpage.ExtractHTML(p.html, u, format == "markdown")
	if err != nil {
		return "", err
	}
	if format == "markdown" {
		return art.Markdown, nil
	}
	return art.Text, nil
}

// pageServer serves the corpus as static files.
type pageServer struct {
	srv  *http.Server
	base string
}

func (s *pageServer) Close() { _ = s.srv.Close() }

func servePages(pages []page) (*pageServer, error) {
	byPath := map[string][]byte{}
	for _, p := range pages {
		byPath["/"+p.id] = p.html
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := byPath[r.URL.Path]
		if !ok {
			http.NotFound(w, r) // robots.txt too: everything is allowed
			return
		}
		// What nginx or Apache send for a .html file by default: the type
		// without a charset, gzip when asked.
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Vary", "Accept-Encoding")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(body)
			_ = zw.Close()
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &pageServer{srv: srv, base: "http://" + ln.Addr().String()}, nil
}

// toolhost is a `toolhost serve --dev` child process and an MCP session to
// it.
type toolhost struct {
	cmd  *exec.Cmd
	cs   *mcp.ClientSession
	tmp  string
	stop func()
}

func startToolhost(ctx context.Context, bin string) (*toolhost, error) {
	tmp, err := os.MkdirTemp("", "webquality-")
	if err != nil {
		return nil, err
	}
	// The corpus server is on 127.0.0.1, which the SSRF guard refuses
	// unless the operator allows it: allow that one address, nothing else.
	conf := `{"fetch": {"allow_private": ["127.0.0.1"], "per_host_concurrency": 8}}`
	if err := os.WriteFile(filepath.Join(tmp, "config.json"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	// No runtimes folder: run_code is not measured here, and compiling the
	// WebAssembly runtimes in the background would be counted as the
	// server's CPU time.
	cmd := exec.CommandContext(sctx, bin, "serve", "--dev", "--addr", addr,
		"--data", filepath.Join(tmp, "data"), "--config", filepath.Join(tmp, "config.json"),
		"--runtimes", filepath.Join(tmp, "no-runtimes"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	th := &toolhost{cmd: cmd, tmp: tmp}
	th.stop = func() {
		if th.cs != nil {
			_ = th.cs.Close()
		}
		cancel()
		_ = cmd.Wait()
		logf.Close()
		os.RemoveAll(tmp)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "webquality", Version: "1.0.0"}, nil)
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, nil)
		ccancel()
		if err == nil {
			th.cs = cs
			return th, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			th.stop()
			return nil, fmt.Errorf("toolhost serve did not answer within 30 s: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fetchOutput is the part of fetch_page's structured result read here.
type fetchOutput struct {
	Content        string `json:"content"`
	Truncated      bool   `json:"truncated"`
	NextStartIndex *int   `json:"next_start_index"`
}

func (th *toolhost) fetchVia(base string) fetcher {
	return func(ctx context.Context, p page, format string) (string, error) {
		var b strings.Builder
		start := 0
		for range 100 {
			res, err := th.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch_page", Arguments: map[string]any{
				"url": base + "/" + url.PathEscape(p.id), "format": format, "max_length": 50000, "start_index": start,
			}})
			if err != nil {
				return b.String(), err
			}
			if res.IsError {
				msg := ""
				if len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*mcp.TextContent); ok {
						msg = tc.Text
					}
				}
				return b.String(), errors.New(msg)
			}
			raw, err := json.Marshal(res.StructuredContent)
			if err != nil {
				return b.String(), err
			}
			var o fetchOutput
			if err := json.Unmarshal(raw, &o); err != nil {
				return b.String(), err
			}
			b.WriteString(o.Content)
			if !o.Truncated || o.NextStartIndex == nil {
				return b.String(), nil
			}
			start = *o.NextStartIndex
		}
		return b.String(), errors.New("more than 100 parts")
	}
}

// procCPU is a process's user+system CPU time from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func shortID(id string) string {
	if len(id) > 12 && !strings.Contains(id, ".") {
		return id[:12]
	}
	return id
}
