package fetchpage

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Two kinds of page are common enough, and structured enough, that reading
// their structure beats any content heuristic (rs-trafilatura likewise keeps
// per-page-type profiles): MediaWiki articles (Wikipedia and every other
// wiki on the same software) and question-and-answer pages marked up with
// schema.org's QAPage (the Stack Exchange network and many forums). For
// both, the content node is built here and the extractor is not run.

// Markers the Markdown renderer cannot produce by itself (html-to-markdown
// escapes "[", "^" and "$"): they travel through the converter as private
// use characters and are replaced afterwards.
const (
	markOpen  = "\uE000"
	markClose = "\uE001"
)

// siteContent returns the content node for a recognised page kind, or nil.
func siteContent(doc *html.Node) *html.Node {
	gd := goquery.NewDocumentFromNode(doc)
	if n := mediaWikiContent(gd); n != nil {
		return n
	}
	return qaContent(gd)
}

// ---- MediaWiki

var texWrapper = regexp.MustCompile(`^\{\\displaystyle\s*(.*)\}$`)

func mediaWikiContent(gd *goquery.Document) *html.Node {
	out := gd.Find("#mw-content-text .mw-parser-output").First()
	if out.Length() == 0 {
		// Older MediaWiki releases have no parser-output wrapper.
		out = gd.Find("#mw-content-text").First()
	}
	if out.Length() == 0 {
		return nil
	}
	// Furniture: edit links, the table of contents, navigation boxes,
	// maintenance banners, "jump to" links, hidden and print-less bits.
	out.Find(`.mw-editsection, #toc, .toc, .mw-jump-link, .navbox, .vertical-navbox, .navbox-styles, .metadata,
		.noprint, .ambox, .hatnote, .sistersitebox, .mw-empty-elt, .catlinks, .printfooter, style, script,
		.mw-references-wrap .mw-cite-backlink, .shortdescription, [role=navigation], .portalbox, .authority-control`).Remove()
	// Navigation boxes built as plain tables.
	removeLinkTables(out)
	// An infobox's "[Source]" link to its template.
	out.Find(`a[href*="Template:"]`).Each(func(_ int, a *goquery.Selection) {
		if strings.HasPrefix(strings.TrimSpace(a.Text()), "[") {
			a.Remove()
		}
	})
	// Links to pages that do not exist ("redlinks") are text.
	out.Find("a.new").Each(func(_ int, s *goquery.Selection) { s.ReplaceWithSelection(s.Contents()) })
	// Math: the TeX annotation of the MathML, else the fallback image's alt.
	out.Find(".mwe-math-element").Each(func(_ int, s *goquery.Selection) { markMath(s) })
	// Images and galleries (after the math, whose fallback image may hold
	// the only copy of the formula).
	out.Find(".thumb, figure, img, .gallery, .mw-gallery-traditional, #catlinks, .mw-hidden-catlinks").Remove()
	// Citations: [1] becomes a footnote reference [^1]; the reference list
	// becomes footnote definitions.
	markCitations(out)
	// Headings of sections left empty by the removals above ("See also"
	// with only a navbox) and empty paragraphs.
	out.Find("p").Each(func(_ int, s *goquery.Selection) {
		if strings.TrimSpace(s.Text()) == "" {
			s.Remove()
		}
	})
	return out.Get(0)
}

// removeLinkTables removes the navigation boxes that older templates (and
// Fandom's) build as plain tables: rows of links separated by middle
// dots. A data table with links in its cells has few separators.
func removeLinkTables(out *goquery.Selection) {
	out.Find("table").Each(func(_ int, t *goquery.Selection) {
		text := t.Text()
		if strings.Count(text, "·")+strings.Count(text, "•") < 10 {
			return
		}
		all := len(strings.Join(strings.Fields(text), ""))
		linked := len(strings.Join(strings.Fields(t.Find("a").Text()), ""))
		if all > 0 && linked*10 >= all*6 {
			t.Remove()
		}
	})
}

