package pdftext

// Fonts: turning the codes of a shown string into text and advance widths.
// Every font is decoded once per document into lookup tables (a 256-entry
// table for simple fonts, maps for composite fonts), so the per-glyph cost in
// the content loop is an index, not a walk over PDF objects.

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
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
	subtype := v.Key("Subtype").Name()
	var toUni map[uint32]string
	var uniRanges []uniRange
	var uniSpace []codeRange
	if tu := v.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		if data, err := readStream(tu, maxCMapBytes); err == nil {
			cm := parseCMap(data)
			toUni, uniRanges, uniSpace = cm.uni, cm.ranges, cm.space
			f.hasUni = len(toUni) > 0 || len(uniRanges) > 0
		}
	}
	if subtype == "Type0" {
		f.composite = true
		f.cmap, f.ranges = toUni, uniRanges
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
			f.space = uniSpace
		}
		desc := v.Key("DescendantFonts").Index(0)
		f.dw = 1
		if dw := desc.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.dw = dw.Float64() / 1000
		}
		f.widths = parseCIDWidths(desc.Key("W"))
		return f
	}

	// Simple font: widths.
	scale := 0.001
	if subtype == "Type3" {
		if m := v.Key("FontMatrix"); m.Len() == 6 {
			scale = math.Abs(m.Index(0).Float64())
		}
	}
	desc := v.Key("FontDescriptor")
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
	} else {
		// Standard 14 fonts may omit Widths; half an em is a fair guess
		// for spacing decisions, and monospace fonts get their real 0.6.
		w := 0.5
		if strings.Contains(v.Key("BaseFont").Name(), "Courier") {
			w = 0.6
		}
		for i := range f.width {
			f.width[i] = w
		}
	}

	// Simple font: text. The encoding gives glyph names, ToUnicode wins.
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
		diffs := enc.Key("Differences")
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
		switch {
		case base != nil:
			if c >= 32 {
				f.text[c] = cleanText(string(base.DecodeByte(byte(c))))
			}
		case standard && c >= 32 && c < 127:
			switch c {
			case '\'':
				f.text[c] = "\u2019"
			case '`':
				f.text[c] = "\u2018"
			default:
				f.text[c] = string(rune(c))
			}
		case c >= 0xa0:
			f.text[c] = cleanText(string(charmap.ISO8859_1.DecodeByte(byte(c))))
		}
	}
	return f
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

// resolveNames fills fc.names for the given glyph names.
func (fc *fontCache) resolveNames(names []string) {
	var unknown []string
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		if _, ok := fc.names[n]; ok {
			continue
		}
		if s, ok := nameText(n); ok {
			fc.names[n] = cleanText(s)
			continue
		}
		unknown = append(unknown, n)
	}
	for len(unknown) > 0 {
		batch := unknown[:min(len(unknown), 250)]
		unknown = unknown[len(batch):]
		for n, s := range aglLookup(batch) {
			fc.names[n] = cleanText(s)
		}
		for _, n := range batch {
			if _, ok := fc.names[n]; !ok {
				// Suffixed names (a.sc, f_i) fall back to their parts.
				fc.names[n] = fc.suffixed(n)
			}
		}
	}
}

func (fc *fontCache) suffixed(n string) string {
	if i := strings.IndexByte(n, '.'); i > 0 {
		n = n[:i]
	} else if !strings.Contains(n, "_") {
		return ""
	}
	var b strings.Builder
	for _, part := range strings.Split(n, "_") {
		if s, ok := nameText(part); ok {
			b.WriteString(s)
			continue
		}
		s, ok := aglLookup([]string{part})[part]
		if !ok {
			return ""
		}
		b.WriteString(s)
	}
	return cleanText(b.String())
}

