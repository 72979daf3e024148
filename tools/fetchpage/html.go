package fetchpage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/toolhost/toolhost/internal/third_party/trafilatura"
)

// Article is the main content of an HTML page in the forms fetch_page
// returns.
type Article struct {
	Title    string
	Markdown string
	Text     string
}

// ErrNoContent means no readable content was found in a page.
var ErrNoContent = errors.New("no readable content found")

// minExtractedRunes is the shortest extractor result trusted over the
// plain fallback.
const minExtractedRunes = 200

// maxTreeNodes bounds the DOM the extractor walks; pages above it are
// refused rather than letting one page take seconds of CPU.
const maxTreeNodes = 200_000

// ExtractHTML finds the main content of an HTML page (already UTF-8) and
// renders it as plain text and, when markdown is true, as Markdown with
// links and images. pageURL makes links and images absolute; it may be nil.
//
// Links and images are only asked of the extractor for Markdown: they shift
// its link-density heuristics, and text output has no use for them (text
// scores F1 0.960 without them, 0.953 with them on the Zyte benchmark).
//
// The content is found by go-trafilatura (our copy without its date
// extraction, internal/third_party/trafilatura; with its readability and
// DOM-distiller fallbacks); when it finds nothing, a goquery pass that drops
// navigation, headers, footers, forms and scripts keeps the rest of the body,
// so short pages still return their text.
func ExtractHTML(page []byte, pageURL *url.URL, markdown bool) (*Article, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("parse html: %w", err)
	}
	if n := countNodes(doc, maxTreeNodes+1); n > maxTreeNodes {
		return nil, fmt.Errorf("page has more than %d elements: %w", maxTreeNodes, ErrNoContent)
	}
	if bytes.Contains(page, []byte("<ruby")) {
		unwrapRuby(doc)
	}
	dropOverlays(doc)
	wrapParagraphs(doc)
	facts := collectFacts(doc)
	facts.source = indexSource(doc)
	spaced := emphasisSpacing(doc)
	baseURL := documentBase(doc, pageURL)
	langs := codeLanguages(doc)
	docTitle := documentTitle(doc)
	// Resolve links before extraction: the extractor joins relative links
	// with the page URL naively ("post.html/guide.html") and ignores <base>.
	if markdown {
		absolutize(doc, baseURL)
	}
	if site := siteContent(doc); site != nil {
		return renderArticle(site, docTitle, baseURL, markdown, spaced)
	}
	tables := sourceTables(doc)

	res, terr := trafilatura.ExtractDocument(doc, trafilatura.Options{
		OriginalURL:     pageURL,
		EnableFallback:  true,
		ExcludeComments: true,
		IncludeLinks:    markdown,
		IncludeImages:   false,
	})
	var content *html.Node
	title := docTitle
	// On very short pages the extractor's baseline glues the whole page's
	// text (title and menus included) into one paragraph; the goquery
	// fallback does better there.
	if terr == nil && res != nil && res.ContentNode != nil && utf8.RuneCountInString(strings.TrimSpace(res.ContentText)) >= minExtractedRunes {
		content = res.ContentNode
		if res.Metadata.Title != "" {
			title = res.Metadata.Title
		}
		dropRepeatedBlocks(content)
		restoreCodeBlocks(content, langs)
		restoreTables(content, tables)
		// When the extractor falls back to its baseline it may hand back
		// the whole document; drop what is never content.
		goquery.NewDocumentFromNode(content).Find(boilerplate + ", head, title").Remove()
		if t := normText(res.Metadata.Title); t != "" {
			facts.titles = append(facts.titles, t)
		}
		trimEdges(content, facts)
	} else {
		// trafilatura changed the tree; start from the bytes again.
		content, err = fallbackContent(page)
		if err != nil {
			return nil, err
		}
		trimEdges(content, facts)
	}
	return renderArticle(content, title, baseURL, markdown, spaced)
}

