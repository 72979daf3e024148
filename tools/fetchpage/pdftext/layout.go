package pdftext

// Layout: glyphs to words, words to lines, lines to blocks in reading order.
// The rules follow what pdftotext does by default: a word breaks where the
// gap between glyphs exceeds a fraction of the font size, lines gather words
// on one baseline, and blocks are ordered by cutting the page along its
// widest empty bands (an XY cut), which reads multi-column pages column by
// column.

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

const (
	wordBreak    = 0.1 // gap, in font sizes, that separates two words
	lineMerge    = 0.4 // baseline difference, in font sizes, within a line
	scriptShift  = 0.6 // baseline difference, in font sizes, within a word
	fragmentGap  = 3.0 // gap, in font sizes, that splits a line into columns
	columnGap    = 0.8 // narrowest vertical cut, in font sizes
	paragraphGap = 0.8 // vertical gap, in font sizes, printed as a blank line
	ascent       = 0.75
	descent      = 0.25
)

type word struct {
	u0, u1, v, size float64
	text            string
}

type line struct {
	u0, u1, v, size float64 // size: largest font size
	top, bottom     float64
	words           []*word
}

// layoutPage turns a page's glyphs into text.
func layoutPage(glyphs []glyph) string {
	var out strings.Builder
	mixed := false
	for _, g := range glyphs {
		if g.dir != glyphs[0].dir {
			mixed = true
			break
		}
	}
	for dir := uint8(0); dir < 4; dir++ {
		gs := glyphs
		if mixed {
			gs = nil
			for _, g := range glyphs {
				if g.dir == dir {
					gs = append(gs, g)
				}
			}
		} else if len(glyphs) == 0 || glyphs[0].dir != dir {
			continue
		}
		if len(gs) == 0 {
			continue
		}
		text := layoutFrame(gs)
		if text == "" {
			continue
		}
		if out.Len() > 0 {
			out.WriteString("\n\n")
		}
		out.WriteString(text)
	}
	return out.String()
}

// layoutFrame lays out the glyphs of one writing direction.
func layoutFrame(gs []glyph) string {
	words := buildWords(gs)
	if len(words) == 0 {
		return ""
	}
	lines := buildLines(words)
	var order []*line
	var seps []bool // seps[i]: a paragraph break before order[i]
	xyCut(lines, &order, &seps, false)
	return render(order, seps)
}

// buildWords joins glyphs drawn next to each other into words, in content
// order: producers draw words in one go, so order is the strongest evidence.
func buildWords(gs []glyph) []*word {
	var words []word
	var text []byte // the text of all words, sliced once at the end
	var ends []int
	accents := false
	cur := -1
	for i := range gs {
		g := &gs[i]
		if isSpaceText(g.text) {
			cur = -1
			continue
		}
		// TeX draws an accented letter as a spacing accent over the
		// letter, before or after it; such a pair is one character.
		if mark, ok := combining(g.text); ok {
			if i+1 < len(gs) && over(g, &gs[i+1]) {
				gs[i+1].text = gs[i+1].text + string(mark)
				accents = true
				continue
			}
			if cur >= 0 && i > 0 && over(g, &gs[i-1]) {
				text = append(text, string(mark)...)
				accents = true
				continue
			}
		}
		size := math.Max(g.size, 1e-6)
		if cur >= 0 {
			w := &words[cur]
			gap := g.u - w.u1
			ref := math.Max(w.size, size)
			// Superscripts and subscripts (footnote marks, exponents) sit
			// off the baseline but touch the glyph before them.
			sameLine := math.Abs(g.v-w.v) < scriptShift*ref
			if !sameLine || gap > wordBreak*ref || gap < -0.5*ref-(w.u1-w.u0) {
				cur = -1
			}
		}
		if cur < 0 {
			if len(words) > 0 {
				ends = append(ends, len(text))
			}
			words = append(words, word{u0: g.u, u1: g.u, v: g.v, size: size})
			cur = len(words) - 1
		}
		w := &words[cur]
		text = append(text, g.text...)
		w.u0 = math.Min(w.u0, g.u)
		w.u1 = math.Max(w.u1, g.u+g.w)
		w.size = math.Max(w.size, size)
	}
	ends = append(ends, len(text))
	all := string(text)
	ptrs := make([]*word, len(words))
	start := 0
	for i := range words {
		words[i].text = all[start:ends[i]]
		if accents {
			words[i].text = norm.NFC.String(words[i].text)
		}
		start = ends[i]
		ptrs[i] = &words[i]
	}
	return ptrs
}

// combining returns the combining mark of a spacing accent.
func combining(s string) (rune, bool) {
	r, n := utf8.DecodeRuneInString(s)
	if n != len(s) {
		return 0, false
	}
	switch r {
	case '\u00a8':
		return '\u0308', true // diaeresis
	case '\u00b4':
		return '\u0301', true // acute
	case '`':
		return '\u0300', true // grave
	case '^', '\u02c6':
		return '\u0302', true // circumflex
	case '~', '\u02dc':
		return '\u0303', true // tilde
	case '\u00af', '\u02c9':
		return '\u0304', true // macron
	case '\u02d8':
		return '\u0306', true // breve
	case '\u02d9':
		return '\u0307', true // dot above
	case '\u02da':
		return '\u030a', true // ring
	case '\u02dd':
		return '\u030b', true // double acute
	case '\u02c7':
		return '\u030c', true // caron
	case '\u00b8':
		return '\u0327', true // cedilla
	case '\u02db':
		return '\u0328', true // ogonek
	}
	return 0, false
}

