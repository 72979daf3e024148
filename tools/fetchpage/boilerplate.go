package fetchpage

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// The extractor (go-trafilatura) finds the article's container well; what
// it lets through are the edges of that container: the headline and
// standfirst repeated above the text, bylines and dates, breadcrumbs, share
// bars, and below it newsletter prompts, "follow us", tag lists, comment
// policies, author bios and related-story lists. Readability.js and
// trafilatura both judge such blocks by their link density and by the
// class names around them; rs-trafilatura adds per-page-type profiles. We
// take the first two signals from the *original* page (the extractor's
// copy has lost its links and classes in text mode), add the phrases such
// blocks are written in, and peel blocks off the two ends of the content
// until one reads like article text. Inside the article only share bars
// are removed, and nothing inside a table is ever touched (a cell must not
// lose a word and shift its row).

// leafBlocks are the elements whose text is one block for these rules (br
// and hr separate lines inside a block; tables and code are opaque).
var leafBlocks = map[string]bool{
	"p": true, "div": true, "li": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"blockquote": true, "ul": true, "ol": true, "dl": true, "dt": true, "dd": true, "section": true,
	"article": true, "main": true, "figure": true, "figcaption": true, "summary": true, "details": true,
	"header": true, "footer": true, "aside": true, "nav": true, "table": true, "pre": true, "tr": true, "td": true, "th": true,
}

// sourceBlock is what the original page says about one block of text.
type sourceBlock struct {
	linkDensity float64 // characters inside <a> / all characters
	marked      bool    // an ancestor's class or id names boilerplate
}

// boilerParts are the words of class and id tokens that name page
// furniture ("related-posts", "social_share", "author-bio").
var boilerParts = map[string]bool{
	"related": true, "share": true, "sharing": true, "sharedaddy": true, "social": true, "newsletter": true,
	"subscribe": true, "subscription": true, "signup": true, "promo": true, "tags": true, "taglist": true,
	"tagcloud": true, "byline": true, "bio": true, "breadcrumb": true, "breadcrumbs": true,
	"recommended": true, "recommendations": true, "outbrain": true, "taboola": true, "sponsored": true,
	"disclaimer": true, "copyright": true, "caption": true, "credit": true, "credits": true, "readmore": true,
	"dek": true, "standfirst": true, "kicker": true,
}

// markedAsFurniture reports whether a class or id attribute names page
// furniture. WordPress's taxonomy classes on the article itself
// ("tag-minnesota-wild", "category-news") say nothing about furniture.
func markedAsFurniture(classAndID string) bool {
	for _, tok := range strings.Fields(strings.ToLower(classAndID)) {
		if strings.HasPrefix(tok, "tag-") || strings.HasPrefix(tok, "category-") || isPostID(tok) {
			continue
		}
		parts := strings.FieldsFunc(tok, func(r rune) bool { return r == '-' || r == '_' || r == ':' })
		for i, p := range parts {
			if boilerParts[p] {
				return true
			}
			if i > 0 && (p == "tag" || (p == "more" && i+1 < len(parts) && (parts[i+1] == "stories" || parts[i+1] == "articles"))) {
				return true
			}
			if p == "author" && i+1 < len(parts) && (parts[i+1] == "bio" || parts[i+1] == "info" || parts[i+1] == "box") {
				return true
			}
			if p == "comment" || p == "comments" {
				if i+1 < len(parts) && (parts[i+1] == "policy" || parts[i+1] == "rules") {
					return true
				}
			}
		}
	}
	return false
}