// renderArticle renders the content node as text and, when markdown is
// true, as Markdown.
func renderArticle(content *html.Node, title string, baseURL *url.URL, markdown bool, spaced map[string]bool) (*Article, error) {
	restoreEmphasisSpacing(content, spaced)
	art := &Article{
		Title: strings.TrimSpace(collapseSpace(title)),
		Text:  renderMarks(tidyText(plainText(content)), false),
	}
	if markdown {
		absolutize(content, baseURL)
		flattenCellBlocks(content)
		md, err := markdownConverter.ConvertNode(content)
		if err != nil {
			return nil, fmt.Errorf("convert to markdown: %w", err)
		}
		art.Markdown = renderMarks(restoreAngles(brRun.ReplaceAllString(strings.TrimSpace(string(md)), "<br>")), true)
	}
	if art.Markdown == "" && art.Text == "" {
		return nil, ErrNoContent
	}
	return art, nil
}

// brRun is a run of line breaks the table plugin writes in a cell.
var brRun = regexp.MustCompile(`(?:[ \t]*<br />[ \t]*)+`)

// markdownConverter is safe for concurrent use: conversion state lives in a
// per-call context.
var markdownConverter = newMarkdownConverter()

func newMarkdownConverter() *converter.Converter {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
		),
		// A cell with a list or line breaks in it (a wiki's gift table:
		// "All Universal Loves" as a list in a row) keeps its table, its
		// lines joined with <br> as GFM tables write them; skipped, the
		// whole table came out as loose lines without columns.
		table.NewTablePlugin(table.WithSkipEmptyRows(true), table.WithHeaderPromotion(true),
			table.WithNewlineBehavior(table.NewlineBehaviorPreserve)),
		strikethrough.NewStrikethroughPlugin(),
	))
	conv.Register.TextTransformer(protectAngles, converter.PriorityEarly)
	return conv
}

// The converter writes every "<" and ">" of the text as "&lt;" and "&gt;",
// so a reader of the Markdown saw "a -&gt; b" and "x &lt; 3". Only a "<"
// that could open an HTML tag needs that, and only a ">" at the start of a
// line (a quote) needs escaping at all: the others travel through the
// converter as private-use marks and come back as themselves.
const (
	markGT = "\uE003"
	markLT = "\uE004"
)

