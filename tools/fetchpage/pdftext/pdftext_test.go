package pdftext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func strPtr(s string) *string { return &s }

func TestExtractText(t *testing.T) {
	ligatures := courier("/Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [1 /fi /fl /ffi] >>")
	toUnicode := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n" +
		"1 begincodespacerange <0000> <FFFF> endcodespacerange\n" +
		"2 beginbfchar <0001> <0048> <0002> <0069> endbfchar\n" +
		"1 beginbfrange <0003> <0004> <0020> endbfrange\n" +
		"1 beginbfrange <0005> <0006> [<4E16> <754C>] endbfrange\n" +
		"endcmap CMapName currentdict /CMap defineresource pop end end\n"
	type1 := "%!PS-AdobeFont-1.0: CMR10 003.002\n/FontName /CMR10 def\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n" +
		"dup 11 /ff put\ndup 12 /fi put\ndup 97 /a put\ndup 98 /b put\ndup 123 /endash put\nreadonly def\ncurrentdict end\ncurrentfile eexec\n\x80\x81binary"
	tests := []struct {
		name   string
		pdf    testPDF
		object string // the stream of object 1000, which fonts may refer to
		want   []string
	}{
		{
			name: "word spacing from kerning in TJ",
			pdf:  testPDF{pages: []string{"BT /F1 10 Tf 72 700 Td [(Hello) -300 (world) -20 (s)] TJ ET"}},
			want: []string{"Hello worlds"},
		},
		{
			name: "space glyphs and positioned fragments",
			pdf: testPDF{pages: []string{
				textAt("F1", 10, 72, 700, "one two") + textAt("F1", 10, 72+7*6+10, 700, "three") +
					textAt("F1", 10, 72+13*6, 700, "four"),
			}},
			// "four" starts right where "three" ends: one word.
			want: []string{"one two threefour"},
		},
		{
			name: "lines top to bottom whatever the drawing order",
			pdf: testPDF{pages: []string{
				textAt("F1", 10, 72, 676, "third line") + textAt("F1", 10, 72, 700, "first line") +
					textAt("F1", 10, 72, 688, "second line"),
			}},
			want: []string{"first line\nsecond line\nthird line"},
		},
		{
			name: "two columns read column by column",
			pdf: testPDF{pages: []string{
				textAt("F1", 10, 72, 700, "left one") + textAt("F1", 10, 320, 700, "right one") +
					textAt("F1", 10, 72, 688, "left two") + textAt("F1", 10, 320, 688, "right two") +
					textAt("F1", 10, 72, 676, "left three") + textAt("F1", 10, 320, 676, "right three"),
			}},
			want: []string{"left one\nleft two\nleft three\n\nright one\nright two\nright three"},
		},
		{
			name: "paragraph gap becomes a blank line",
			pdf: testPDF{pages: []string{
				textAt("F1", 10, 72, 700, "para one") + textAt("F1", 10, 72, 670, "para two"),
			}},
			want: []string{"para one\n\npara two"},
		},
		{
			name: "multiple pages",
			pdf: testPDF{pages: []string{
				textAt("F1", 12, 72, 700, "page one"),
				textAt("F1", 12, 72, 700, "page two"),
				textAt("F1", 12, 72, 700, "page three"),
			}},
			want: []string{"page one", "page two", "page three"},
		},
		{
			name: "ligature glyphs expand",
			pdf: testPDF{
				fonts: map[string]string{"F1": ligatures},
				pages: []string{textAt("F1", 10, 72, 700, `\001nd the \002ow and the e\003ce`)},
			},
			want: []string{"find the flow and the effice"},
		},
		{
			name: "spacing accents over letters compose",
			// The diaeresis comes before its letter, the acute after it; the
			// grave and tilde touch no letter, so they stay characters.
			pdf:  testPDF{pages: []string{"BT /F1 10 Tf 72 700 Td [(universit\\250) 600 (at caf) (e) 600 (\\264) ( x `~)] TJ ET"}},
			want: []string{"universität café x `~"},
		},
		{
			name: "hyphenated line ends join",
			pdf: testPDF{pages: []string{
				textAt("F1", 10, 72, 700, "text extrac-") + textAt("F1", 10, 72, 688, "tion and ELE-") +
					textAt("F1", 10, 72, 676, "MENT join, pages 10-") + textAt("F1", 10, 72, 664, "20 do not"),
			}},
			want: []string{"text extraction and ELEMENT join, pages 10-\n20 do not"},
		},
		{
			name: "composite font with ToUnicode",
			pdf: testPDF{
				fonts: map[string]string{"F1": "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H " +
					"/DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /BaseFont /X /DW 500 /W [1 [500 500] 3 3 250] >>] " +
					"/ToUnicode 1000 0 R >>"},
				pages: []string{"BT /F1 10 Tf 72 700 Td <000100020003000400050006> Tj ET"},
			},
			object: toUnicode,
			want:   []string{"Hi !世界"}, // 0004 is the second code of the <0020> range
		},
		{
			name: "built-in encoding of an embedded Type 1 font",
			pdf: testPDF{
				fonts: map[string]string{"F1": courier("/FontDescriptor << /Type /FontDescriptor /FontName /CMR10 /FontFile 1000 0 R >>")},
				pages: []string{textAt("F1", 10, 72, 700, `\014nd a\013ab \173 b`)},
			},
			object: type1,
			want:   []string{"find affab – b"},
		},
		{
			name: "form XObject text",
			pdf: testPDF{
				xobjects: map[string]string{"X1": textAt("F1", 10, 0, 0, "inside the form")},
				pages:    []string{"q 1 0 0 1 72 700 cm /X1 Do Q " + textAt("F1", 10, 72, 600, "after")},
			},
			want: []string{"inside the form\n\nafter"},
		},
		{
			name: "superscripts stay with their word",
			pdf: testPDF{pages: []string{
				"BT /F1 10 Tf 72 700 Td (note) Tj 3.5 Ts /F1 7 Tf (1) Tj 0 Ts /F1 10 Tf ( and x) Tj -2 Ts /F1 7 Tf (2) Tj ET\n" +
					textAt("F1", 10, 72, 688, "next line"),
			}},
			want: []string{"note1 and x2\nnext line"},
		},
		{
			name: "rotated text",
			pdf:  testPDF{pages: []string{"BT /F1 10 Tf 0 1 -1 0 100 300 Tm (going up) Tj ET"}},
			want: []string{"going up"},
		},
		{
			name: "compressed streams and a PDF 2.0 header",
			pdf:  testPDF{compress: true, version: "2.0", pages: []string{textAt("F1", 10, 72, 700, "squeezed")}},
			want: []string{"squeezed"},
		},
		{
			name: "encrypted with an empty user password",
			pdf:  testPDF{userPW: strPtr(""), pages: []string{textAt("F1", 10, 72, 700, "open secret")}},
			want: []string{"open secret"},
		},
		{
			name: "literal string escapes and inline image",
			pdf: testPDF{pages: []string{
				"BI /W 2 /H 2 /BPC 8 /CS /G ID \x00\xff) Tj (\x01\x02 EI " + textAt("F1", 10, 72, 700, `a\(b\) c\\d \101`),
			}},
			want: []string{`a(b) c\d A`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.pdf.bytes()
			if tt.object != "" {
				data = withObject(t, data, tt.object)
			}
			doc, err := Extract(context.Background(), data, Options{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if !slices.Equal(doc.Pages, tt.want) {
				t.Errorf("pages = %q, want %q", doc.Pages, tt.want)
			}
			if doc.NumPages != len(tt.want) || doc.Truncated {
				t.Errorf("NumPages = %d, Truncated = %v; want %d, false", doc.NumPages, doc.Truncated, len(tt.want))
			}
		})
	}
}

// withObject appends object 1000, a stream, to a PDF as an incremental
// update does (the writer numbers its objects itself, so fonts refer to this
// one by its fixed number).
func withObject(t *testing.T, base []byte, stream string) []byte {
	t.Helper()
	prevXref := bytes.LastIndex(base, []byte("startxref\n"))
	var prev int
	if _, err := fmt.Sscanf(string(base[prevXref+len("startxref\n"):]), "%d", &prev); err != nil {
		t.Fatal(err)
	}
	trailerAt := bytes.LastIndex(base, []byte("trailer\n<< "))
	trailer := string(base[trailerAt+len("trailer\n<< ") : bytes.LastIndex(base, []byte(" >>\nstartxref"))])
	var b bytes.Buffer
	b.Write(base)
	off := b.Len()
	fmt.Fprintf(&b, "1000 0 obj\n<< /Length %d /Length1 %d >>\nstream\n%s\nendstream\nendobj\n", len(stream), len(stream), stream)
	xref := b.Len()
	trailer = strings.Replace(trailer, "/Size ", "/Size 1001 /OldSize ", 1)
	fmt.Fprintf(&b, "xref\n1000 1\n%010d 00000 n \ntrailer\n<< %s /Prev %d >>\nstartxref\n%d\n%%%%EOF\n", off, trailer, prev, xref)
	return b.Bytes()
}

func TestExtractErrors(t *testing.T) {
	good := testPDF{pages: []string{textAt("F1", 10, 72, 700, "some text here")}}.bytes()
	unsupported := bytes.Replace(good, []byte("trailer\n<< "), []byte("trailer\n<< /Encrypt << /Filter /Standard /V 5 /R 6 /Length 256 >> "), 1)
	badXref := bytes.Replace(good, []byte("startxref\n"), []byte("startxref\n9"), 1)
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"user password required", testPDF{userPW: strPtr("secret"), pages: []string{textAt("F1", 10, 72, 700, "hidden")}}.bytes(), ErrEncrypted},
		{"unsupported encryption", unsupported, ErrEncrypted},
		{"truncated file", good[:len(good)/2], ErrCorrupt},
		{"not a PDF", []byte("<html>hello</html>"), ErrCorrupt},
		{"empty", nil, ErrCorrupt},
		{"header only", []byte("%PDF-1.4\n%%EOF\n"), ErrCorrupt},
		{"cross-reference offset wrong", badXref, ErrCorrupt},
		{"no pages", testPDF{}.bytes(), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Extract(context.Background(), tt.data, Options{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Extract error = %v (doc %+v), want %v", err, doc, tt.want)
			}
		})
	}
}

