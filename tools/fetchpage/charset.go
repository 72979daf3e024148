package fetchpage

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/gogs/chardet"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
)

// Charset decisions, in the order browsers take them (WHATWG Encoding and
// HTML "determining the character encoding"), with two departures that
// serve a reader better than a browser's bug-for-bug compatibility:
//
//  1. A byte order mark wins.
//  2. The charset parameter of the Content-Type header.
//  3. For HTML, a <meta charset> or <meta http-equiv=content-type> found by
//     a prescan of the document's start. Browsers prescan 1024 bytes and
//     then honour a later <meta> by re-parsing ("change the encoding"); we
//     scan up to metaScanLimit bytes at once, which has the same effect.
//  4. Nothing declared: UTF-8 when the body is valid UTF-8, else the
//     statistical detector (ICU's, ported by gogs/chardet), else
//     windows-1252.
//
// Departures: a declared single-byte Latin charset (ISO-8859-1,
// windows-1252, US-ASCII — often a server default no one chose) on a body
// that is valid UTF-8 with multi-byte sequences is decoded as UTF-8, since
// Latin-1 text that happens to form valid UTF-8 sequences is vanishingly
// rare while the mislabel is common; and a declared UTF-8 on a body that is
// mostly not UTF-8 goes to the detector instead of producing U+FFFD runs.

// metaScanLimit bounds the <meta> prescan; some pages put 60 KiB of inline
// scripts and styles before their <meta charset>.
const metaScanLimit = 128 << 10

// detectLimit bounds what the statistical detector reads.
const detectLimit = 64 << 10

// charsetDecision is which encoding was chosen and why (for tests and
// logs).
type charsetDecision struct {
	Name   string // WHATWG name, e.g. "utf-8", "windows-1252", "shift_jis"
	Source string // "bom", "header", "meta", "utf8", "detector", "default"
}

// decodeCharset converts body to UTF-8. contentType is the header as sent;
// isHTML enables the <meta> prescan. Invalid sequences become U+FFFD.
func decodeCharset(body []byte, contentType string, isHTML bool) ([]byte, charsetDecision, error) {
	enc, dec := chooseEncoding(body, contentType, isHTML)
	if dec.Name == "utf-8" {
		if dec.Source == "bom" {
			body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
		}
		return bytes.ToValidUTF8(body, []byte("\uFFFD")), dec, nil
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return nil, dec, fmt.Errorf("decode %s: %w", dec.Name, err)
	}
	return bytes.ToValidUTF8(out, []byte("\uFFFD")), dec, nil
}

func chooseEncoding(body []byte, contentType string, isHTML bool) (encoding.Encoding, charsetDecision) {
	if enc, name := bomEncoding(body); enc != nil {
		return enc, charsetDecision{name, "bom"}
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if enc, name := lookupLabel(params["charset"]); enc != nil {
			return checkDeclared(body, enc, name, "header")
		}
	}
	if isHTML {
		if enc, name := lookupLabel(prescanMeta(body)); enc != nil {
			// A <meta> that claims UTF-16 is read as UTF-8 (the document
			// could not have been parsed to find it otherwise).
			if strings.HasPrefix(name, "utf-16") {
				enc, name = unicode.UTF8, "utf-8"
			}
			return checkDeclared(body, enc, name, "meta")
		}
	}
	if utf8.Valid(body) {
		return unicode.UTF8, charsetDecision{"utf-8", "utf8"}
	}
	if enc, name := detect(body); enc != nil {
		return enc, charsetDecision{name, "detector"}
	}
	return windows1252(), charsetDecision{"windows-1252", "default"}
}

// checkDeclared applies the two departures described above to a declared
// encoding.
func checkDeclared(body []byte, enc encoding.Encoding, name, source string) (encoding.Encoding, charsetDecision) {
	switch name {
	case "windows-1252", "iso-8859-15", "iso-8859-2":
		if hasMultibyte(body) && utf8.Valid(body) {
			return unicode.UTF8, charsetDecision{"utf-8", source + "-mislabelled"}
		}
	case "utf-8":
		if !mostlyUTF8(body) {
			if enc, name := detect(body); enc != nil && name != "utf-8" {
				return enc, charsetDecision{name, source + "-mislabelled"}
			}
			return windows1252(), charsetDecision{"windows-1252", source + "-mislabelled"}
		}
	}
	return enc, charsetDecision{name, source}
}

func windows1252() encoding.Encoding {
	e, _ := htmlindex.Get("windows-1252")
	return e
}

