package fetchpage

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// The extractor rebuilds tables cell by cell and drops a cell whose text
// looks like furniture (a link around an icon, the word "twitter"), which
// shifts every later cell of the row into the wrong column. A table that
// survives extraction is therefore replaced by a clean copy of the page's
// own table: same rows, same cells, links kept, attributes, scripts and
// images dropped.

// maxTableCells bounds the tables kept for restoring; larger ones are
// layout grids or data dumps that the extractor's copy serves as well.
const maxTableCells = 5000

// sourceTables copies the page's data tables (no nested table) before the
// extractor changes the tree.
func sourceTables(doc *html.Node) []*html.Node {
	var out []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.Data {
			case "script", "style", "template", "head":
				continue
			case "table":
				if cells, nested := tableShape(c); !nested && cells > 0 && cells <= maxTableCells {
					out = append(out, cleanCopy(c))
				}
			}
			walk(c)
		}
	}
	walk(doc)
	return out
}

func tableShape(t *html.Node) (cells int, nested bool) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.Data {
			case "table":
				nested = true
				return
			case "td", "th":
				cells++
			}
			walk(c)
		}
	}
	walk(t)
	return cells, nested
}

// keptAttrs survive the copy.
var keptAttrs = map[string]bool{"href": true, "colspan": true, "rowspan": true}

// cleanCopy deep-copies n without scripts, styles, images, forms and
// presentational attributes.
func cleanCopy(n *html.Node) *html.Node {
	c := &html.Node{Type: n.Type, Data: n.Data, DataAtom: n.DataAtom}
	for _, a := range n.Attr {
		if keptAttrs[a.Key] {
			c.Attr = append(c.Attr, a)
		}
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		switch ch.Type {
		case html.ElementNode:
			switch ch.Data {
			case "img":
				// A check mark or a flag can be all a cell says
				// (docs.docker.com's platform tables: <img alt="yes">);
				// its short alt text stands in for it.
				if alt := iconAlt(ch); alt != "" {
					c.AppendChild(&html.Node{Type: html.TextNode, Data: alt})
				}
				continue
			case "script", "style", "noscript", "template", "svg", "picture", "button", "input", "select", "iframe":
				continue
			}
		case html.CommentNode:
			continue
		}
		c.AppendChild(cleanCopy(ch))
	}
	return c
}

// maxIconAlt is the longest alt text read as an icon's word; longer ones
// describe a picture.
const maxIconAlt = 24

// iconAlt is the alt text of an image that stands for a word, or "" (no
// alt, a description, a file name).
func iconAlt(img *html.Node) string {
	alt := strings.Join(strings.Fields(attr(img, "alt")), " ")
	if alt == "" || utf8.RuneCountInString(alt) > maxIconAlt {
		return ""
	}
	lower := strings.ToLower(alt)
	for _, ext := range []string{".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"} {
		if strings.HasSuffix(lower, ext) {
			return ""
		}
	}
	return alt
}

// restoreTables swaps every table in the extracted content for the source
// table whose cells it shares most, when they share at least half.
func restoreTables(content *html.Node, src []*html.Node) {
	if len(src) == 0 {
		return
	}
	srcCells := make([]map[string]bool, len(src))
	for i, t := range src {
		srcCells[i] = cellSet(t)
	}
	used := make([]bool, len(src))
	var tables []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.Data == "table" {
				tables = append(tables, c)
				continue
			}
			walk(c)
		}
	}
	walk(content)
	for _, t := range tables {
		got := cellSet(t)
		if len(got) == 0 {
			continue
		}
		best, bestScore := -1, 0.0
		for i, s := range srcCells {
			if used[i] || len(s) == 0 {
				continue
			}
			shared := 0
			for k := range got {
				if s[k] {
					shared++
				}
			}
			score := float64(shared) / float64(len(got))
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 || bestScore < 0.5 {
			continue
		}
		used[best] = true
		t.Parent.InsertBefore(src[best], t)
		t.Parent.RemoveChild(t)
	}
}