// markMath replaces a math element with a mark holding its TeX: the
// annotation of the MathML, else the fallback image's alt; between $$ when
// it is a display formula, else $.
func markMath(s *goquery.Selection) {
	tex := strings.TrimSpace(s.Find(`annotation[encoding="application/x-tex"]`).First().Text())
	if tex == "" {
		tex = strings.TrimSpace(s.Find("img").First().AttrOr("alt", ""))
	}
	if tex == "" {
		return
	}
	if m := texWrapper.FindStringSubmatch(tex); m != nil {
		tex = strings.TrimSpace(m[1])
	}
	delim := "$"
	// Display formulas sit alone in an indented <dd> (older markup) or
	// carry a display class.
	if s.Find(".mwe-math-fallback-image-display").Length() > 0 || s.HasClass("mwe-math-element-block") ||
		(s.Parent().Is("dd") && len(strings.TrimSpace(s.Parent().Text())) <= len(strings.TrimSpace(s.Text()))+2) {
		delim = "$$"
	}
	replaceWithMark(s, "math:"+delim+tex+delim)
}

// markCitations turns citations into footnotes: [1] becomes a reference
// mark [^1], and the reference list becomes definition marks of the notes
// cited.
func markCitations(out *goquery.Selection) {
	notes := map[string]string{} // cite_note id -> label
	out.Find("sup.reference").Each(func(_ int, s *goquery.Selection) {
		href := s.Find("a").First().AttrOr("href", "")
		i := strings.Index(href, "#cite_note-")
		if i < 0 {
			return
		}
		id := href[i+1:]
		label := strings.Trim(strings.TrimSpace(s.Text()), "[]")
		label = strings.ReplaceAll(label, " ", "")
		if label == "" {
			return
		}
		notes[id] = label
		replaceWithMark(s, "fnref:"+label)
	})
	out.Find("ol.references").Each(func(_ int, ol *goquery.Selection) {
		var defs []string
		ol.Find("li").Each(func(_ int, li *goquery.Selection) {
			label := notes[li.AttrOr("id", "")]
			if label == "" {
				return
			}
			text := strings.Join(strings.Fields(li.Find(".reference-text").Text()), " ")
			if text == "" {
				text = strings.Join(strings.Fields(li.Text()), " ")
			}
			defs = append(defs, "fndef:"+label+"\uE002"+text)
		})
		if len(defs) == 0 {
			ol.Remove()
			return
		}
		div := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
		for _, d := range defs {
			p := &html.Node{Type: html.ElementNode, Data: "p", DataAtom: atom.P}
			p.AppendChild(&html.Node{Type: html.TextNode, Data: markOpen + d + markClose})
			div.AppendChild(p)
		}
		n := ol.Get(0)
		n.Parent.InsertBefore(div, n)
		n.Parent.RemoveChild(n)
	})
}

func replaceWithMark(s *goquery.Selection, payload string) {
	n := s.Get(0)
	if n.Parent == nil {
		return
	}
	n.Parent.InsertBefore(&html.Node{Type: html.TextNode, Data: markOpen + payload + markClose}, n)
	n.Parent.RemoveChild(n)
}

var markRE = regexp.MustCompile(markOpen + `([^` + markClose + `]*)` + markClose)

// renderMarks replaces the markers in Markdown (md true) or plain text.
func renderMarks(s string, md bool) string {
	if !strings.Contains(s, markOpen) {
		return s
	}
	return markRE.ReplaceAllStringFunc(s, func(m string) string {
		body := m[len(markOpen) : len(m)-len(markClose)]
		kind, val, _ := strings.Cut(body, ":")
		// The converter escapes some characters inside text nodes; undo it
		// for the payloads, which are verbatim.
		val = unescapeMarkdown(val)
		switch kind {
		case "math":
			return val
		case "fnref":
			if md {
				return "[^" + val + "]"
			}
			return "[" + val + "]"
		case "fndef":
			label, text, _ := strings.Cut(val, "\uE002")
			if md {
				return "[^" + label + "]: " + text
			}
			return "[" + label + "] " + text
		}
		return val
	})
}

var mdEscaped = regexp.MustCompile(`\\([\\!"#$%&'()*+,\-./:;<=>?@\[\]^_` + "`" + `{|}~])`)

func unescapeMarkdown(s string) string { return mdEscaped.ReplaceAllString(s, "$1") }

// ---- Question and answer pages (schema.org QAPage microdata)