func threePages() []byte {
	return testPDF{pages: []string{
		textAt("F1", 12, 72, 700, "page one"),
		textAt("F1", 12, 72, 700, "page two"),
		textAt("F1", 12, 72, 700, "page three"),
	}}.bytes()
}

func TestExtractPageBudget(t *testing.T) {
	tests := []struct {
		maxPages      int
		wantPages     []string
		wantTruncated bool
	}{
		{0, []string{"page one", "page two", "page three"}, false},
		{1, []string{"page one"}, true},
		{2, []string{"page one", "page two"}, true},
		{3, []string{"page one", "page two", "page three"}, false},
		{10, []string{"page one", "page two", "page three"}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxPages), func(t *testing.T) {
			var progress [][2]int
			doc, err := Extract(context.Background(), threePages(), Options{
				MaxPages: tt.maxPages,
				Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(doc.Pages, tt.wantPages) || doc.Truncated != tt.wantTruncated || doc.NumPages != 3 {
				t.Errorf("got pages %q truncated %v of %d; want %q truncated %v of 3",
					doc.Pages, doc.Truncated, doc.NumPages, tt.wantPages, tt.wantTruncated)
			}
			var want [][2]int
			for i := range tt.wantPages {
				want = append(want, [2]int{i + 1, len(tt.wantPages)})
			}
			if !slices.Equal(progress, want) {
				t.Errorf("progress = %v, want %v", progress, want)
			}
		})
	}
}

// errAfter is a context whose Err turns to Canceled after n calls: it shows
// where Extract looks at its context without relying on timing.
type errAfter struct {
	context.Context
	n atomic.Int64
}

func (c *errAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestExtractHonoursContext(t *testing.T) {
	long := strings.Repeat(textAt("F1", 10, 72, 700, "x"), 3*ctxCheckEvery)
	tests := []struct {
		name      string
		data      []byte
		ctx       func() (context.Context, func(done, total int))
		wantPages int // pages reported done before the cancellation took effect
	}{
		{
			name: "cancelled before",
			data: threePages(),
			ctx: func() (context.Context, func(int, int)) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, nil
			},
		},
		{
			name: "cancelled between pages",
			data: threePages(),
			ctx: func() (context.Context, func(int, int)) {
				ctx, cancel := context.WithCancel(context.Background())
				return ctx, func(done, total int) {
					if done == 1 {
						cancel()
					}
				}
			},
			wantPages: 1,
		},
		{
			name: "cancelled inside a long page",
			data: testPDF{pages: []string{long}}.bytes(),
			ctx: func() (context.Context, func(int, int)) {
				// Two checks pass (Extract's start and the page loop); the
				// first check inside the content stream fails.
				c := &errAfter{Context: context.Background()}
				c.n.Store(2)
				return c, nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, progress := tt.ctx()
			done := 0
			doc, err := Extract(ctx, tt.data, Options{Progress: func(d, total int) {
				done = d
				if progress != nil {
					progress(d, total)
				}
			}})
			if !errors.Is(err, context.Canceled) || doc != nil {
				t.Fatalf("Extract = %v, %v; want context.Canceled", doc, err)
			}
			if done != tt.wantPages {
				t.Errorf("pages done = %d, want %d", done, tt.wantPages)
			}
		})
	}
}

func TestExtractSurvivesHostileContent(t *testing.T) {
	tests := []struct {
		name     string
		pdf      testPDF
		contains string
	}{
		{
			name:     "form drawing itself",
			pdf:      testPDF{xobjects: map[string]string{"X1": textAt("F1", 10, 0, 0, "loop") + "/X1 Do /X1 Do /X1 Do"}, pages: []string{"q 1 0 0 1 72 700 cm /X1 Do Q"}},
			contains: "loop",
		},
		{
			name:     "unbalanced state operators",
			pdf:      testPDF{pages: []string{"Q Q Q ET ET " + textAt("F1", 10, 72, 700, "still here") + strings.Repeat("q ", 1000)}},
			contains: "still here",
		},
		{
			name:     "unknown font and operators",
			pdf:      testPDF{pages: []string{"BT /F9 10 Tf (lost) Tj ET xyz 1 2 3 foo " + textAt("F1", 10, 72, 700, "found")}},
			contains: "found",
		},
		{
			name:     "unterminated string and array",
			pdf:      testPDF{pages: []string{textAt("F1", 10, 72, 700, "first") + "BT /F1 10 Tf [(open (nested) Tj"}},
			contains: "first",
		},
		{
			name:     "non-finite and huge numbers",
			pdf:      testPDF{pages: []string{"1e308 0 0 1e308 0 0 cm " + "BT /F1 1e300 Tf 9e999 -9e999 Td (big) Tj ET Q " + textAt("F1", 10, 72, 700, "sane")}},
			contains: "",
		},
		{
			name:     "glyph budget",
			pdf:      testPDF{compress: true, pages: []string{"BT /F1 1 Tf " + strings.Repeat("("+strings.Repeat("x", 1000)+") Tj ", maxGlyphs/1000+5) + "ET"}},
			contains: "xxx",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Extract(context.Background(), tt.pdf.bytes(), Options{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if len(doc.Pages) != 1 || !strings.Contains(doc.Pages[0], tt.contains) {
				t.Errorf("pages = %.200q, want one containing %q", doc.Pages, tt.contains)
			}
			if n := len(doc.Pages[0]); n > maxGlyphs*2 {
				t.Errorf("page text is %d bytes, over the glyph budget", n)
			}
		})
	}
}

// Extract keeps no state between calls, so concurrent requests can share
// one input buffer (run with -race).
func TestExtractConcurrentCallsShareInput(t *testing.T) {
	data := testPDF{
		fonts: map[string]string{"F1": courier("/Encoding << /Differences [1 /fi] >>")},
		pages: []string{textAt("F1", 10, 72, 700, `\001rst page`), textAt("F1", 10, 72, 700, "second page")},
	}.bytes()
	orig := bytes.Clone(data)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			doc, err := Extract(context.Background(), data, Options{})
			switch {
			case err != nil:
				errs <- err
			case !slices.Equal(doc.Pages, []string{"first page", "second page"}):
				errs <- fmt.Errorf("pages = %q", doc.Pages)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !bytes.Equal(data, orig) {
		t.Error("Extract modified its input")
	}
}
