package fetchpage

import (
	"bytes"
	"fmt"
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
// (the text of the page, outside <script>, <style> and the like, in
// document order): it returns the page unchanged when it holds no more,
// else the page cut after its first limit bytes of text, rendered back to
// HTML, and what was cut.
//
// go-trafilatura's work grows with the square of a page's paragraph text
// (it joins every paragraph's text into one string, one += at a time):
// 256 KiB of text allocate 0.3 GiB, 1 MiB 3.7 GiB, and one 9.5 MB page of
// paragraphs took the server to 5.8 GiB of RSS. Cutting the text, not the
// bytes, keeps pages whose head is mostly scripts and styles whole, and a
// page whose bytes are within limit is never even parsed here, so ordinary
// pages (and the extraction-quality corpus) reach the extractor as they
// came. The work here is linear: one parse, one walk, one render.
func boundText(page []byte, limit int) ([]byte, *textCut, error) {
	if limit <= 0 || len(page) <= limit {
		return page, nil, nil
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, nil, fmt.Errorf("parse html: %w", err)
	}
	total := 0
	var at *html.Node // the text node at which the budget runs out
	keepInAt := 0     // bytes of at's text to keep
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				if at == nil && total+len(c.Data) > limit {
					at, keepInAt = c, limit-total
				}
				total += len(c.Data)
			case c.Type == html.ElementNode && rawTextElement(c.DataAtom):
				// Script and style text is never content.
			default:
				walk(c)
			}
		}
	}
	walk(doc)
	if at == nil {
		return page, nil, nil
	}
	at.Data = at.Data[:runeStart(at.Data, keepInAt)]
	for n := at; n != nil && n != doc; n = n.Parent {
		for n.NextSibling != nil {
			n.Parent.RemoveChild(n.NextSibling)
		}
	}
	var out bytes.Buffer
	out.Grow(limit * 2)
	if err := html.Render(&out, doc); err != nil {
		return nil, nil, fmt.Errorf("render the cut page: %w", err)
	}
	return out.Bytes(), &textCut{Kept: limit - keepInAt + len(at.Data), Total: total}, nil
}

// rawTextElement reports elements whose text is code or markup, not
// content.
func rawTextElement(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Textarea, atom.Xmp, atom.Iframe, atom.Noembed, atom.Noframes:
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
