// Package pdftext extracts the text of PDF pages in reading order.
//
// It uses github.com/ledongthuc/pdf for the file structure (cross-reference
// tables, objects, stream filters and decryption) but interprets page content
// streams itself: it positions every glyph with the text and graphics state,
// decodes it through a per-font table built once per document, and rebuilds
// words, lines and blocks from glyph geometry, the way pdftotext does. The
// library's own Page.Content is far too slow for long documents and loses the
// word spaces, which is why this package exists.
//
// Invariants: Extract never panics (hostile input is recovered and reported
// as ErrCorrupt), honours its context between pages and inside long pages,
// and bounds the memory it uses (decompressed stream sizes, glyphs per page,
// form nesting and the total text are capped).
package pdftext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/ledongthuc/pdf"
)

// ErrEncrypted reports a PDF that cannot be read without a password, or whose
// encryption scheme is not supported.
var ErrEncrypted = errors.New("pdftext: encrypted PDF")

// ErrCorrupt reports a PDF that could not be parsed (truncated, malformed, or
// not a PDF at all).
var ErrCorrupt = errors.New("pdftext: corrupt PDF")

// Options tune Extract.
type Options struct {
	// MaxPages is the page budget: only the first MaxPages pages are
	// extracted (0 means all pages, up to a hard limit of 100 000) and
	// Document.Truncated reports the cut.
	MaxPages int
	// Progress, when set, is called after each page with the number of pages
	// done and the number that will be extracted.
	Progress func(done, total int)
	// Pages, when not empty, selects the pages to extract: 1-based page
	// numbers in ascending order without repeats. Numbers past the end of
	// the document are ignored. MaxPages then bounds how many of the
	// selected pages are extracted.
	Pages []int
}

// Document is the text of a PDF.
type Document struct {
	// Pages holds the text of each extracted page, in page order. Lines are
	// separated by "\n", blocks (paragraphs, columns) by a blank line. A page
	// that could not be read is an empty string.
	Pages []string
	// NumPages is the number of pages in the whole document.
	NumPages int
	// Truncated reports that the page budget (Options.MaxPages) cut the
	// extraction short.
	Truncated bool
	// Numbers holds the 1-based page number of each entry of Pages.
	Numbers []int
}

const (
	maxTreeDepth = 64
	maxPageCount = 100_000  // pages walked when there is no smaller budget
	maxTextBytes = 64 << 20 // total extracted text kept
)

// Extract returns the text of the pages of the PDF in data. Errors wrap
// ErrEncrypted, ErrCorrupt or the context's error. A page that cannot be
// read yields an empty string; only when no page can be read at all is the
// document reported as corrupt.
func Extract(ctx context.Context, data []byte, opts Options) (doc *Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := open(data)
	if err != nil {
		return nil, err
	}
	limit := opts.MaxPages
	if limit <= 0 || limit > maxPageCount {
		limit = maxPageCount
	}
	walk := limit
	if len(opts.Pages) > 0 {
		// Walk the page tree as far as the last selected page.
		walk = min(opts.Pages[len(opts.Pages)-1], maxPageCount)
	}
	pages, count, err := collectPages(ctx, r, walk)
	if err != nil {
		return nil, err
	}
	doc = &Document{NumPages: count}
	var numbers []int
	if len(opts.Pages) > 0 {
		var sel []pageRef
		for _, n := range opts.Pages {
			if n >= 1 && n <= len(pages) {
				sel = append(sel, pages[n-1])
				numbers = append(numbers, n)
			}
		}
		pages = sel
		if len(pages) > limit {
			doc.Truncated = true
			pages, numbers = pages[:limit], numbers[:limit]
		}
	} else {
		if doc.NumPages > limit {
			doc.Truncated = true
			if len(pages) > limit {
				pages = pages[:limit]
			}
		}
		for i := range pages {
			numbers = append(numbers, i+1)
		}
	}
	doc.Numbers = numbers
	if len(pages) == 0 && len(opts.Pages) > 0 && count > 0 {
		return doc, nil // every selected page is past the end
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("%w: no pages found (%d declared)", ErrCorrupt, count)
	}
	in := &interp{fc: newFontCache()}
	var firstErr error
	failed, total := 0, 0
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		text, err := extractPage(ctx, in, p)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("page %d: %w", i+1, err)
			}
		}
		if total+len(text) > maxTextBytes {
			text = ""
		}
		total += len(text)
		doc.Pages = append(doc.Pages, text)
		if opts.Progress != nil {
			opts.Progress(i+1, len(pages))
		}
	}
	if failed == len(pages) {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, firstErr)
	}
	return doc, nil
}

