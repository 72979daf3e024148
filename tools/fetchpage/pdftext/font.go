package pdftext

// Fonts: turning the codes of a shown string into text and advance widths.
// Every font is decoded once per document into lookup tables (a 256-entry
// table for simple fonts, maps for composite fonts), so the per-glyph cost in
// the content loop is an index, not a walk over PDF objects.

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
	"golang.org/x/text/encoding/charmap"
)

const (
	maxCMapBytes    = 4 << 20 // a ToUnicode or encoding CMap stream
	maxFontFileRead = 64 << 10
	maxCMapEntries  = 1 << 17 // expanded bfrange entries per font
	maxWidthEntries = 1 << 17
	maxFonts        = 2000    // fonts decoded per document
	maxFontEntries  = 1 << 21 // CMap and width entries per document
)

// font is the decoded form of a PDF font dictionary.
type font struct {
	composite bool
	// codespace for composite fonts: lengths by first byte are not enough
	// in general, so keep the ranges.
	space []codeRange

	// simple fonts
	text  [256]string
	width [256]float64 // text-space units per unit of font size

	// composite fonts
	cmap    map[uint32]string
	ranges  []uniRange // bfranges too large to expand
	widths  map[uint32]float64
	dw      float64
	ucs2    bool // predefined UCS-2/UTF-16 encodings: the code is the text
	hasUni  bool
	missing float64
}

type codeRange struct {
	n      int
	lo, hi [4]byte
}

type uniRange struct {
	n      int
	lo, hi uint32
	dst    []uint16
}

// decodeNext returns the code at the start of s and its length in bytes.
func (f *font) decodeNext(s []byte) (code uint32, n int) {
	if !f.composite {
		return uint32(s[0]), 1
	}
	for _, r := range f.space {
		if r.n > len(s) {
			continue
		}
		ok := true
		for i := 0; i < r.n; i++ {
			if s[i] < r.lo[i] || s[i] > r.hi[i] {
				ok = false
				break
			}
		}
		if ok {
			var c uint32
			for i := 0; i < r.n; i++ {
				c = c<<8 | uint32(s[i])
			}
			return c, r.n
		}
	}
	if len(f.space) == 0 && len(s) >= 2 {
		return uint32(s[0])<<8 | uint32(s[1]), 2
	}
	// No range matched: consume the shortest code, as viewers do.
	n = 1
	if len(f.space) > 0 {
		n = f.space[0].n
		for _, r := range f.space {
			n = min(n, r.n)
		}
	}
	n = min(n, len(s))
	var c uint32
	for i := 0; i < n; i++ {
		c = c<<8 | uint32(s[i])
	}
	return c, n
}

// glyph returns the text and the advance width of a code.
func (f *font) glyph(code uint32) (string, float64) {
	if !f.composite {
		return f.text[code&0xff], f.width[code&0xff]
	}
	w, ok := f.widths[code]
	if !ok {
		w = f.dw
	}
	if s, ok := f.cmap[code]; ok {
		return s, w
	}
	for _, r := range f.ranges {
		if code >= r.lo && code <= r.hi {
			return utf16Offset(r.dst, code-r.lo), w
		}
	}
	if f.ucs2 && code < 0x110000 {
		return string(rune(code)), w
	}
	return "", w
}

// fontCache holds the fonts of one document, keyed by object reference, and
// the glyph-name lookups already done.
type fontCache struct {
	byRef map[string]*font
	names map[string]string
	// Budgets: a hostile document can declare many fonts with large maps.
	loaded, entries int
}

func newFontCache() *fontCache {
	return &fontCache{byRef: map[string]*font{}, names: map[string]string{}}
}

// load decodes a font dictionary; past the document's font budget it
// returns nil and the font's text is skipped.
func (fc *fontCache) load(v pdf.Value) *font {
	if fc.loaded >= maxFonts || fc.entries >= maxFontEntries {
		return nil
	}
	fc.loaded++
	f := &font{}
	defer func() { fc.entries += len(f.cmap) + len(f.widths) + len(f.ranges) + len(f.space) }()
	var toUni cmapData
	if tu := v.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		if data, err := readStream(tu, maxCMapBytes); err == nil {
			toUni = parseCMap(data)
			f.hasUni = len(toUni.uni) > 0 || len(toUni.ranges) > 0
		}
	}
	subtype := v.Key("Subtype").Name()
	if subtype == "Type0" {
		f.loadComposite(v, toUni)
		return f
	}
	desc := v.Key("FontDescriptor")
	f.loadSimpleWidths(v, subtype, desc)
	fc.loadSimpleText(f, v, subtype, desc, toUni.uni)
	return f
}