func protectAngles(_ converter.Context, content string) string {
	if !strings.ContainsAny(content, "<>") {
		return content
	}
	var b strings.Builder
	for i := 0; i < len(content); i++ {
		switch c := content[i]; {
		case c == '>':
			b.WriteString(markGT)
		case c == '<' && !opensTag(content[i+1:]):
			b.WriteString(markLT)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// opensTag reports whether text after a "<" could make it an HTML tag,
// comment or autolink in CommonMark.
func opensTag(rest string) bool {
	if rest == "" {
		return false
	}
	c := rest[0]
	return c == '/' || c == '!' || c == '?' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

var quoteAtLineStart = regexp.MustCompile(`(?m)^([ \t]*)` + markGT)

// restoreAngles turns the marks of protectAngles back into characters.
func restoreAngles(md string) string {
	if !strings.Contains(md, markGT) && !strings.Contains(md, markLT) {
		return md
	}
	md = quoteAtLineStart.ReplaceAllString(md, `$1\>`)
	return strings.NewReplacer(markGT, ">", markLT, "<").Replace(md)
}

func countNodes(n *html.Node, limit int) int {
	count := 0
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil && count <= limit; c = c.NextSibling {
			count++
			walk(c)
		}
	}
	walk(n)
	return count
}

// documentBase is the URL relative links resolve against: <base href> when
// present (itself resolved against the page URL), else the page URL.
func documentBase(doc *html.Node, pageURL *url.URL) *url.URL {
	gd := goquery.NewDocumentFromNode(doc)
	if href, ok := gd.Find("base[href]").First().Attr("href"); ok {
		if b, err := url.Parse(strings.TrimSpace(href)); err == nil {
			if pageURL != nil {
				b = pageURL.ResolveReference(b)
			}
			if b.IsAbs() && (b.Scheme == "http" || b.Scheme == "https") {
				return b
			}
		}
	}
	return pageURL
}

func documentTitle(doc *html.Node) string {
	gd := goquery.NewDocumentFromNode(doc)
	if t := strings.TrimSpace(gd.Find("head title").First().Text()); t != "" {
		return t
	}
	return strings.TrimSpace(gd.Find("h1").First().Text())
}

var langClass = regexp.MustCompile(`(?:^|\s)(?:language|lang|highlight-source|brush:?)-?\s*([A-Za-z0-9_+#.-]+)`)

// sourceCode is what the page says about one of its <pre> blocks.
type sourceCode struct {
	lang string // declared language, lower case, or ""
	text string // the text as the page lays it out, line breaks included
}

// codeLanguages maps the normalized text of each <pre> block to its
// declared language (class="language-go", data-lang, ...) and its text
// with line breaks: extraction strips the attributes from code blocks, and
// loses the line breaks of highlighted code whose tokens are <span>s
// (Pygments' codehilite came out as one line).
func codeLanguages(doc *html.Node) map[string]sourceCode {
	langs := map[string]sourceCode{}
	goquery.NewDocumentFromNode(doc).Find("pre").Each(func(_ int, pre *goquery.Selection) {
		lang := ""
		for _, s := range []*goquery.Selection{pre, pre.Find("code").First(), pre.Parent()} {
			if l, ok := s.Attr("data-lang"); ok && l != "" {
				lang = l
				break
			}
			if m := langClass.FindStringSubmatch(s.AttrOr("class", "")); m != nil {
				lang = m[1]
				break
			}
		}
		text := nodeText(pre.Get(0))
		if key := codeKey(text); key != "" {
			langs[key] = sourceCode{lang: strings.ToLower(lang), text: strings.Trim(text, "\n")}
		}
	})
	return langs
}

func codeKey(s string) string { return strings.Join(strings.Fields(s), " ") }

// restoreCodeBlocks turns the extractor's block-level <code> elements back
// into <pre><code class="language-x"> so the Markdown has fenced blocks with
// their language, and gives every code block the page's line breaks back.
func restoreCodeBlocks(root *html.Node, langs map[string]sourceCode) {
	var blocks []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			// The extractor builds its elements by name, without DataAtom.
			if c.Type == html.ElementNode && (c.Data == "pre" || c.Data == "code" && (c.Parent == root || isBlockParent(c.Parent))) {
				blocks = append(blocks, c)
				continue
			}
			walk(c)
		}
	}
	walk(root)
	for _, c := range blocks {
		txt := nodeText(c)
		src, known := langs[codeKey(txt)]
		if c.Data == "pre" {
			// Only a <pre> whose line breaks were lost is rebuilt.
			if !known || strings.Contains(strings.TrimSpace(txt), "\n") || !strings.Contains(src.text, "\n") {
				continue
			}
		} else if c.Parent != root && !strings.Contains(txt, "\n") {
			continue
		}
		if known && strings.Contains(src.text, "\n") {
			txt = src.text
		}
		pre := &html.Node{Type: html.ElementNode, Data: "pre", DataAtom: atom.Pre}
		c.Parent.InsertBefore(pre, c)
		c.Parent.RemoveChild(c)
		code := &html.Node{Type: html.ElementNode, Data: "code", DataAtom: atom.Code}
		if src.lang != "" {
			code.Attr = []html.Attribute{{Key: "class", Val: "language-" + src.lang}}
		}
		code.AppendChild(&html.Node{Type: html.TextNode, Data: txt})
		pre.AppendChild(code)
	}
}

func isBlockParent(n *html.Node) bool {
	if n == nil || n.Type != html.ElementNode {
		return true
	}
	switch n.Data {
	case "body", "div", "article", "section", "main", "blockquote", "li", "td":
		return true
	}
	return false
}

func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if n.Type == html.ElementNode && n.Data == "br" {
			b.WriteByte('\n')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// absolutize rewrites href and src attributes to absolute http(s) URLs and
// drops links with other schemes (javascript:, data:), keeping their text.
func absolutize(root *html.Node, baseURL *url.URL) {
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for i := 0; i < len(n.Attr); i++ {
				a := &n.Attr[i]
				if a.Key == "title" && n.Data == "a" {
					// A link's title repeats its text or the target's name;
					// in Markdown it is noise after every link.
					n.Attr = append(n.Attr[:i], n.Attr[i+1:]...)
					i--
					continue
				}
				if a.Key != "href" && a.Key != "src" {
					continue
				}
				v := strings.TrimSpace(a.Val)
				if strings.HasPrefix(v, "#") {
					continue
				}
				u, err := url.Parse(v)
				if err == nil && baseURL != nil {
					u = baseURL.ResolveReference(u)
				}
				if err != nil || (u.IsAbs() && u.Scheme != "http" && u.Scheme != "https") {
					n.Attr = append(n.Attr[:i], n.Attr[i+1:]...)
					i--
					continue
				}
				a.Val = u.String()
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
}

// boilerplate is what the fallback removes before keeping a page's body.
const boilerplate = "script, style, noscript, template, iframe, svg, canvas, form, nav, header, footer, aside, " +
	"[role=navigation], [role=banner], [role=contentinfo], [aria-hidden=true]"

// fallbackContent keeps the page's main region (article, main, or body)
// without navigation and scripts.
func fallbackContent(page []byte) (*html.Node, error) {
	gd, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("parse html: %w", err)
	}
	gd.Find(boilerplate).Remove()
	for _, sel := range []string{"article", "main", "[role=main]", "body"} {
		s := gd.Find(sel).First()
		if s.Length() > 0 && strings.TrimSpace(s.Text()) != "" {
			return s.Get(0), nil
		}
	}
	return nil, ErrNoContent
}

// blockTags start a new line in plain text. By name, because the
// extractor's elements carry no DataAtom.
var blockTags = map[string]bool{
	"p": true, "div": true, "br": true, "li": true, "tr": true, "h1": true, "h2": true, "h3": true, "h4": true,
	"h5": true, "h6": true, "pre": true, "code": true, "blockquote": true, "table": true, "ul": true, "ol": true,
	"dl": true, "dt": true, "dd": true, "section": true, "article": true, "main": true, "figure": true,
	"figcaption": true, "hr": true, "summary": true, "details": true,
}

// plainText renders a subtree as text with a line break per block element.
// Line breaks inside text are spaces, except in code blocks.
func plainText(root *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node, verbatim bool)
	walk = func(n *html.Node, verbatim bool) {
		switch n.Type {
		case html.TextNode:
			if verbatim {
				b.WriteString(n.Data)
			} else {
				b.WriteString(strings.ReplaceAll(n.Data, "\n", " "))
			}
			return
		case html.ElementNode:
			if n.Data == "script" || n.Data == "style" {
				return
			}
		}
		block := n.Type == html.ElementNode && blockTags[n.Data] && (n.Data != "code" || isBlockParent(n.Parent))
		if block {
			b.WriteByte('\n')
		}
		if n.Data == "td" || n.Data == "th" {
			b.WriteByte(' ')
		}
		v := verbatim || (block && (n.Data == "pre" || n.Data == "code"))
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, v)
		}
		if block {
			b.WriteByte('\n')
		}
	}
	walk(root, false)
	return b.String()
}

var spaceRun = regexp.MustCompile(`[ \t\r\f\v\x{00a0}]+`)

func collapseSpace(s string) string { return spaceRun.ReplaceAllString(s, " ") }

// tidyText collapses runs of spaces and keeps at most one empty line between
// blocks.
func tidyText(s string) string {
	lines := strings.Split(collapseSpace(s), "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func goqueryDoc(page []byte) (*goquery.Document, error) {
	return goquery.NewDocumentFromReader(bytes.NewReader(page))
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
