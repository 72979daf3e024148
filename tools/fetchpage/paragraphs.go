package fetchpage

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Many pages write a post's paragraphs as bare text inside a container
// that also holds block elements, separated by <br>s (Blogger) or with the
// links of a sentence as siblings of its text (CNN's paragraph divs beside
// their headings). The extractor reads such mixed containers poorly: it
// keeps a link but drops the text before it, lifts links out of their
// sentence, and loses the whitespace around them ("Meghan[revealed…]").
// Readability.js wraps such "phrasing content" runs into paragraphs before
// it scores anything; wrapParagraphs does the same, so every sentence
// reaches the extractor inside a <p> of its own.

// blockElems are the children that end a run of phrasing content.
var blockElems = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Details: true,
	atom.Dialog: true, atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true,
	atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true, atom.Hgroup: true,
	atom.Hr: true, atom.Li: true, atom.Main: true, atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true,
	atom.Section: true, atom.Table: true, atom.Ul: true, atom.Menu: true, atom.Noscript: true,
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Iframe: true, atom.Video: true,
	atom.Audio: true, atom.Canvas: true, atom.Svg: true, atom.Object: true, atom.Select: true,
	atom.Textarea: true, atom.Button: true, atom.Input: true,
}

// wrapParagraphs wraps, in every <div>, <section> and <article> that holds
// both block children and visible text of its own, each run of phrasing
// content (text and inline elements) into a <p>. Containers whose
// children are all phrasing are left alone: the extractor reads them as
// one paragraph already.
//
// It reports whether n itself became a <p>.
func wrapParagraphs(n *html.Node) bool {
	if wrapChildren(n) {
		// The extractor drops a <div> paragraph among <p> siblings (CNN's
		// paragraphs without a link, Spiegel's ending in a quote): once
		// one sibling became a paragraph, every phrasing-only sibling
		// with text does.
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if textDiv(c) {
				c.Data, c.DataAtom = "p", atom.P
			}
		}
	}
	if n.Type != html.ElementNode || (n.DataAtom != atom.Div && n.DataAtom != atom.Section && n.DataAtom != atom.Article) {
		return false
	}
	ownText, hasBlock, hasLink := false, false, false
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) != "":
			ownText = true
		case c.Type == html.ElementNode && blockElems[c.DataAtom]:
			hasBlock = true
		case c.Type == html.ElementNode && c.DataAtom == atom.A:
			hasLink = true
		}
	}
	switch {
	case hasBlock:
		// A mixed container is wrapped when it has text of its own. Not
		// when its only text is in inline elements: Wired's
		// "<span>Advertisement</span>" between two parts of the article
		// made a paragraph there, and the extractor stopped at it (article
		// benchmark text F1 0.971 -> 0.964).
		if !ownText {
			return false
		}
	case !(ownText && hasLink):
		// A container of phrasing content only is left alone unless its
		// text has a link in it, which the extractor would lift out of the
		// sentence. Turning every such container into a paragraph lifts
		// the cells of layout grids ("Modell", "3", "S - 3XL") over the
		// extractor's threshold for text, and makes it drop paragraphs it
		// keeps as <div>s (Spiegel's closing quotes).
		return false
	}
	if !hasBlock {
		// The container itself is the paragraph (readability.js turns such
		// a <div> into a <p> the same way); a <p> nested in it would be a
		// second level the extractor reads differently.
		n.Data, n.DataAtom = "p", atom.P
		return true
	}
	wrapRuns(n)
	return false
}

// wrapChildren runs wrapParagraphs on n's element children, except those
// it must not touch (tables, scripts and the like); a <pre> holding a
// table is read as a <div>, and the emphasis inside links is hoisted. It
// reports whether a child became a <p>.
func wrapChildren(n *html.Node) bool {
	renamed := false
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.Pre:
			// A <pre> around tables and headings (an old results page
			// laid out in one) is not code: as code its tables came out
			// as one line each.
			if !containsElem(c, atom.Table) {
				continue
			}
			c.Data, c.DataAtom = "div", atom.Div
		case atom.Table, atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Svg:
			continue
		case atom.A:
			hoistLinkEmphasis(c)
			continue
		}
		if wrapParagraphs(c) {
			renamed = true
		}
	}
	return renamed
}

// textDiv reports whether c is a <div> of phrasing content with visible
// text: a paragraph written as a <div>.
func textDiv(c *html.Node) bool {
	return c.Type == html.ElementNode && c.DataAtom == atom.Div && phrasingOnly(c) && strings.TrimSpace(nodeText(c)) != ""
}