// extractPage returns the text of one page; a panic from the parser on a
// malformed object becomes an error for this page only.
func extractPage(ctx context.Context, in *interp, p pageRef) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("malformed page: %v", r)
		}
	}()
	glyphs, err := in.page(ctx, p.v, p.res)
	if err != nil {
		return "", err
	}
	return layoutPage(glyphs), nil
}

// open parses the file structure. The library insists on a "%PDF-1.x"
// header at offset 0 and "%%EOF" in the last 100 bytes; files with a
// PDF 2.0 header or trailing garbage are common and readable, so the view
// it gets is adjusted rather than the files refused.
func open(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if x := recover(); x != nil {
			r, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, x)
		}
	}()
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil, fmt.Errorf("%w: no %%PDF header", ErrCorrupt)
	}
	size := len(data)
	if i := bytes.LastIndex(data, []byte("%%EOF")); i >= 0 {
		size = i + len("%%EOF")
	}
	ra := newHeaderFix(data[:size])
	r, err = pdf.NewReader(ra, int64(size))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || encrypted(data) {
			return nil, fmt.Errorf("%w: %v", ErrEncrypted, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return r, nil
}

// encrypted reports whether the trailer (or cross-reference stream) of the
// file names an encryption dictionary.
func encrypted(data []byte) bool {
	tail := data[max(0, len(data)-64<<10):]
	return bytes.Contains(tail, []byte("/Encrypt"))
}

// headerFix serves data with a header the library accepts: "%PDF-1.7"
// replaces any other version (the version does not change how it parses).
type headerFix struct {
	data []byte
	hdr  [9]byte
}

func newHeaderFix(data []byte) *headerFix {
	h := &headerFix{data: data}
	copy(h.hdr[:], data)
	ok := len(data) >= 9 && h.hdr[5] == '1' && h.hdr[6] == '.' && h.hdr[7] >= '0' && h.hdr[7] <= '7' &&
		(h.hdr[8] == '\r' || h.hdr[8] == '\n')
	if !ok && len(data) >= 9 {
		copy(h.hdr[5:], "1.7\n")
	}
	return h
}

func (h *headerFix) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(h.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.data[off:])
	for i := 0; i < n && off+int64(i) < int64(len(h.hdr)) && len(h.data) >= len(h.hdr); i++ {
		p[i] = h.hdr[off+int64(i)]
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

type pageRef struct {
	v, res pdf.Value
}

// collectPages walks the page tree in order, up to limit pages, carrying
// inherited resources down. It returns the pages and the page count the
// document declares, or the number found when that is larger (a wrong
// declared count is believed when the walk stops at the budget).
func collectPages(ctx context.Context, r *pdf.Reader, limit int) ([]pageRef, int, error) {
	root := r.Trailer().Key("Root").Key("Pages")
	count := int(root.Key("Count").Int64())
	var pages []pageRef
	seen := map[string]bool{}
	nodes := 0
	var err error
	var walk func(node, res pdf.Value, depth int) bool
	walk = func(node, res pdf.Value, depth int) bool {
		if depth > maxTreeDepth {
			return true
		}
		if nodes++; nodes%256 == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		if rv := node.Key("Resources"); rv.Kind() == pdf.Dict {
			res = rv
		}
		kids := node.Key("Kids")
		if node.Key("Type").Name() == "Page" || (kids.Kind() != pdf.Array && node.Key("Contents").Kind() != pdf.Null) {
			pages = append(pages, pageRef{v: node, res: res})
			return len(pages) < limit
		}
		// References identify the kids, so a cyclic tree ends.
		refs := refList.FindAllString(kids.String(), -1)
		if len(refs) != kids.Len() {
			refs = nil
		}
		for i := 0; i < kids.Len(); i++ {
			if refs != nil {
				if seen[refs[i]] {
					continue
				}
				seen[refs[i]] = true
			}
			if !walk(kids.Index(i), res, depth+1) {
				return false
			}
		}
		return true
	}
	walk(root, pdf.Value{}, 0)
	if err != nil {
		return nil, 0, err
	}
	return pages, max(count, len(pages)), nil
}

var refList = regexp.MustCompile(`\d+ \d+ R`)
