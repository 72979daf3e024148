package fetchpage

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// paragraphs is an HTML page of n paragraphs, each tagged with its number.
func paragraphs(n int, word string) string {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Long page</title></head><body><article><h1>Long page</h1>\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "<p>Paragraph %d: %s</p>\n", i, strings.Repeat(word+" ", 12))
	}
	b.WriteString("</article><footer>the end</footer></body></html>\n")
	return b.String()
}

// The extractor's work grows with the square of the text it is given, so
// its input holds at most the budget of text; pages within it are passed
// as they came, byte for byte.
func TestBoundTextCutsTheExtractorsInput(t *testing.T) {
	const limit = 16 << 10
	script := "<script>" + strings.Repeat("var x = 1;\n", 4000) + "</script><style>" + strings.Repeat("p{color:red}\n", 2000) + "</style>"
	for _, tc := range []struct {
		name     string
		page     string
		cut      bool
		first    string // text the result must keep
		lastGone string // text the result must not keep
		err      bool
	}{
		{name: "small page", page: paragraphs(10, "short")},
		{name: "bytes over the budget, text within (scripts and styles)", page: "<html><head>" + script + "</head><body><p>Paragraph 0: hello</p></body></html>"},
		{name: "text over the budget", page: paragraphs(2000, "perovskite"), cut: true, first: "Paragraph 0:", lastGone: "Paragraph 1999:"},
		{name: "one text node over the budget", page: "<p>" + strings.Repeat("word ", 20000) + "</p><p>after</p>", cut: true, first: "word", lastGone: "after"},
		{name: "multibyte text cut inside a character", page: paragraphs(2000, "钙钛矿封装"), cut: true, first: "Paragraph 0:", lastGone: "Paragraph 1999:"},
		{name: "no spaces to cut at", page: "<p>" + strings.Repeat("钙", 40000) + "</p>", cut: true, first: "钙"},
		{name: "unclosed tags", page: "<div><p>" + strings.Repeat("<b>bold <i>text ", 100) + strings.Repeat("text ", 10000) + "<p>after", cut: true, first: "bold", lastGone: "after"},
		{name: "nesting deeper than the parser takes", page: strings.Repeat("<div>", 600) + strings.Repeat("text ", 10000) + "<p>after", cut: true, first: "text", lastGone: "after"},
		{name: "a comment and an entity at the cut", page: "<p><!-- " + strings.Repeat("c", 40000) + " -->" + strings.Repeat("a&amp;b ", 4000) + "</p><p>after</p>", cut: true, first: "a&amp;b", lastGone: "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, cut := boundText([]byte(tc.page), limit)
			if !tc.cut {
				if cut != nil || !bytes.Equal(out, []byte(tc.page)) {
					t.Fatalf("page changed (cut %+v)", cut)
				}
				return
			}
			if cut == nil {
				t.Fatalf("not cut: %d bytes out", len(out))
			}
			// The cut page, bounded again, has exactly the kept text.
			_, again := boundText(out, 1)
			if again == nil || again.Total != cut.Kept || cut.Kept > limit || cut.Kept < limit-64-utf8.UTFMax {
				t.Fatalf("kept %d of %d (limit %d); the output has %+v", cut.Kept, cut.Total, limit, again)
			}
			_, whole := boundText([]byte(tc.page), 1)
			if cut.Total != whole.Total {
				t.Fatalf("total %d, the page has %d", cut.Total, whole.Total)
			}
			if !utf8.Valid(out) {
				t.Fatal("the cut split a character")
			}
			if !bytes.Contains(out, []byte(tc.first)) || (tc.lastGone != "" && bytes.Contains(out, []byte(tc.lastGone))) {
				t.Fatalf("kept the wrong part: %.200q … %.200q", out, out[max(0, len(out)-200):])
			}
		})
	}
}

// fetch_page extracts the start of a page with more text than
// max_extract_text_bytes and says so in the result, in both its forms.
func TestFetchPageCutsPagesOverTheExtractionBudget(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true, MaxExtractTextBytes: 32 << 10})
	f.mux.HandleFunc("/long.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, paragraphs(3000, "perovskite"))
	})
	f.mux.HandleFunc("/short.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, paragraphs(40, "perovskite"))
	})
	for _, format := range []string{"markdown", "text"} {
		out := f.call(map[string]any{"url": f.url("/long.html"), "format": format, "max_length": 200000})
		o := f.ok(out)
		if !o.PageCut || !strings.Contains(out.Text, "[Page cut: the page has ") || !strings.Contains(out.Text, "format \"html\" returns the whole page") {
			t.Fatalf("%s: page_cut %v, text %.300q", format, o.PageCut, out.Text)
		}
		if !strings.Contains(o.Content, "Paragraph 0:") || strings.Contains(o.Content, "Paragraph 2999:") || len(o.Content) > 32<<10 {
			t.Fatalf("%s: content of %d bytes, ends %q", format, len(o.Content), o.Content[max(0, len(o.Content)-100):])
		}
	}
	out := f.call(map[string]any{"url": f.url("/short.html")})
	if o := f.ok(out); o.PageCut || strings.Contains(out.Text, "Page cut") || !strings.Contains(o.Content, "Paragraph 39:") {
		t.Fatalf("a page within the budget: page_cut %v, %d bytes", o.PageCut, len(o.Content))
	}
	// format html is the raw page, never cut.
	if o := f.ok(f.call(map[string]any{"url": f.url("/long.html"), "format": "html", "max_length": 200000})); o.PageCut || o.TotalLength != len(paragraphs(3000, "perovskite")) {
		t.Fatalf("format html: page_cut %v, %d characters", o.PageCut, o.TotalLength)
	}
}

func TestExtractionBudgetDefault(t *testing.T) {
	if got := (Config{}).withDefaults().MaxExtractTextBytes; got != 512<<10 {
		t.Fatalf("default %d", got)
	}
}
