package fetchpage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/fetchpage/pdftext"
)

// A PDF is kept per URL (its bytes and the text of every page extracted so
// far), so a model paging through a long manual — pages="1-300", then
// "301-600" — downloads it once and extracts each page once. One call
// extracts at most Config.MaxPDFPages pages; the result says which pages it
// holds (page_range) and which to ask for next (next_pages), and only pages
// extracted by the call are billed.

// maxPageSelection bounds the pages one `pages` argument may name.
const maxPageSelection = 100_000

// pdfState is one fetched PDF.
type pdfState struct {
	mu       sync.Mutex
	data     []byte
	numPages int            // 0 until the first extraction
	texts    map[int]string // page number -> text
	textSize int
}

func (s *pdfState) size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.data) + s.textSize)
}

// parsePages reads "5", "301-600", "1-3,10" into ascending page numbers
// without repeats. Empty means no selection.
func parsePages(spec string) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 1 {
			return nil, fmt.Errorf("%q is not a page number or range such as 5 or 301-600", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range such as 301-600 (first page, then a later one)", part)
			}
		}
		if b-a+1 > maxPageSelection || len(out)+(b-a+1) > maxPageSelection {
			return nil, fmt.Errorf("pages names more than %d pages", maxPageSelection)
		}
		for n := a; n <= b; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// formatPages writes ascending page numbers as ranges: "1-3,10".
func formatPages(ns []int) string {
	var b strings.Builder
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ns[i], ns[j])
		} else {
			fmt.Fprintf(&b, "%d", ns[i])
		}
		i = j + 1
	}
	return b.String()
}

// pdfDocument builds the document for one call from the PDF kept in base:
// the selected pages (all pages when sel is empty), at most the page
// budget of them, extracting those not extracted before. It returns the
// document and the number of pages it extracted (the paid units).
func (t *Tool) pdfDocument(ctx context.Context, inv *tools.Invocation, base *document, sel []int) (*document, int, error) {
	st := base.pdf
	st.mu.Lock()
	defer st.mu.Unlock()
	budget := t.cfg.MaxPDFPages
	// The monthly cap may leave fewer pages than the page budget: extract
	// no more than the call may bill.
	capped := false
	if b := int(inv.UnitBudget); inv.UnitBudget > 0 && b < budget {
		budget, capped = max(b, 1), true
	}
	// The pages this call should hold, before the page count is known.
	target := sel
	if len(target) == 0 {
		n := st.numPages
		if n == 0 {
			n = budget // the count is learnt from the first extraction
		}
		target = seq(1, n)
	}
	shown := pagesWithin(target, st.numPages, budget)
	extracted := 0
	if missing := missingPages(shown, st.texts); len(missing) > 0 {
		pd, err := pdftext.Extract(ctx, st.data, pdftext.Options{
			Pages:    missing,
			MaxPages: len(missing),
			Progress: func(done, total int) {
				inv.Progress(float64(done), float64(total), fmt.Sprintf("PDF page %d of %d", done, total))
			},
		})
		if err != nil {
			return nil, 0, fmt.Errorf("pdf: %w", err)
		}
		st.numPages = pd.NumPages
		for i, n := range pd.Numbers {
			if _, ok := st.texts[n]; !ok {
				st.texts[n] = pd.Pages[i]
				st.textSize += len(pd.Pages[i])
			}
		}
		extracted = len(pd.Numbers)
		if len(sel) == 0 {
			target = seq(1, st.numPages)
		}
		shown = pagesWithin(target, st.numPages, budget)
	}
	if len(shown) == 0 {
		return nil, 0, tools.Errorf(CodeInvalidInput, "pages %q: the PDF has %d pages", formatPages(sel), st.numPages)
	}
	var b strings.Builder
	for i, n := range shown {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "--- page %d of %d ---\n\n", n, st.numPages)
		b.WriteString(strings.TrimSpace(st.texts[n]))
	}
	doc := *base
	doc.pdf = nil
	doc.Pages = st.numPages
	doc.Extracted = extracted
	doc.PageRange = formatPages(shown)
	// What to read next: the rest of the selection when the budget cut it,
	// else the pages that follow it in the document.
	last := shown[len(shown)-1]
	var next []int
	for _, n := range pagesWithin(target, st.numPages, 0) {
		if n > last && len(next) < t.cfg.MaxPDFPages {
			next = append(next, n)
		}
	}
	cut := len(next) > 0
	if !cut && last < st.numPages {
		next = seq(last+1, min(st.numPages, last+t.cfg.MaxPDFPages))
	}
	if len(next) > 0 {
		doc.NextPages = formatPages(next)
		if cut && capped {
			fmt.Fprintf(&b, "\n\n[this API key's monthly units allowed %d more pages: pages %s of %d shown. pages=%q reads on once units are available.]", budget, doc.PageRange, st.numPages, doc.NextPages)
		} else if cut {
			fmt.Fprintf(&b, "\n\n[page budget reached: pages %s of %d shown. To read on, call fetch_page again with the same url and pages=%q.]", doc.PageRange, st.numPages, doc.NextPages)
		} else {
			fmt.Fprintf(&b, "\n\n[pages %s of %d shown. The PDF goes on: call fetch_page again with the same url and pages=%q for the next pages.]", doc.PageRange, st.numPages, doc.NextPages)
		}
	}
	if len(sel) > 0 && len(shown) < len(sel) && doc.NextPages == "" {
		fmt.Fprintf(&b, "\n\n[the PDF has %d pages; pages past the end were left out]", st.numPages)
	}
	doc.Content = b.String()
	return &doc, extracted, nil
}

func seq(from, to int) []int {
	out := make([]int, 0, max(0, to-from+1))
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// pagesWithin keeps the pages that exist (numPages 0: not known yet) and at
// most budget of them (0: no budget).
func pagesWithin(pages []int, numPages, budget int) []int {
	var out []int
	for _, n := range pages {
		if numPages > 0 && n > numPages {
			break
		}
		out = append(out, n)
		if budget > 0 && len(out) == budget {
			break
		}
	}
	return out
}

func missingPages(pages []int, have map[int]string) []int {
	var out []int
	for _, n := range pages {
		if _, ok := have[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// pdfError maps the PDF extractor's failures to extraction_failed with a
// message that says which; nil when err is not one of them.
func pdfError(err error) *tools.Error {
	switch {
	case errors.Is(err, pdftext.ErrEncrypted):
		return tools.Errorf(CodeExtractionFailed, "the PDF is encrypted and cannot be read without its password")
	case errors.Is(err, pdftext.ErrCorrupt):
		// The parser's words may quote the file: they are fenced.
		return tools.Errorf(CodeExtractionFailed, "the PDF is damaged or not a PDF: %s", tools.Fence(err.Error()))
	}
	return nil
}