// loadComposite fills a Type0 font: its text from ToUnicode, its code
// space from the encoding CMap (Identity-H/V: two bytes a code) or else
// ToUnicode's, its widths from the descendant CIDFont.
func (f *font) loadComposite(v pdf.Value, toUni cmapData) {
	f.composite = true
	f.cmap, f.ranges = toUni.uni, toUni.ranges
	if f.cmap == nil {
		f.cmap = map[uint32]string{}
	}
	enc := v.Key("Encoding")
	switch enc.Kind() {
	case pdf.Name:
		name := enc.Name()
		if strings.Contains(name, "UCS2") || strings.Contains(name, "UTF16") {
			f.ucs2 = true
		}
		if name == "Identity-H" || name == "Identity-V" {
			f.space = []codeRange{{n: 2, lo: [4]byte{0, 0}, hi: [4]byte{0xff, 0xff}}}
		}
	case pdf.Stream:
		if data, err := readStream(enc, maxCMapBytes); err == nil {
			f.space = parseCMap(data).space
		}
	}
	if len(f.space) == 0 {
		f.space = toUni.space
	}
	desc := v.Key("DescendantFonts").Index(0)
	f.dw = 1
	if dw := desc.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
		f.dw = dw.Float64() / 1000
	}
	f.widths = parseCIDWidths(desc.Key("W"))
}

// loadSimpleWidths fills a simple font's 256 advance widths from Widths
// (in the FontMatrix's units for Type3), or guesses them for the standard
// 14 fonts, which may omit it.
func (f *font) loadSimpleWidths(v pdf.Value, subtype string, desc pdf.Value) {
	scale := 0.001
	if subtype == "Type3" {
		if m := v.Key("FontMatrix"); m.Len() == 6 {
			scale = math.Abs(m.Index(0).Float64())
		}
	}
	f.missing = desc.Key("MissingWidth").Float64() * scale
	for i := range f.width {
		f.width[i] = f.missing
	}
	widths := v.Key("Widths")
	first := int(v.Key("FirstChar").Int64())
	if n := widths.Len(); n > 0 {
		for i := 0; i < n && first+i < 256; i++ {
			if first+i >= 0 {
				f.width[first+i] = widths.Index(i).Float64() * scale
			}
		}
		return
	}
	// Half an em is a fair guess for spacing decisions, and monospace
	// fonts get their real 0.6.
	w := 0.5
	if strings.Contains(v.Key("BaseFont").Name(), "Courier") {
		w = 0.6
	}
	for i := range f.width {
		f.width[i] = w
	}
}

// loadSimpleText fills a simple font's 256 texts. ToUnicode wins; then
// the glyph names of the encoding (its Differences, or the font program's
// built-in encoding when none is named); then the base encoding's byte
// meaning (WinAnsi, MacRoman, else standard ASCII with typographic quotes),
// and Latin-1 for the high half.
func (fc *fontCache) loadSimpleText(f *font, v pdf.Value, subtype string, desc pdf.Value, toUni map[uint32]string) {
	var names [256]string
	var base *charmap.Charmap
	standard := true
	enc := v.Key("Encoding")
	baseName := enc.Name()
	if enc.Kind() == pdf.Dict {
		baseName = enc.Key("BaseEncoding").Name()
	}
	switch baseName {
	case "WinAnsiEncoding":
		base, standard = charmap.Windows1252, false
	case "MacRomanEncoding", "MacExpertEncoding":
		base, standard = charmap.Macintosh, false
	}
	if baseName == "" && subtype == "Type1" {
		// No encoding named: the font program's built-in encoding applies.
		names = builtinEncoding(desc)
	}
	if enc.Kind() == pdf.Dict {
		applyDifferences(&names, enc.Key("Differences"))
	}
	fc.resolveNames(names[:])
	for c := 0; c < 256; c++ {
		if s, ok := toUni[uint32(c)]; ok && usable(s) {
			f.text[c] = s
			continue
		}
		if names[c] != "" {
			if s := fc.names[names[c]]; s != "" {
				f.text[c] = s
				continue
			}
		}
		f.text[c] = byteText(c, base, standard)
	}
}