// over reports whether accent a is drawn over (or under) glyph b: its
// middle falls inside b horizontally, on a nearby baseline.
func over(a, b *glyph) bool {
	if a.dir != b.dir || b.w <= 0 || isSpaceText(b.text) {
		return false
	}
	if _, ok := combining(b.text); ok {
		return false
	}
	mid := a.u + a.w/2
	size := math.Max(a.size, b.size)
	return mid > b.u && mid < b.u+b.w && math.Abs(a.v-b.v) < size
}

func isSpaceText(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// compareFloat orders x before y when x < y, and calls a NaN (which a
// hostile matrix can produce) equal to anything, as cmp.Compare does not.
func compareFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// buildLines groups words by baseline, then splits each group where a gap is
// too wide to be a word space (columns, table cells).
func buildLines(words []*word) []*line {
	slices.SortStableFunc(words, func(a, b *word) int { return compareFloat(b.v, a.v) })
	var groups [][]*word
	var gv, gsize float64
	for _, w := range words {
		if n := len(groups); n > 0 && math.Abs(w.v-gv) < lineMerge*math.Max(gsize, w.size) {
			groups[n-1] = append(groups[n-1], w)
			if w.size > gsize {
				gsize = w.size
			}
			continue
		}
		groups = append(groups, []*word{w})
		gv, gsize = w.v, w.size
	}
	var lines []*line
	for _, grp := range groups {
		slices.SortStableFunc(grp, func(a, b *word) int { return compareFloat(a.u0, b.u0) })
		var cur *line
		for _, w := range grp {
			if cur != nil && w.u0-cur.u1 > fragmentGap*math.Max(cur.size, w.size) {
				cur = nil
			}
			if cur == nil {
				cur = &line{u0: w.u0, u1: w.u1, v: w.v, size: w.size, top: w.v + ascent*w.size, bottom: w.v - descent*w.size}
				lines = append(lines, cur)
			}
			cur.words = append(cur.words, w)
			cur.u1 = math.Max(cur.u1, w.u1)
			cur.size = math.Max(cur.size, w.size)
			cur.top = math.Max(cur.top, w.v+ascent*w.size)
			cur.bottom = math.Min(cur.bottom, w.v-descent*w.size)
		}
	}
	return lines
}

// xyCut orders lines by recursively cutting the set along its widest empty
// band, horizontal or vertical. A vertical cut (columns) must be wider than
// columnGap font sizes so that word gaps in a single column never qualify.
func xyCut(lines []*line, order *[]*line, seps *[]bool, brk bool) {
	if len(lines) == 1 {
		*order = append(*order, lines[0])
		*seps = append(*seps, brk)
		return
	}
	// Widest horizontal gap (between bands of lines, top to bottom).
	byTop := slices.Clone(lines)
	slices.SortStableFunc(byTop, func(a, b *line) int { return compareFloat(b.top, a.top) })
	hGap, hAt := -math.MaxFloat64, -1
	low := byTop[0].bottom
	for i := 1; i < len(byTop); i++ {
		if gap := low - byTop[i].top; gap > hGap && gap > -0.1*byTop[i].size {
			hGap, hAt = gap, i
		}
		low = math.Min(low, byTop[i].bottom)
	}
	// Widest vertical gap (between columns, left to right).
	byLeft := slices.Clone(lines)
	slices.SortStableFunc(byLeft, func(a, b *line) int { return compareFloat(a.u0, b.u0) })
	vGap, vAt := -math.MaxFloat64, -1
	right := byLeft[0].u1
	var sizeSum float64
	for _, l := range lines {
		sizeSum += l.size
	}
	meanSize := sizeSum / float64(len(lines))
	for i := 1; i < len(byLeft); i++ {
		if gap := byLeft[i].u0 - right; gap > vGap && gap > columnGap*meanSize {
			vGap, vAt = gap, i
		}
		right = math.Max(right, byLeft[i].u1)
	}
	switch {
	case vAt > 0 && (hAt < 0 || vGap > hGap):
		xyCut(byLeft[:vAt], order, seps, brk)
		xyCut(byLeft[vAt:], order, seps, true)
	case hAt > 0:
		xyCut(byTop[:hAt], order, seps, brk)
		xyCut(byTop[hAt:], order, seps, hGap > paragraphGap*meanSize)
	default:
		// Overlapping lines that no band separates: top to bottom, left to
		// right.
		for i, l := range byTop {
			*order = append(*order, l)
			*seps = append(*seps, brk && i == 0)
		}
	}
}

// render writes the ordered lines, joining words hyphenated at line ends.
func render(order []*line, seps []bool) string {
	var b strings.Builder
	pendingJoin := false
	for i, l := range order {
		if i > 0 && !pendingJoin {
			if seps[i] {
				b.WriteString("\n\n")
			} else {
				b.WriteByte('\n')
			}
		}
		pendingJoin = false
		for j, w := range l.words {
			if j > 0 {
				b.WriteByte(' ')
			}
			s := w.text
			if j == len(l.words)-1 && i+1 < len(order) && hyphenated(s, order[i+1]) {
				b.WriteString(s[:len(s)-1])
				pendingJoin = true
				continue
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// hyphenated reports whether s ends a line with a hyphen that splits a word
// continued at the start of next. Like pdftotext, any letter continues the
// word ("ELE-" "MENT"); digits and punctuation do not ("10-" "20").
func hyphenated(s string, next *line) bool {
	if len(s) < 2 || s[len(s)-1] != '-' || len(next.words) == 0 {
		return false
	}
	prev, _ := utf8.DecodeLastRuneInString(s[:len(s)-1])
	first, _ := utf8.DecodeRuneInString(next.words[0].text)
	return unicode.IsLetter(prev) && unicode.IsLetter(first)
}
