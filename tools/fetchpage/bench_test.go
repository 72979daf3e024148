//go:build unix

package fetchpage

import (
	"compress/gzip"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// benchPages are the pages the throughput benchmarks convert: the 181 pages
// of the article-extraction benchmark kept in bench/webquality/testdata, or
// the copy ARTICLE_BENCHMARK_DIR names.
func benchPages(b *testing.B) [][]byte {
	b.Helper()
	dir := os.Getenv("ARTICLE_BENCHMARK_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "bench", "webquality", "testdata", "article-extraction-benchmark")
	}
	paths, err := filepath.Glob(filepath.Join(dir, "html", "*.html.gz"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("ARTICLE_BENCHMARK_DIR=%s: no html/*.html.gz (%v)", dir, err)
	}
	var pages [][]byte
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			b.Fatal(err)
		}
		page, err := io.ReadAll(zr)
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, page)
	}
	return pages
}

// BenchmarkExtractMarkdown is the whole HTML path of fetch_page: parse, find
// the main content, convert it to Markdown. MB/s counts input HTML.
//
//	ARTICLE_BENCHMARK_DIR=/path/to/checkout go test ./tools/fetchpage -run '^$' -bench ExtractMarkdown -cpu 1
func BenchmarkExtractMarkdown(b *testing.B) {
	pages := benchPages(b)
	var n int64
	for _, p := range pages {
		n += int64(len(p))
	}
	u, _ := url.Parse("https://example.org/article")
	b.SetBytes(n)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		for _, p := range pages {
			if _, err := ExtractHTML(p, u, true); err != nil && err != ErrNoContent {
				b.Fatal(err)
			}
		}
	}
	reportPerCPU(b, n, cpu)
}

// BenchmarkExtractText is the same path for format=text: parse, find the
// main content, render it as text.
func BenchmarkExtractText(b *testing.B) {
	pages := benchPages(b)
	var n int64
	for _, p := range pages {
		n += int64(len(p))
	}
	u, _ := url.Parse("https://example.org/article")
	b.SetBytes(n)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		for _, p := range pages {
			if _, err := ExtractHTML(p, u, false); err != nil && err != ErrNoContent {
				b.Fatal(err)
			}
		}
	}
	reportPerCPU(b, n, cpu)
}

// BenchmarkConvertMarkdown is the HTML→Markdown conversion alone, on whole
// pages (no content extraction).
func BenchmarkConvertMarkdown(b *testing.B) {
	pages := benchPages(b)
	var docs []*html.Node
	var n int64
	for _, p := range pages {
		d, err := html.Parse(bytesReader(p))
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, d)
		n += int64(len(p))
	}
	b.SetBytes(n)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		for _, d := range docs {
			if _, err := markdownConverter.ConvertNode(d); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportPerCPU(b, n, cpu)
}

// cpuTime is the process's user+system CPU time. On a shared machine the
// wall-clock MB/s depends on the neighbours; MB per CPU-second (run with
// -cpu 1) is the per-core throughput.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportPerCPU(b *testing.B, bytesPerOp int64, start time.Duration) {
	if used := cpuTime() - start; used > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/1e6/used.Seconds(), "MB/cpu-s")
	}
}