// nameText decodes the glyph names that carry their code point (uniXXXX,
// uXXXX[XX]) and one-letter names.
func nameText(n string) (string, bool) {
	if len(n) == 1 && n[0] > ' ' && n[0] < 127 {
		return n, true
	}
	if strings.HasPrefix(n, "uni") && len(n) >= 7 && (len(n)-3)%4 == 0 {
		var u []uint16
		for i := 3; i < len(n); i += 4 {
			v, err := strconv.ParseUint(n[i:i+4], 16, 16)
			if err != nil {
				return "", false
			}
			u = append(u, uint16(v))
		}
		return string(utf16.Decode(u)), true
	}
	if strings.HasPrefix(n, "u") && len(n) >= 5 && len(n) <= 7 {
		v, err := strconv.ParseUint(n[1:], 16, 32)
		if err == nil && v < 0x110000 {
			return string(rune(v)), true
		}
	}
	return "", false
}

// aglLookup maps glyph names to text with the Adobe Glyph List the pdf
// library carries. The list is not exported, but its Differences decoder
// is: the names are placed in the Differences arrays of two synthetic font
// dictionaries, at two different codes, so a name the list does not know
// (decoded as its own code both times) can be told from one it does.
func aglLookup(names []string) map[string]string {
	out := map[string]string{}
	var ok []string
	for _, n := range names {
		valid := n != "" && len(n) < 64
		for i := 0; i < len(n) && valid; i++ {
			c := n[i]
			valid = c > ' ' && c < 127 && !isDelimiter(c) && c != '#'
		}
		if valid {
			ok = append(ok, n)
		}
	}
	if len(ok) == 0 || len(ok) > 254 {
		return out
	}
	var diffs strings.Builder
	for _, n := range ok {
		diffs.WriteString(" /")
		diffs.WriteString(n)
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	off := b.Len()
	fmt.Fprintf(&b, "1 0 obj\n<< /A << /Encoding << /Differences [1%s] >> >> /B << /Encoding << /Differences [2%s] >> >> >>\nendobj\n", diffs.String(), diffs.String())
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 2\n0000000000 65535 f \n%010d 00000 n \ntrailer\n<< /Size 2 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", off, xref)
	defer func() { _ = recover() }() // a library failure only loses names
	r, err := pdf.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		return out
	}
	fa := pdf.Font{V: r.Trailer().Key("Root").Key("A")}
	fb := pdf.Font{V: r.Trailer().Key("Root").Key("B")}
	ea, eb := fa.Encoder(), fb.Encoder()
	for i, n := range ok {
		ca, cb := byte(i+1), byte(i+2)
		sa := ea.Decode(string([]byte{ca}))
		sb := eb.Decode(string([]byte{cb}))
		if sa == sb && sa != string(rune(ca)) && sa != "" {
			out[n] = sa
		}
	}
	return out
}

// builtinEncoding reads the encoding vector of an embedded Type 1 font
// program ("dup 12 /fi put" in its clear-text part). TeX fonts without a
// ToUnicode map rely on it.
func builtinEncoding(desc pdf.Value) (names [256]string) {
	ff := desc.Key("FontFile")
	if ff.Kind() != pdf.Stream {
		return names
	}
	data, err := readStream(ff, maxFontFileRead)
	if err != nil && len(data) == 0 {
		return names
	}
	i := bytes.Index(data, []byte("/Encoding"))
	if i < 0 {
		return names
	}
	l := lexer{data: data, pos: i + len("/Encoding")}
	var ops [2]operand
	nops := 0
	var op operand
	for steps := 0; steps < 4096; steps++ {
		kind, word := l.next(&op)
		switch kind {
		case tokEOF:
			return names
		case tokOperand:
			if op.kind == opNum {
				ops[0], nops = op, 1
			} else if op.kind == opName && nops == 1 {
				ops[1], nops = op, 2
				ops[1].s = append([]byte(nil), op.s...)
			}
		case tokOperator:
			switch string(word) {
			case "put":
				if nops == 2 {
					c := int(ops[0].num)
					if c >= 0 && c < 256 {
						names[c] = string(ops[1].s)
					}
				}
				nops = 0
			case "def", "readonly":
				return names
			case "dup":
				nops = 0
			case "StandardEncoding":
				return names
			}
		}
		l.scratch = l.scratch[:0]
	}
	return names
}