// indexSource maps the normalised text of every leaf block of the page to
// its link density and whether its ancestry is marked as furniture.
func indexSource(doc *html.Node) map[string]sourceBlock {
	idx := map[string]sourceBlock{}
	// walk returns the text and link-text lengths under n and whether n
	// holds a block element.
	var walk func(n *html.Node, marked bool) (all, link int, hasBlock bool)
	walk = func(n *html.Node, marked bool) (int, int, bool) {
		all, link, hasBlock := 0, 0, false
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				all += len(strings.TrimSpace(c.Data))
			case html.ElementNode:
				switch c.Data {
				case "script", "style", "noscript", "template", "svg", "head":
					continue
				}
				m := marked || markedAsFurniture(attr(c, "class")+" "+attr(c, "id"))
				ca, cl, cb := walk(c, m)
				if c.Data == "a" {
					cl = ca
				}
				all += ca
				link += cl
				hasBlock = hasBlock || cb || leafBlocks[c.Data]
			}
		}
		if n.Type == html.ElementNode && leafBlocks[n.Data] && !hasBlock && all > 0 {
			if key := normText(nodeText(n)); key != "" {
				if _, seen := idx[key]; !seen {
					idx[key] = sourceBlock{linkDensity: float64(link) / float64(all), marked: marked}
				}
			}
		}
		return all, link, hasBlock
	}
	walk(doc, false)
	return idx
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// normText is the comparison form of a block's text: lower case, one space
// between words, at most 200 bytes.
func normText(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	if len(s) > 200 {
		cut := 200
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// pageFacts are the page-level strings the edge rules compare blocks with.
type pageFacts struct {
	titles       []string // <title>, og:title, the extractor's title, normalised
	descriptions []string // meta description, og:description
	author       string
	source       map[string]sourceBlock
}

var (
	// Lines that invite, promote or administer rather than report. Each is
	// only acted on when the block is short (see trimEdges).
	boilerPhrase = regexp.MustCompile(`(?i)^(follow (us|me|him|her|them|[\p{L}@ .]+ on)|subscribe|sign up|sign-up|get (the|our) .*(newsletter|inbox|delivered)|newsletter|thanks? for (signing|subscribing)|you may also like|you might also like|more from|more great|more stories|related( (stories|articles|posts|content|coverage|reading|links))?:?$|read (more|next|also)|see also|recommended|also read|leggi anche|lesen sie auch|mehr zum thema|voir aussi|à lire aussi|lire aussi|leia também|leia mais|veja também|lee también|te puede interesar|tags?:?$|tags?:|topics?:|categor(y|ies):|filed under|share (this|on|via)|share$|copyright|©|\(c\) ?\d{4}|all rights reserved|write to .* at |contact .* at .*@|have a tip|email .*@|click here|listen to |download (the|our) app|this copy is for your personal|an error has occurred|there was an error|sorry!?$|advertisement$|comments?$|comentários|kommentare|commenti|leave a (comment|reply)|comments are closed|\d+ comments?$|ATENÇÃO: Comentários|published|updated|posted|publicado|veröffentlicht|aktualisiert|by [\p{Lu}]|收起$|展开$|展开全部$)`)
	// Headings that introduce a list of other stories.
	relatedHeading = regexp.MustCompile(`(?i)^(you (may|might) also like|related( (stories|articles|posts|content|coverage|reading|links))?|more (from|stories|great|on this|to read|news)|read (more|next|also)|see also|recommended( for you)?|also read|most (read|popular)|popular (now|posts)|leggi anche|lesen sie auch|mehr zum thema|weitere artikel|voir aussi|à lire aussi|lire aussi|leia também|veja também|lee también|te puede interesar)\b`)
	// A date such as "NOVEMBER 20, 2019 10:43", "05/10/2018", "2019-11-20".
	datePattern = regexp.MustCompile(`(?i)\b(\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4}-\d{2}-\d{2}|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2},? \d{4}|\d{1,2} (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{4})\b`)
	urlOnly     = regexp.MustCompile(`^https?://\S+$`)
	// "5 min", "Estimated reading time: 6 minutes", "Lesezeit 4 Min."
	readingTime = regexp.MustCompile(`(?i)^((estimated )?reading time:? ?\d+ ?(min|mins|minutes?)\.?|\d+ ?(min|mins|minutes?)\.?( read| de lecture| lesezeit| lectura| di lettura)?|(temps de |durée de )?lecture ?:? ?\d+ ?min\.?|lesezeit:? ?\d+ ?(min|minuten)\.?)$`)
	// "... Follow him on Twitter @name." at the end of a bio.
	followPhrase = regexp.MustCompile(`(?i)\bfollow (us|me|him|her|them|@\w+|[\p{L} .]{2,30}) on (twitter|facebook|instagram|linkedin|youtube|tiktok|x)\b`)
)

// socialWords are the names share bars are made of.
var socialWords = map[string]bool{
	"facebook": true, "twitter": true, "whatsapp": true, "pinterest": true, "pint": true, "linkedin": true,
	"reddit": true, "email": true, "e-mail": true, "mail": true, "print": true, "share": true, "tweet": true,
	"telegram": true, "messenger": true, "flipboard": true, "tumblr": true, "xing": true, "vk": true,
	"copy": true, "link": true, "baixar": true, "compartilhar": true, "teilen": true, "partager": true,
	"condividi": true, "compartir": true, "sms": true, "comments": true, "comment": true, "save": true,
	"instagram": true, "youtube": true, "x": true, "pocket": true, "line": true,
}

// block is one leaf block of the extracted content.
type block struct {
	n     *html.Node
	text  string
	words int
	src   sourceBlock
	known bool // found in the source index
}

// trimEdges removes furniture from the two ends of the content and share
// bars anywhere in it. It never removes the last block standing.
func trimEdges(root *html.Node, facts pageFacts) {
	var blocks []*block
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.Data {
			case "table", "pre", "figure":
				// Kept or dropped whole, never trimmed inside; a table or
				// a code block is content.
				blocks = append(blocks, newBlock(c, facts, true))
				continue
			}
			if leafBlocks[c.Data] && !hasBlockChild(c) {
				blocks = append(blocks, newBlock(c, facts, false))
				continue
			}
			walk(c)
		}
	}
	walk(root)
	if len(blocks) < 2 {
		return
	}
	removed := make([]bool, len(blocks))
	left := len(blocks)
	remove := func(i int) {
		if !removed[i] && left > 1 {
			removed[i] = true
			left--
		}
	}
	// Share bars anywhere.
	for i, b := range blocks {
		if isShareBar(b) {
			remove(i)
		}
	}
	// The head: headline, standfirst, bylines, dates, breadcrumbs, a bare
	// URL, link-dense furniture.
	for i, b := range blocks {
		if removed[i] {
			continue
		}
		var next *block
		for j := i + 1; j < len(blocks); j++ {
			if !removed[j] {
				next = blocks[j]
				break
			}
		}
		if !headFurniture(b, next, facts) {
			break
		}
		remove(i)
	}
	// A related-stories section: a short heading such as "You may also
	// like" after the last long paragraph, and the short blocks under it.
	lastLong := -1
	for i, b := range blocks {
		if !removed[i] && b.words >= 40 {
			lastLong = i
		}
	}
	for i := lastLong + 1; i < len(blocks) && lastLong >= 0; i++ {
		b := blocks[i]
		if removed[i] || b.words > 6 || !relatedHeading.MatchString(b.text) {
			continue
		}
		short := true
		for j := i + 1; j < len(blocks); j++ {
			if !removed[j] && blocks[j].words > 30 {
				short = false
			}
		}
		if short {
			for j := i; j < len(blocks); j++ {
				remove(j)
			}
		}
		break
	}
	// The tail: related lists, follow/subscribe prompts, bios, policies.
	for i := len(blocks) - 1; i >= 0; i-- {
		if removed[i] {
			continue
		}
		if !tailFurniture(blocks[i], facts) && !teaserDescription(blocks, removed, i) {
			break
		}
		remove(i)
	}
	for i, b := range blocks {
		if removed[i] {
			detach(b.n)
		}
	}
}