func qaContent(gd *goquery.Document) *html.Node {
	q := gd.Find(`[itemtype*="schema.org/Question"]`).First()
	if q.Length() == 0 {
		return nil
	}
	body := q.Find(`[itemprop="text"]`).First()
	if body.Length() == 0 {
		return nil
	}
	root := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	title := strings.TrimSpace(q.Find(`[itemprop="name"]`).First().Text())
	if title == "" {
		title = strings.TrimSpace(gd.Find("h1").First().Text())
	}
	if title != "" {
		appendElem(root, "h1", title)
	}
	appendElem(root, "p", postLine("Question", q, body))
	root.AppendChild(cleanPost(body))
	answers := gd.Find(`[itemtype*="schema.org/Answer"]`)
	if n := answers.Length(); n > 0 {
		appendElem(root, "h2", fmt.Sprintf("%d answer%s", n, map[bool]string{true: "", false: "s"}[n == 1]))
	}
	answers.Each(func(i int, a *goquery.Selection) {
		text := a.Find(`[itemprop="text"]`).First()
		if text.Length() == 0 {
			return
		}
		head := fmt.Sprintf("Answer %d", i+1)
		if ip, _ := a.Attr("itemprop"); strings.Contains(ip, "acceptedAnswer") || a.HasClass("accepted-answer") {
			head += " (accepted)"
		}
		appendElem(root, "h3", head)
		appendElem(root, "p", postLine("", a, text))
		root.AppendChild(cleanPost(text))
	})
	return root
}

// postLine is "score 12 · by Name · 2020-01-02" for a post.
func postLine(_ string, post, body *goquery.Selection) string {
	var parts []string
	if score := owned(post, body, `[itemprop="upvoteCount"]`); len(score) > 0 {
		v := strings.TrimSpace(score[0].AttrOr("content", score[0].Text()))
		if n, err := strconv.Atoi(v); err == nil {
			parts = append(parts, fmt.Sprintf("score %d", n))
		}
	}
	// The post's own author: the last author block (an edited post names
	// its editor first, its author last).
	var author string
	for _, s := range owned(post, body, `[itemprop="author"]`) {
		name := strings.TrimSpace(s.Find(`[itemprop="name"]`).First().Text())
		if name == "" {
			name = strings.TrimSpace(s.Find("a").First().Text())
		}
		if name == "" {
			name = strings.Join(strings.Fields(s.Text()), " ")
		}
		if name != "" {
			author = name
		}
	}
	if author != "" {
		parts = append(parts, "by "+author)
	}
	if date := owned(post, body, `[itemprop="dateCreated"]`); len(date) > 0 {
		if d := strings.TrimSpace(date[0].AttrOr("datetime", date[0].AttrOr("content", date[0].Text()))); d != "" {
			if len(d) > 10 && d[4] == '-' {
				d = d[:10]
			}
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, " · ")
}

// owned finds the elements matching sel that belong to post itself: not
// inside its body, and not inside an answer nested in it.
func owned(post, body *goquery.Selection, sel string) []*goquery.Selection {
	var out []*goquery.Selection
	top := post.Get(0)
	post.Find(sel).Each(func(_ int, s *goquery.Selection) {
		if within(s, body) {
			return
		}
		for p := s.Get(0).Parent; p != nil && p != top; p = p.Parent {
			if strings.Contains(attr(p, "itemtype"), "schema.org/Answer") || strings.Contains(attr(p, "itemtype"), "schema.org/Comment") {
				return
			}
		}
		out = append(out, s)
	})
	return out
}

func within(s, container *goquery.Selection) bool {
	n, c := s.Get(0), container.Get(0)
	for p := n; p != nil; p = p.Parent {
		if p == c {
			return true
		}
	}
	return false
}

func cleanPost(s *goquery.Selection) *html.Node {
	c := goquery.NewDocumentFromNode(s.Get(0)).Selection
	c.Find("script, style, button, svg, .js-post-menu, .post-menu").Remove()
	n := s.Get(0)
	n.Parent.RemoveChild(n)
	return n
}

func appendElem(parent *html.Node, tag, text string) {
	if text == "" {
		return
	}
	e := &html.Node{Type: html.ElementNode, Data: tag, DataAtom: atom.Lookup([]byte(tag))}
	e.AppendChild(&html.Node{Type: html.TextNode, Data: text})
	parent.AppendChild(e)
}
