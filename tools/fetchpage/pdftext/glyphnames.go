package pdftext

// Glyph names: the names an encoding gives (Differences, a Type 1
// program's built-in encoding) turned into text, through the names that
// carry their code point and the Adobe Glyph List.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/ledongthuc/pdf"
)

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