func cellSet(t *html.Node) map[string]bool {
	set := map[string]bool{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
				// Without spaces: the extractor's copy of a cell
				// "<h5>Ball</h5><p>Which…</p>" joins the blocks without the
				// page's line break ("BallWhich…"), and the cell must still
				// match its source.
				if k := strings.ReplaceAll(normText(nodeText(c)), " ", ""); k != "" {
					set[k] = true
				}
				continue
			}
			walk(c)
		}
	}
	walk(t)
	return set
}

// emphasis and inline are the elements the spacing repair looks at.
var (
	emphasisTags = map[string]bool{"b": true, "strong": true, "em": true, "i": true, "a": true, "code": true}
	inlineTags   = map[string]bool{"b": true, "strong": true, "em": true, "i": true, "span": true, "a": true, "code": true, "small": true, "mark": true}
)

// emphasisSpacing records, for each emphasised phrase, link or inline code
// of the page and the word after it, whether a reader sees a space between
// them: whitespace in the source, or a separate element that CSS lays out
// as its own word (<strong>33%</strong><span>of patients</span>); and for
// the word before it likewise. The extractor drops the whitespace around
// such elements inside list items, and drops the element around the next
// word, so the Markdown read "**Stable**channel", "**33%**of",
// "`requirements.txt`with`pip-tools`" and "[my referral link](…)and".
func emphasisSpacing(doc *html.Node) map[string]bool {
	spaced := map[string]bool{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && emphasisTags[c.Data] {
				var text string
				if next := c.NextSibling; next != nil {
					var after string
					sep := false
					switch {
					case next.Type == html.TextNode:
						after = next.Data
						sep = after != "" && unicode.IsSpace([]rune(after)[0])
					case next.Type == html.ElementNode && inlineTags[next.Data]:
						after = nodeText(next)
						sep = true
					}
					if sep {
						text = nodeText(c)
						if k := spacingKey(text, after); k != "" {
							spaced[k] = true
						}
					}
				}
				if prev := c.PrevSibling; prev != nil && prev.Type == html.TextNode {
					if r, _ := utf8.DecodeLastRuneInString(prev.Data); unicode.IsSpace(r) {
						if text == "" {
							text = nodeText(c)
						}
						if k := spacingBeforeKey(prev.Data, text); k != "" {
							spaced[k] = true
						}
					}
				}
			}
			if c.Type == html.ElementNode && (c.Data == "script" || c.Data == "style" || c.Data == "pre") {
				continue
			}
			walk(c)
		}
	}
	walk(doc)
	return spaced
}

// spacingKey is the emphasised text and the first word after it.
func spacingKey(emph, after string) string {
	emph = strings.ToLower(strings.TrimSpace(emph))
	w := firstWord(after)
	if emph == "" || w == "" {
		return ""
	}
	return emph + "\x00" + strings.ToLower(w)
}

// spacingBeforeKey is the last word (or punctuation: "e.g.", ",") before
// an element and its text.
func spacingBeforeKey(before, emph string) string {
	emph = strings.ToLower(strings.TrimSpace(emph))
	w := lastToken(before)
	if emph == "" || w == "" {
		return ""
	}
	return "\x01" + strings.ToLower(w) + "\x00" + emph
}

// firstWord is the first run of letters and digits in s, read only as
// far as the word.
func firstWord(s string) string {
	start := -1
	for i, r := range s {
		switch {
		case wordEdge(r) && start < 0:
			start = i
		case !wordEdge(r) && start >= 0:
			return s[start:i]
		}
	}
	if start < 0 {
		return ""
	}
	return s[start:]
}

// lastToken is the last run of non-space characters in s.
func lastToken(s string) string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	return s[strings.LastIndexFunc(s, unicode.IsSpace)+1:]
}

