package fetchpage

import (
	"strings"
	"unicode"

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
			case "script", "style", "noscript", "template", "svg", "img", "picture", "button", "input", "select", "iframe":
				continue
			}
		case html.CommentNode:
			continue
		}
		c.AppendChild(cleanCopy(ch))
	}
	return c
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
				if k := normText(nodeText(c)); k != "" {
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
	emphasisTags = map[string]bool{"b": true, "strong": true, "em": true, "i": true}
	inlineTags   = map[string]bool{"b": true, "strong": true, "em": true, "i": true, "span": true, "a": true, "code": true, "small": true, "mark": true}
)

// emphasisSpacing records, for each emphasised phrase of the page and the
// word after it, whether a reader sees a space between them: whitespace in
// the source, or a separate element that CSS lays out as its own word
// (<strong>33%</strong><span>of patients</span>). The extractor drops the
// whitespace after an emphasis inside list items, and drops the element
// around the next word, so the Markdown read "**Stable**channel" and
// "**33%**of".
func emphasisSpacing(doc *html.Node) map[string]bool {
	spaced := map[string]bool{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && emphasisTags[c.Data] {
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
						if k := spacingKey(nodeText(c), after); k != "" {
							spaced[k] = true
						}
					}
				}
			}
			if c.Type == html.ElementNode && (c.Data == "script" || c.Data == "style") {
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
	w := strings.FieldsFunc(strings.ToLower(after), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if emph == "" || len(w) == 0 {
		return ""
	}
	return emph + "\x00" + w[0]
}

// restoreEmphasisSpacing puts back the space after an emphasis that the
// page showed and the extraction lost.
func restoreEmphasisSpacing(root *html.Node, spaced map[string]bool) {
	if len(spaced) == 0 {
		return
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && emphasisTags[c.Data] {
				next := c.NextSibling
				var first rune
				switch {
				case next != nil && next.Type == html.TextNode && next.Data != "":
					first = []rune(next.Data)[0]
				case next != nil && next.Type == html.ElementNode && inlineTags[next.Data]:
					if t := []rune(nodeText(next)); len(t) > 0 {
						first = t[0]
					}
				}
				text := []rune(strings.TrimSpace(nodeText(c)))
				if first != 0 && wordEdge(first) && len(text) > 0 && !unicode.IsSpace(text[len(text)-1]) &&
					spaced[spacingKey(string(text), nodeText(next))] {
					n.InsertBefore(&html.Node{Type: html.TextNode, Data: " "}, next)
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