func bomEncoding(b []byte) (encoding.Encoding, string) {
	switch {
	case bytes.HasPrefix(b, []byte("\xef\xbb\xbf")):
		return unicode.UTF8, "utf-8"
	case bytes.HasPrefix(b, []byte("\xfe\xff")):
		return unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM), "utf-16be"
	case bytes.HasPrefix(b, []byte("\xff\xfe")):
		return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM), "utf-16le"
	}
	return nil, ""
}

// lookupLabel maps a charset label to its WHATWG encoding; nil when the
// label is empty or unknown (an unknown label is as good as none).
func lookupLabel(label string) (encoding.Encoding, string) {
	label = strings.Trim(strings.TrimSpace(label), `"'`)
	if label == "" {
		return nil, ""
	}
	enc, err := htmlindex.Get(label)
	if err != nil || enc == nil {
		return nil, ""
	}
	name, err := htmlindex.Name(enc)
	if err != nil || name == "replacement" {
		return nil, ""
	}
	return enc, name
}

// prescanMeta returns the charset label of the first <meta> that declares
// one, scanning at most metaScanLimit bytes with the HTML tokenizer (which
// skips comments, scripts and styles the way a parser does).
func prescanMeta(body []byte) string {
	if len(body) > metaScanLimit {
		body = body[:metaScanLimit]
	}
	// Cheap exit: most of the scan is spent on pages that declare nothing.
	if !containsFold(body, "<meta") {
		return ""
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			if a == atom.Body {
				// The prescan of a browser stops nowhere in particular, but a
				// <meta> inside the body of a real page is template noise.
				return ""
			}
			if a != atom.Meta || !hasAttr {
				continue
			}
			var charset, httpEquiv, content string
			for {
				k, v, more := z.TagAttr()
				switch string(k) {
				case "charset":
					charset = string(v)
				case "http-equiv":
					httpEquiv = strings.ToLower(string(v))
				case "content":
					content = string(v)
				}
				if !more {
					break
				}
			}
			if charset != "" {
				return charset
			}
			if httpEquiv == "content-type" {
				if c := charsetFromContent(content); c != "" {
					return c
				}
			}
		}
	}
}

// charsetFromContent extracts charset=... from a Content-Type value the way
// the HTML standard's "algorithm for extracting a character encoding from a
// meta element" does (tolerant of missing quotes and spaces).
func charsetFromContent(s string) string {
	lower := strings.ToLower(s)
	i := strings.Index(lower, "charset")
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(s[i+len("charset"):], " \t\n\f\r")
	if !strings.HasPrefix(rest, "=") {
		return charsetFromContent(s[i+len("charset"):])
	}
	rest = strings.TrimLeft(rest[1:], " \t\n\f\r")
	if rest == "" {
		return ""
	}
	if q := rest[0]; q == '"' || q == '\'' {
		if j := strings.IndexByte(rest[1:], q); j >= 0 {
			return rest[1 : 1+j]
		}
		return ""
	}
	if j := strings.IndexAny(rest, " \t\n\f\r;"); j >= 0 {
		return rest[:j]
	}
	return rest
}

func containsFold(b []byte, lowerASCII string) bool {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], lowerASCII[0])
		if j < 0 {
			return false
		}
		i += j
		if i+len(lowerASCII) <= len(b) && bytes.EqualFold(b[i:i+len(lowerASCII)], []byte(lowerASCII)) {
			return true
		}
		i++
	}
}

// hasMultibyte reports whether b holds a UTF-8 multi-byte lead byte
// followed by a continuation byte.
func hasMultibyte(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		if b[i] >= 0xC2 && b[i] <= 0xF4 && b[i+1]&0xC0 == 0x80 {
			return true
		}
	}
	return false
}

// mostlyUTF8 reports whether at most one in 50 non-ASCII sequences of b is
// invalid UTF-8: a page declared UTF-8 with a stray Latin-1 byte stays
// UTF-8; one whose every accented letter is invalid does not.
func mostlyUTF8(b []byte) bool {
	if utf8.Valid(b) {
		return true
	}
	var good, bad int
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			bad++
		} else {
			good++
		}
		i += size
	}
	return bad*50 <= good+bad
}

// detect runs the statistical detector over the start of b and maps its
// answer to a WHATWG encoding; nil when it has no usable answer.
func detect(b []byte) (encoding.Encoding, string) {
	if len(b) > detectLimit {
		b = b[:detectLimit]
	}
	res, err := chardet.NewHtmlDetector().DetectBest(b)
	if err != nil || res == nil || res.Confidence < 10 {
		return nil, ""
	}
	label := strings.ToLower(res.Charset)
	switch label {
	case "gb-18030":
		label = "gb18030"
	case "iso-8859-8-i":
		label = "iso-8859-8-i"
	}
	return lookupLabel(label)
}