// wrapRuns wraps each run of phrasing content of the mixed container n
// that has visible text into a <p> of its own; a block child or two line
// breaks in a row end a run.
func wrapRuns(n *html.Node) {
	var run []*html.Node
	flush := func(before *html.Node) {
		visible := false
		for _, r := range run {
			if (r.Type == html.TextNode && strings.TrimSpace(r.Data) != "") ||
				(r.Type == html.ElementNode && r.DataAtom != atom.Br && strings.TrimSpace(nodeText(r)) != "") {
				visible = true
				break
			}
		}
		if visible {
			p := &html.Node{Type: html.ElementNode, Data: "p", DataAtom: atom.P}
			n.InsertBefore(p, before)
			for _, r := range run {
				n.RemoveChild(r)
				p.AppendChild(r)
			}
		}
		run = run[:0]
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		switch {
		case c.Type == html.ElementNode && blockElems[c.DataAtom]:
			flush(c)
			// A <div> of phrasing content among the paragraphs made here
			// is one more of them ("<div>We hope you enjoy it!</div>").
			if textDiv(c) {
				c.Data, c.DataAtom = "p", atom.P
			}
		case c.Type == html.ElementNode && c.DataAtom == atom.Br && brFollows(c):
			// Two line breaks in a row end a paragraph (the Blogger and
			// forum way of writing them); the breaks themselves go.
			flush(c)
			for c != nil && (c.Type == html.ElementNode && c.DataAtom == atom.Br || c.Type == html.TextNode && strings.TrimSpace(c.Data) == "") {
				next = c.NextSibling
				n.RemoveChild(c)
				c = next
			}
			continue
		case c.Type == html.TextNode || c.Type == html.ElementNode:
			run = append(run, c)
		}
		c = next
	}
	flush(nil)
}

// minRepeatRunes is the shortest block dropRepeatedBlocks treats as a
// repeat: short lines ("Reply", "Repeat Chorus") legitimately recur, and
// so do list items and recipe lines (a meal plan repeats its days' meals,
// 200 characters each, word for word, and the article benchmark counts
// every one).
const minRepeatRunes = 400

// dropRepeatedBlocks removes a paragraph whose text a later one repeats
// word for word. The extractor sometimes emits a post twice, once from its
// container and once more from the paragraph inside it (a Blogger post
// body, a forum post), and a reader would read it twice.
func dropRepeatedBlocks(root *html.Node) {
	seen := map[string]*html.Node{}
	var drop []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.Data {
			case "p", "blockquote":
				key := strings.Join(strings.Fields(nodeText(c)), " ")
				if utf8.RuneCountInString(key) < minRepeatRunes {
					continue
				}
				// The earlier copy goes: the extractor's second copy is the
				// one in place, under the post's heading.
				if prev := seen[key]; prev != nil {
					drop = append(drop, prev)
				}
				seen[key] = c
				continue
			case "table", "pre", "code":
				continue
			}
			walk(c)
		}
	}
	walk(root)
	for _, n := range drop {
		n.Parent.RemoveChild(n)
	}
}

// brFollows reports whether another <br> follows br with only whitespace
// between them.
func brFollows(br *html.Node) bool {
	for c := br.NextSibling; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.ElementNode && c.DataAtom == atom.Br:
			return true
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "":
			continue
		}
		return false
	}
	return false
}

// phrasingOnly reports whether n has no block element below it.
func phrasingOnly(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (blockElems[c.DataAtom] || !phrasingOnly(c)) {
			return false
		}
	}
	return true
}

// hoistLinkEmphasis unwraps the formatting inside a link whose whole text
// is formatted (<a href><i><span>GitHub</span></i></a>, as WordPress's
// editor writes them): the extractor keeps the text of such a link but
// drops its target ("Follow them on *GitHub* or *Twitter*" lost both).
// The link's target says more than its italics; moving the emphasis out
// around the link instead made the extractor drop links next to other
// emphasis.
func hoistLinkEmphasis(a *html.Node) {
	for {
		c := onlyElementChild(a)
		if c == nil {
			return
		}
		switch c.DataAtom {
		case atom.Span, atom.Font, atom.I, atom.Em, atom.B, atom.Strong:
			for g := c.FirstChild; g != nil; {
				next := g.NextSibling
				c.RemoveChild(g)
				a.InsertBefore(g, c)
				g = next
			}
			a.RemoveChild(c)
		default:
			return
		}
	}
}

// onlyElementChild is n's one child element when every other child is
// whitespace, else nil.
func onlyElementChild(n *html.Node) *html.Node {
	var only *html.Node
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.ElementNode:
			if only != nil {
				return nil
			}
			only = c
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "":
		default:
			return nil
		}
	}
	return only
}

// containsElem reports whether an element a is below n.
func containsElem(n *html.Node, a atom.Atom) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.DataAtom == a || containsElem(c, a)) {
			return true
		}
	}
	return false
}
