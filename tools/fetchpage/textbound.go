package fetchpage

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// textCut says how much of a page's text the extractor was given, when the
// extraction budget cut the page.
type textCut struct {
	Kept  int // bytes of text kept
	Total int // bytes of text in the page
}

// boundText keeps the extractor's input to at most limit bytes of text
// (the text of the page outside <script>, <style> and the like, counted as
// written): it returns the page unchanged when it holds no more, else the
// page's bytes up to the point where its text reaches limit, and what was
// cut. The parser closes what the cut leaves open.
//
// go-trafilatura's work grows with the square of a page's paragraph text
// (it joins every paragraph's text into one string, one += at a time):
// 256 KiB of text allocate 0.3 GiB, 1 MiB 3.7 GiB, and one 9.5 MB page of
// paragraphs took the server to 5.8 GiB of RSS. Cutting the text, not the
// bytes, keeps pages whose head is mostly scripts and styles whole, and a
// page whose bytes are within limit is not even read here, so ordinary
// pages (and the extraction-quality corpus) reach the extractor as they
// came. The work here is one pass of the tokenizer, which builds no tree.
func boundText(page []byte, limit int) ([]byte, *textCut) {
	if limit <= 0 || len(page) <= limit {
		return page, nil
	}
	z := html.NewTokenizer(bytes.NewReader(page))
	offset, total := 0, 0
	cutAt, kept := -1, 0
	raw := false // the previous token opened a raw-text element
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF: the tokenizer reads every input to its end
		}
		n := len(z.Raw())
		switch tt {
		case html.TextToken:
			if !raw {
				if cutAt < 0 && total+n > limit {
					text := z.Raw()
					keep := runeStart(string(text), limit-total)
					cutAt, kept = offset+keep, total+keep
				}
				total += n
			}
			raw = false
		case html.StartTagToken:
			name, _ := z.TagName()
			raw = rawTextElement(atom.Lookup(name))
		default:
			raw = false
		}
		offset += n
	}
	if cutAt < 0 {
		return page, nil
	}
	return page[:cutAt], &textCut{Kept: kept, Total: total}
}

// rawTextElement reports the elements the tokenizer reads as raw text
// that is code or markup, not content (<title> and <textarea> are content).
func rawTextElement(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Xmp, atom.Iframe, atom.Noembed, atom.Noframes:
		return true
	}
	return false
}

// runeStart moves n back to the start of a UTF-8 sequence in s, and then to
// just after the last space before it when one is near, so the cut does
// not split a character or (usually) a word.
func runeStart(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if i := strings.LastIndexByte(s[max(0, n-64):n], ' '); i >= 0 {
		return max(0, n-64) + i + 1
	}
	return n
}
