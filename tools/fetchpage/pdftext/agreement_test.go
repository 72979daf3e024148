package pdftext

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/tools/fetchpage/pdftext/internal/shingle"
)

// The R manuals from Debian's r-doc-pdf package (TeX-made, 41 to 236
// pages) are the real-world corpus; poppler-utils' pdftotext is the
// reference. CI installs both (.ci/run).
var manualDirs = []string{"/usr/share/R/doc/manual", "/usr/share/doc/r-doc-pdf/manual"}

// realCorpus returns the paths of the named manuals and pdftotext's path,
// or skips when the packages are not installed.
func realCorpus(tb testing.TB, names ...string) ([]string, string) {
	tb.Helper()
	tool, err := exec.LookPath("pdftotext")
	if err != nil {
		tb.Skip("pdftotext not installed (apt-get install poppler-utils)")
	}
	for _, dir := range manualDirs {
		var paths []string
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				paths = append(paths, filepath.Join(dir, n))
			}
		}
		if len(paths) == len(names) {
			return paths, tool
		}
	}
	tb.Skip("R manuals not installed (apt-get install r-doc-pdf)")
	return nil, ""
}

func TestAgreementWithPdftotext(t *testing.T) {
	paths, tool := realCorpus(t, "R-data.pdf", "R-FAQ.pdf", "R-lang.pdf")
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Extract(context.Background(), data, Options{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			want, err := exec.Command(tool, "-enc", "UTF-8", path, "-").Output()
			if err != nil {
				t.Fatalf("pdftotext: %v", err)
			}
			if doc.NumPages != strings.Count(string(want), "\f") {
				t.Errorf("NumPages = %d, pdftotext printed %d pages", doc.NumPages, strings.Count(string(want), "\f"))
			}
			agree := shingle.Agreement(strings.Join(doc.Pages, "\n"), string(want))
			t.Logf("%s: %d pages, word 4-gram agreement with pdftotext %.3f", filepath.Base(path), doc.NumPages, agree)
			if agree < 0.90 {
				t.Errorf("agreement %.3f < 0.90", agree)
			}
		})
	}
}

// BenchmarkExtract measures whole-document extraction on an R manual
// (pages/s is reported) and on a generated 50-page document, which needs
// no packages.
func BenchmarkExtract(b *testing.B) {
	var pages []string
	for i := 0; i < 50; i++ {
		var c strings.Builder
		for y := 740.0; y > 60; y -= 12 {
			c.WriteString(textAt("F1", 10, 72, y, "The quick brown fox jumps over the lazy dog, again and again."))
		}
		pages = append(pages, c.String())
	}
	docs := map[string][]byte{"generated-50p": testPDF{pages: pages, compress: true}.bytes()}
	if _, err := exec.LookPath("pdftotext"); err == nil {
		for _, dir := range manualDirs {
			if data, err := os.ReadFile(filepath.Join(dir, "R-intro.pdf")); err == nil {
				docs["R-intro"] = data
				break
			}
		}
	}
	for _, name := range []string{"generated-50p", "R-intro"} {
		data, ok := docs[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var n int
			for b.Loop() {
				doc, err := Extract(context.Background(), data, Options{})
				if err != nil {
					b.Fatal(err)
				}
				n = len(doc.Pages)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