// restoreEmphasisSpacing puts back the space around an emphasis, link or
// inline code that the page showed and the extraction lost.
func restoreEmphasisSpacing(root *html.Node, spaced map[string]bool) {
	if len(spaced) == 0 {
		return
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && emphasisTags[c.Data] && c.Parent != nil && c.Parent.Data != "pre" {
				next := c.NextSibling
				var first rune
				switch {
				case next != nil && next.Type == html.TextNode && next.Data != "":
					first, _ = utf8.DecodeRuneInString(next.Data)
				case next != nil && next.Type == html.ElementNode && inlineTags[next.Data]:
					first, _ = utf8.DecodeRuneInString(nodeText(next))
				}
				raw := nodeText(c)
				text := strings.TrimSpace(raw)
				r0, _ := utf8.DecodeRuneInString(text)
				rN, _ := utf8.DecodeLastRuneInString(raw)
				if first != 0 && wordEdge(first) && text != "" && !unicode.IsSpace(rN) &&
					spaced[spacingKey(text, nodeText(next))] {
					n.InsertBefore(&html.Node{Type: html.TextNode, Data: " "}, next)
				}
				if prev := c.PrevSibling; prev != nil && prev.Type == html.TextNode && text != "" && wordEdge(r0) {
					if last, _ := utf8.DecodeLastRuneInString(prev.Data); (wordEdge(last) || unicode.IsPunct(last) && last != '(' && last != '[' && last != '"' && last != '\'') &&
						!unicode.IsSpace(last) && spaced[spacingBeforeKey(prev.Data, text)] {
						prev.Data += " "
					}
				}
			}
			walk(c)
		}
	}
	walk(root)
}

func wordEdge(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// unwrapRuby replaces each <ruby> annotation with its base text: the
// reading in <rt> is for display above the characters, and the extractor
// drops the text that follows a ruby element ("子どもへの" came out "子").
func unwrapRuby(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode {
			switch c.Data {
			case "rt", "rp":
				if n.Data == "ruby" {
					n.RemoveChild(c)
					c = next
					continue
				}
			}
			unwrapRuby(c)
			if c.Data == "ruby" {
				for g := c.FirstChild; g != nil; {
					gn := g.NextSibling
					c.RemoveChild(g)
					n.InsertBefore(g, c)
					g = gn
				}
				n.RemoveChild(c)
			}
		}
		c = next
	}
}

// flattenCellBlocks rewrites what a Markdown table cannot hold inside the
// cells of content's tables: a list becomes its items on lines of their
// own ("• " before each when there are several), a heading or a quote its
// text, a rule nothing. The converter leaves a table with any of them
// unconverted, and its rows came out as loose lines without columns (a
// wiki's gift table with "All Universal Loves" as a list in one row).
func flattenCellBlocks(root *html.Node) {
	var cells []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.Data == "td" || c.Data == "th" {
				cells = append(cells, c)
			}
			walk(c)
		}
	}
	walk(root)
	for _, cell := range cells {
		flattenIn(cell)
	}
}

func flattenIn(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode {
			switch c.Data {
			case "table":
				// A nested table is left to the converter's fallback.
			case "ul", "ol":
				var items []*html.Node
				for li := c.FirstChild; li != nil; li = li.NextSibling {
					if li.Type == html.ElementNode && li.Data == "li" {
						items = append(items, li)
					}
				}
				for i, li := range items {
					if i > 0 {
						n.InsertBefore(&html.Node{Type: html.ElementNode, Data: "br"}, c)
					}
					if first, _ := utf8.DecodeRuneInString(strings.TrimSpace(nodeText(li))); len(items) > 1 && !strings.ContainsRune("•▪·◦●■-*–", first) {
						n.InsertBefore(&html.Node{Type: html.TextNode, Data: "• "}, c)
					}
					flattenIn(li)
					span := &html.Node{Type: html.ElementNode, Data: "span"}
					for g := li.FirstChild; g != nil; {
						gn := g.NextSibling
						li.RemoveChild(g)
						span.AppendChild(g)
						g = gn
					}
					n.InsertBefore(span, c)
				}
				n.RemoveChild(c)
			case "h1", "h2", "h3", "h4", "h5", "h6", "blockquote":
				flattenIn(c)
				if c.Data == "blockquote" {
					c.Data = "span"
				} else {
					c.Data = "strong"
				}
			case "hr":
				n.RemoveChild(c)
			default:
				flattenIn(c)
			}
		}
		c = next
	}
}