func newBlock(n *html.Node, facts pageFacts, opaque bool) *block {
	t := strings.Join(strings.Fields(nodeText(n)), " ")
	bl := &block{n: n, text: t, words: countWords(t)}
	if opaque {
		bl.src = sourceBlock{}
		bl.known = false
		if n.Data == "table" || n.Data == "pre" {
			bl.words = 1 << 20 // never furniture
		}
		return bl
	}
	bl.src, bl.known = facts.source[normText(t)]
	return bl
}

func hasBlockChild(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (leafBlocks[c.Data] || hasBlockChild(c)) {
			return true
		}
	}
	return false
}

// countWords counts words, each CJK character as one (CJK text has no
// spaces, and a line of it is as long as its characters).
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			n++
			in = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if !in {
				n++
			}
			in = true
		default:
			in = false
		}
	}
	return n
}

func isShareBar(b *block) bool {
	if b.words == 0 || b.words > 12 {
		return false
	}
	social := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(b.text), func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) {
		if socialWords[w] {
			social++
		}
	}
	return social >= 2 && social*10 >= b.words*6
}

// headFurniture reports whether the i-th block, with every block before
// it removed, is furniture above the article.
func headFurniture(b, next *block, facts pageFacts) bool {
	key := normText(b.text)
	if key == "" {
		return true
	}
	for _, t := range facts.titles {
		if t != "" && (key == t || (len(key) > 20 && strings.HasPrefix(t, key))) {
			return true
		}
	}
	// A standfirst repeats the description; so does a first paragraph
	// that the site copied into its description. The standfirst stands
	// apart from the text that follows; the first paragraph is its sibling.
	for _, d := range facts.descriptions {
		if d != "" && b.words <= 45 && (key == d || (len(key) > 40 && strings.HasPrefix(d, key))) {
			if next == nil || next.n.Parent != b.n.Parent || headingTags[b.n.Data] {
				return true
			}
		}
	}
	if urlOnly.MatchString(b.text) || readingTime.MatchString(b.text) {
		return true
	}
	if b.words <= 25 {
		if b.known && (b.src.linkDensity >= 0.6 || b.src.marked) {
			return true
		}
		if datePattern.MatchString(b.text) && b.words <= 15 {
			return true
		}
		if facts.author != "" && strings.Contains(key, facts.author) && b.words <= 12 {
			return true
		}
		if boilerPhrase.MatchString(b.text) && b.words <= 15 {
			return true
		}
		if strings.Contains(b.text, " » ") || strings.Contains(b.text, " › ") || strings.Contains(b.text, " > ") {
			return true // breadcrumbs
		}
	}
	return false
}