// applyDifferences sets the glyph names an encoding's Differences array
// gives: a code, then the names of it and the codes after it.
func applyDifferences(names *[256]string, diffs pdf.Value) {
	code := 0
	for i := 0; i < diffs.Len(); i++ {
		d := diffs.Index(i)
		switch d.Kind() {
		case pdf.Integer:
			code = int(d.Int64())
		case pdf.Name:
			if code >= 0 && code < 256 {
				names[code] = d.Name()
			}
			code++
		}
	}
}

// byteText is the text of code c by its base encoding alone: base's
// meaning of the byte, or with the standard encoding printable ASCII (its
// quotes are the typographic ones), and Latin-1 above 0xa0.
func byteText(c int, base *charmap.Charmap, standard bool) string {
	switch {
	case base != nil:
		if c >= 32 {
			return cleanText(string(base.DecodeByte(byte(c))))
		}
	case standard && c >= 32 && c < 127:
		switch c {
		case '\'':
			return "\u2019"
		case '`':
			return "\u2018"
		default:
			return string(rune(c))
		}
	case c >= 0xa0:
		return cleanText(string(charmap.ISO8859_1.DecodeByte(byte(c))))
	}
	return ""
}

// usable reports whether a ToUnicode mapping carries text, not a
// placeholder.
func usable(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || (r < 32 && r != '\t') {
			return false
		}
	}
	return true
}

// cleanText expands ligatures and normalises the few code points that would
// otherwise make words differ from what a reader types.
func cleanText(s string) string {
	if s == "" {
		return s
	}
	simple := true
	for _, r := range s {
		if r >= 0xa0 {
			simple = false
			break
		}
	}
	if simple {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case 0xfb00:
			b.WriteString("ff")
		case 0xfb01:
			b.WriteString("fi")
		case 0xfb02:
			b.WriteString("fl")
		case 0xfb03:
			b.WriteString("ffi")
		case 0xfb04:
			b.WriteString("ffl")
		case 0xfb05, 0xfb06:
			b.WriteString("st")
		case 0xa0:
			b.WriteByte(' ')
		case 0xad:
			b.WriteByte('-')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parseCIDWidths reads a CIDFont W array: "c [w1 w2 ...]" and "c1 c2 w".
func parseCIDWidths(w pdf.Value) map[uint32]float64 {
	out := map[uint32]float64{}
	n := w.Len()
	for i := 0; i < n; {
		first := w.Index(i)
		if i+1 >= n {
			break
		}
		second := w.Index(i + 1)
		if second.Kind() == pdf.Array {
			c := uint32(first.Int64())
			for k := 0; k < second.Len() && len(out) < maxWidthEntries; k++ {
				out[c+uint32(k)] = second.Index(k).Float64() / 1000
			}
			i += 2
			continue
		}
		if i+2 >= n {
			break
		}
		a, b := first.Int64(), second.Int64()
		wv := w.Index(i+2).Float64() / 1000
		for c := a; c <= b && c >= 0 && len(out) < maxWidthEntries; c++ {
			out[uint32(c)] = wv
		}
		i += 3
	}
	return out
}

// readStream decodes a stream, refusing to hold more than limit bytes.
func readStream(v pdf.Value, limit int) ([]byte, error) {
	return readStreamAppend(nil, v, limit)
}

// readStreamAppend appends the decoded stream to buf, up to limit bytes.
// What was decoded before an error is kept: a damaged stream's first part
// is usually fine.
func readStreamAppend(buf []byte, v pdf.Value, limit int) (out []byte, err error) {
	out = buf
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: stream: %v", ErrCorrupt, r)
		}
	}()
	if limit <= 0 {
		return out, nil
	}
	rc := v.Reader()
	defer rc.Close()
	lr := io.LimitReader(rc, int64(limit))
	for {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		n, rerr := lr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if rerr == io.EOF {
			return out, nil
		}
		if rerr != nil {
			return out, rerr
		}
	}
}
