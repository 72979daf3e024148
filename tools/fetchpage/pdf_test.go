package fetchpage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/tools"
)

func TestParsePages(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // formatPages of the result, or "error"
	}{
		{"5", "5"},
		{"301-600", "301-600"},
		{"1-3,10", "1-3,10"},
		{" 10 , 1-3, 2 ", "1-3,10"},
		{"", ""},
		{"0", "error"},
		{"5-3", "error"},
		{"a", "error"},
		{"1-", "error"},
		{"-4", "error"},
		{"1-200000", "error"},
	} {
		got, err := parsePages(c.in)
		s := formatPages(got)
		if err != nil {
			s = "error"
		}
		if s != c.want {
			t.Errorf("parsePages(%q) = %q (%v), want %q", c.in, s, err, c.want)
		}
	}
}

// TestFetchPDFPagesReachEveryPage pages through a PDF longer than the page
// budget: each call says which pages it holds and which to ask for next,
// the PDF is downloaded once, and each page is extracted (and billed) once.
func TestFetchPDFPagesReachEveryPage(t *testing.T) {
	const n = 23
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("Body of page number %d about burrow %d", i+1, (i+1)*7)
	}
	pdf := makePDF(texts)
	f := newFixture(t, Config{IgnoreRobots: true, MaxPDFPages: 10})
	var downloads atomic.Int64
	f.mux.HandleFunc("/manual.pdf", func(w http.ResponseWriter, _ *http.Request) {
		downloads.Add(1)
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf)
	})
	url := f.url("/manual.pdf")
	type step struct {
		pages, wantRange, wantNext string
		units                      float64
	}
	for i, s := range []step{
		{"", "1-10", "11-20", 10},
		{"11-20", "11-20", "21-23", 10}, // the pages that follow come next
		{"21-23", "21-23", "", 3},
		{"5,7-8", "5,7-8", "9-18", 0}, // read before: not extracted again
		{"1-23", "1-10", "11-20", 0},  // the budget holds for a cached PDF too
		{"20-40", "20-23", "", 0},     // past the end: the pages that exist
	} {
		args := map[string]any{"url": url}
		if s.pages != "" {
			args["pages"] = s.pages
		}
		out := f.call(args)
		o := f.ok(out)
		if o.PageRange != s.wantRange || o.NextPages != s.wantNext || out.Units != s.units || o.Pages != n {
			t.Fatalf("step %d (pages %q): range %q next %q units %v pages %d; want %q %q %v", i, s.pages, o.PageRange, o.NextPages, out.Units, o.Pages, s.wantRange, s.wantNext, s.units)
		}
		first, _ := parsePages(s.wantRange)
		for _, p := range first {
			if !strings.Contains(o.Content, fmt.Sprintf("--- page %d of %d ---", p, n)) || !strings.Contains(o.Content, texts[p-1]) {
				t.Fatalf("step %d lacks page %d:\n%s", i, p, o.Content)
			}
		}
		if s.wantNext != "" && !strings.Contains(o.Content, fmt.Sprintf("pages=%q", s.wantNext)) {
			t.Fatalf("step %d: the cut note does not say how to ask for %s:\n%s", i, s.wantNext, o.Content)
		}
	}
	if d := downloads.Load(); d != 1 {
		t.Errorf("the PDF was downloaded %d times", d)
	}
	out := f.call(map[string]any{"url": url, "pages": "40-50"})
	if !out.IsError || out.Code != CodeInvalidInput || !strings.Contains(out.Message, "23 pages") {
		t.Errorf("pages past the end: %+v", out)
	}
	out = f.call(map[string]any{"url": url, "pages": "7-3"})
	if !out.IsError || out.Code != "invalid_arguments" && out.Code != CodeInvalidInput {
		t.Errorf("reversed range: %+v", out)
	}
}

// fetch_page bills PDF pages, so it declares the most pages a call may
// extract, and what is left of the monthly cap bounds the extraction: with
// a budget of 4 units a 23-page PDF yields 4 pages, bills 4 and says why.
func TestUnitBudgetBoundsPDFPages(t *testing.T) {
	texts := make([]string, 23)
	for i := range texts {
		texts[i] = fmt.Sprintf("Body of page number %d", i+1)
	}
	pdf := makePDF(texts)
	f := newFixture(t, Config{IgnoreRobots: true, MaxPDFPages: 10})
	f.mux.HandleFunc("/manual.pdf", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf)
	})
	for args, want := range map[string]float64{
		`{"url":"http://x.test/a.pdf"}`:                  10, // the page budget
		`{"url":"http://x.test/a.pdf","pages":"3-5,9"}`:  4,  // the selection
		`{"url":"http://x.test/a.pdf","pages":"1-100"}`:  10, // the selection, within the budget
		`{"url":"http://x.test/a.pdf","pages":"bogus!"}`: 10, // refused later; the budget meanwhile
	} {
		if got := f.tool.MaxUnits(&tools.Invocation{Args: json.RawMessage(args)}); got != want {
			t.Errorf("MaxUnits(%s) = %v, want %v", args, got, want)
		}
	}
	inv := &tools.Invocation{Spec: f.tool.Spec(), Args: json.RawMessage(fmt.Sprintf(`{"url":%q}`, f.url("/manual.pdf"))), UnitBudget: 4}
	res, err := f.tool.Call(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	o := res.Structured.(*Output)
	if res.Units != 4 || o.PageRange != "1-4" || o.NextPages != "5-14" || !strings.Contains(o.Content, "monthly units") {
		t.Fatalf("units %v range %q next %q:\n%s", res.Units, o.PageRange, o.NextPages, o.Content)
	}
}