// tailFurniture reports whether a block, with every block after it
// removed, is furniture below the article.
func tailFurniture(b *block, facts pageFacts) bool {
	key := normText(b.text)
	if key == "" {
		return true
	}
	if b.words > 60 {
		return false
	}
	if b.known && b.src.marked && b.words <= 40 {
		return true
	}
	if b.known && ((b.src.linkDensity >= 0.6 && b.words <= 60) || (b.src.linkDensity >= 0.3 && b.words <= 30)) {
		return true
	}
	if boilerPhrase.MatchString(b.text) && b.words <= 40 {
		return true
	}
	if followPhrase.MatchString(b.text) {
		return true
	}
	if isTagList(b.text) {
		return true
	}
	if strings.Contains(b.text, "@") && b.words <= 30 && (strings.Contains(strings.ToLower(b.text), "twitter") || strings.Contains(b.text, ".com")) && boilerPhrase.MatchString(b.text) {
		return true
	}
	if datePattern.MatchString(b.text) && b.words <= 8 {
		return true
	}
	if facts.author != "" && strings.Contains(key, facts.author) && b.words <= 12 {
		return true
	}
	return false
}

// detach removes n, and any parent it leaves empty.
func detach(n *html.Node) {
	for n.Parent != nil {
		p := n.Parent
		p.RemoveChild(n)
		if p.FirstChild != nil || p.Parent == nil || p.Parent.Parent == nil {
			return
		}
		switch p.Data {
		case "ul", "ol", "div", "section", "blockquote", "dl":
			n = p
		default:
			return
		}
	}
}

// collectFacts reads the page-level strings of pageFacts from the document
// head; call it before the extractor changes the tree.
func collectFacts(doc *html.Node) pageFacts {
	var f pageFacts
	addTitle := func(t string) {
		t = normText(t)
		if t == "" {
			return
		}
		f.titles = append(f.titles, t)
		// "Headline | Site", "Headline - Site": the headline alone too.
		for _, sep := range []string{" | ", " - ", " – ", " — ", " :: ", " · "} {
			if i := strings.LastIndex(t, sep); i > 10 {
				f.titles = append(f.titles, t[:i])
			}
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "title":
				addTitle(nodeText(n))
			case "meta":
				name := strings.ToLower(attr(n, "name") + attr(n, "property"))
				switch name {
				case "og:title", "twitter:title":
					addTitle(attr(n, "content"))
				case "description", "og:description", "twitter:description":
					if d := normText(attr(n, "content")); d != "" {
						f.descriptions = append(f.descriptions, d)
					}
				case "author", "article:author":
					if a := normText(attr(n, "content")); len(a) > 3 && !strings.Contains(a, "/") {
						f.author = a
					}
				}
			case "body":
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return f
}

var headingTags = map[string]bool{"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true}

// teaserDescription reports whether block i, in the tail, is the line of
// text a related-story teaser puts under its linked headline: short, and
// right after a short block that was all link in the page.
func teaserDescription(blocks []*block, removed []bool, i int) bool {
	b := blocks[i]
	if b.words > 30 || i == 0 {
		return false
	}
	prev := blocks[i-1]
	return !removed[i-1] && prev.known && prev.src.linkDensity >= 0.8 && prev.words <= 20
}

// isTagList reports whether text is a comma-separated list of short
// phrases, as tag lists are when their links are gone.
func isTagList(text string) bool {
	parts := strings.Split(strings.TrimRight(text, ", "), ",")
	if len(parts) < 4 || strings.ContainsAny(text, ".!?;:") {
		return false
	}
	for _, p := range parts {
		if countWords(p) > 5 {
			return false
		}
	}
	return true
}

// dropOverlays removes cookie-consent and similar modal overlays before
// extraction: on a short page the extractor may otherwise choose the
// overlay's text over the article.
func dropOverlays(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && isOverlay(c) {
			n.RemoveChild(c)
		} else if c.Type == html.ElementNode {
			dropOverlays(c)
		}
		c = next
	}
}

func isOverlay(n *html.Node) bool {
	if n.Data == "body" || n.Data == "html" || n.Data == "main" || n.Data == "article" {
		return false
	}
	for _, tok := range strings.Fields(strings.ToLower(attr(n, "class") + " " + attr(n, "id"))) {
		for _, p := range strings.FieldsFunc(tok, func(r rune) bool { return r == '-' || r == '_' }) {
			switch p {
			case "cookie", "cookies", "consent", "gdpr", "cookiebanner", "onetrust", "cmp", "didomi":
				return true
			}
		}
	}
	return attr(n, "aria-modal") == "true"
}

// isPostID matches WordPress's per-post classes ("post-3494850").
func isPostID(tok string) bool {
	rest, ok := strings.CutPrefix(tok, "post-")
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