// cmapData is what a CMap stream says: code space and code-to-text maps.
type cmapData struct {
	space  []codeRange
	uni    map[uint32]string
	ranges []uniRange
}

// parseCMap reads the bfchar, bfrange and codespacerange sections of a CMap.
func parseCMap(data []byte) cmapData {
	cm := cmapData{uni: map[uint32]string{}}
	l := lexer{data: data}
	var ops []operand
	var op operand
	entries := 0
	inArr := false
	var arr [][]byte
	for {
		kind, word := l.next(&op)
		switch kind {
		case tokEOF:
			return cm
		case tokArrOpen:
			inArr, arr = true, arr[:0]
			continue
		case tokArrClose:
			if inArr {
				inArr = false
				ops = append(ops, operand{kind: opArr, n: len(arr)})
				for _, s := range arr {
					ops = append(ops, operand{kind: opStr, s: s})
				}
			}
			continue
		case tokOperand:
			if op.kind == opStr {
				op.s = append([]byte(nil), op.s...)
			}
			if inArr {
				if op.kind == opStr {
					arr = append(arr, op.s)
				}
				continue
			}
			if len(ops) < 1<<16 {
				ops = append(ops, op)
			}
			continue
		case tokOperator:
		default:
			continue
		}
		switch string(word) {
		case "endcodespacerange":
			for i := 0; i+1 < len(ops); i += 2 {
				lo, hi := ops[i].s, ops[i+1].s
				if len(lo) == 0 || len(lo) > 4 || len(lo) != len(hi) {
					continue
				}
				r := codeRange{n: len(lo)}
				copy(r.lo[:], lo)
				copy(r.hi[:], hi)
				cm.space = append(cm.space, r)
			}
		case "endbfchar":
			for i := 0; i+1 < len(ops); i += 2 {
				if ops[i].kind != opStr || ops[i+1].kind != opStr || len(ops[i].s) > 4 {
					continue
				}
				if entries < maxCMapEntries {
					cm.uni[codeOf(ops[i].s)] = cleanText(utf16BE(ops[i+1].s))
					entries++
				}
			}
		case "endbfrange":
			for i := 0; i+2 < len(ops); {
				lo, hi := ops[i], ops[i+1]
				if lo.kind != opStr || hi.kind != opStr || len(lo.s) > 4 || len(hi.s) > 4 {
					i++
					continue
				}
				a, b := codeOf(lo.s), codeOf(hi.s)
				dst := ops[i+2]
				if dst.kind == opArr {
					for k := 0; k < dst.n && i+3+k < len(ops) && entries < maxCMapEntries; k++ {
						cm.uni[a+uint32(k)] = cleanText(utf16BE(ops[i+3+k].s))
						entries++
					}
					i += 3 + dst.n
					continue
				}
				i += 3
				if dst.kind != opStr || b < a {
					continue
				}
				units := utf16Units(dst.s)
				if b-a < 256 && entries+int(b-a) < maxCMapEntries {
					for c := a; c <= b; c++ {
						cm.uni[c] = cleanText(utf16Offset(units, c-a))
						entries++
					}
				} else if len(cm.ranges) < 4096 {
					cm.ranges = append(cm.ranges, uniRange{n: len(lo.s), lo: a, hi: b, dst: units})
				}
			}
		}
		ops = ops[:0]
		l.scratch = l.scratch[:0]
	}
}

func codeOf(b []byte) uint32 {
	var c uint32
	for _, x := range b {
		c = c<<8 | uint32(x)
	}
	return c
}

func utf16Units(b []byte) []uint16 {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
	}
	if len(b)%2 == 1 { // a one-byte destination: treat as a code unit
		u = append(u, uint16(b[len(b)-1]))
	}
	return u
}

func utf16BE(b []byte) string { return string(utf16.Decode(utf16Units(b))) }

// utf16Offset returns the text of a bfrange destination advanced by off.
func utf16Offset(units []uint16, off uint32) string {
	if len(units) == 0 {
		return ""
	}
	u := append([]uint16(nil), units...)
	u[len(u)-1] += uint16(off)
	return string(utf16.Decode(u))
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
