package pdftext

// The content interpreter: it runs a page's content stream (and the form
// XObjects it draws) with just enough of the graphics and text state to place
// every glyph on the page, and records the glyphs for layout.

import (
	"context"
	"fmt"
	"math"
	"regexp"

	"github.com/ledongthuc/pdf"
)

const (
	maxContentBytes = 64 << 20  // decoded content of one page, forms included
	maxGlyphs       = 400_000   // glyphs kept per page
	maxOps          = 2_000_000 // operators run per page, forms included
	maxFormDepth    = 8
	maxFormRuns     = 2000 // form XObjects drawn per page
	formCost        = 500  // operators a form draw counts for in the budget
	maxStateDepth   = 256
	ctxCheckEvery   = 4096 // operators between context checks
)

// glyph is one shown character in device space, rotated into the frame of
// its writing direction: u runs along the baseline, v is the baseline height
// (larger is higher on the page).
type glyph struct {
	u, v, w, size float64
	dir           uint8 // 0, 90, 180, 270 degrees as 0..3
	text          string
}

type matrix [6]float64 // a b c d e f

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul returns m×n (apply m, then n).
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2],
		m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2],
		m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4],
		m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

type gstate struct {
	ctm                       matrix
	tc, tw, th, tl, tfs, rise float64
	font                      *font
}

// resources is a resource dictionary with its fonts looked up lazily.
type resources struct {
	v     pdf.Value
	fonts map[string]*font
	refs  map[string]string // font resource name -> "id gen"
	init  bool
	forms map[string]*formData
}

// formData is a decoded form XObject, kept for the page so that a form drawn
// many times (a logo, a bullet) is decoded once.
type formData struct {
	data []byte
	m    matrix
	res  *resources
}

// interp runs content streams of one page.
type interp struct {
	ctx    context.Context
	fc     *fontCache
	glyphs []glyph
	ops    int
	bytes  int
	err    error
	stack  []operand
	forms  int
	data   []byte // the page's decoded content, reused
}

var refPattern = regexp.MustCompile(`/([^\s/<>\[\]()]+)\s+(\d+ \d+) R`)

func (in *interp) fontFor(res *resources, name string) *font {
	if !res.init {
		res.init = true
		res.fonts = map[string]*font{}
		res.refs = map[string]string{}
		fd := res.v.Key("Font")
		// The library hides object numbers, but prints references in a
		// dictionary's String form; they key the document-wide font cache
		// so a font used on 200 pages is decoded once.
		if fd.Kind() == pdf.Dict {
			for _, m := range refPattern.FindAllStringSubmatch(fd.String(), -1) {
				res.refs[m[1]] = m[2]
			}
		}
	}
	if f, ok := res.fonts[name]; ok {
		return f
	}
	ref := res.refs[name]
	if f, ok := in.fc.byRef[ref]; ok && ref != "" {
		res.fonts[name] = f
		return f
	}
	fv := res.v.Key("Font").Key(name)
	var f *font
	if fv.Kind() == pdf.Dict {
		f = in.fc.load(fv)
	}
	res.fonts[name] = f
	if ref != "" && f != nil {
		in.fc.byRef[ref] = f
	}
	return f
}

// run interprets one content stream.
func (in *interp) run(data []byte, res *resources, g gstate, depth int) {
	l := lexer{data: data}
	in.stack = in.stack[:0]
	arrStart := -1
	st := opState{g: g, tm: identity, tlm: identity}
	var op operand
	for {
		kind, word := l.next(&op)
		switch kind {
		case tokEOF:
			return
		case tokOperand:
			if len(in.stack) < 1<<16 {
				in.stack = append(in.stack, op)
			}
			continue
		case tokArrOpen:
			if arrStart < 0 {
				arrStart = len(in.stack)
				in.stack = append(in.stack, operand{kind: opArr})
			}
			continue
		case tokArrClose:
			if arrStart >= 0 {
				in.stack[arrStart].n = len(in.stack) - arrStart - 1
				arrStart = -1
			}
			continue
		case tokDictOpen, tokDictClose:
			continue
		}
		if !in.budgetLeft() {
			return
		}
		args := in.stack
		switch string(word) {
		case "Do":
			if n := len(args); n >= 1 && args[n-1].kind == opName && depth < maxFormDepth {
				in.form(res, string(args[n-1].s), st.g, depth)
				if in.err != nil {
					return
				}
			}
		case "ID":
			l.skipInlineImage()
		default:
			in.operator(&st, string(word), args, res)
		}
		in.stack = in.stack[:0]
		arrStart = -1
		l.scratch = l.scratch[:0]
	}
}

// budgetLeft counts one more operator and reports whether the page may
// go on: the context is still live (checked every ctxCheckEvery
// operators; its error is kept in in.err) and the operator and glyph
// budgets are not spent.
func (in *interp) budgetLeft() bool {
	in.ops++
	if in.ops%ctxCheckEvery == 0 {
		if err := in.ctx.Err(); err != nil {
			in.err = err
			return false
		}
	}
	return in.ops <= maxOps && len(in.glyphs) < maxGlyphs
}

// opState is what the operators of one content stream change: the
// graphics state, the saved states of q, and the text and line matrices.
type opState struct {
	g       gstate
	saved   []gstate
	tm, tlm matrix
}

// argNum is the i-th operand from the end when it is a number, else 0.
func argNum(args []operand, i int) float64 {
	if n := len(args); i < n && args[n-1-i].kind == opNum {
		return args[n-1-i].num
	}
	return 0
}

// operator applies one graphics-state or text operator with its operands;
// the operators that matter for text only, the rest are passed over.
func (in *interp) operator(st *opState, word string, args []operand, res *resources) {
	nargs := len(args)
	num := func(i int) float64 { return argNum(args, i) }
	g := &st.g
	switch word {
	case "q":
		if len(st.saved) < maxStateDepth {
			st.saved = append(st.saved, *g)
		}
	case "Q":
		if n := len(st.saved); n > 0 {
			*g = st.saved[n-1]
			st.saved = st.saved[:n-1]
		}
	case "cm":
		if nargs >= 6 {
			m := matrix{num(5), num(4), num(3), num(2), num(1), num(0)}
			g.ctm = m.mul(g.ctm)
		}
	case "BT":
		st.tm, st.tlm = identity, identity
	case "Tc":
		g.tc = num(0)
	case "Tw":
		g.tw = num(0)
	case "Tz":
		g.th = num(0) / 100
	case "TL":
		g.tl = num(0)
	case "Ts":
		g.rise = num(0)
	case "Tf":
		g.tfs = num(0)
		if nargs >= 2 && args[nargs-2].kind == opName {
			g.font = in.fontFor(res, string(args[nargs-2].s))
		}
	case "Td", "TD":
		tx, ty := num(1), num(0)
		if word == "TD" {
			g.tl = -ty
		}
		st.tlm = matrix{1, 0, 0, 1, tx, ty}.mul(st.tlm)
		st.tm = st.tlm
	case "Tm":
		if nargs >= 6 {
			st.tlm = matrix{num(5), num(4), num(3), num(2), num(1), num(0)}
			st.tm = st.tlm
		}
	case "T*":
		st.tlm = matrix{1, 0, 0, 1, 0, -g.tl}.mul(st.tlm)
		st.tm = st.tlm
	case "Tj":
		if nargs >= 1 && args[nargs-1].kind == opStr {
			in.show(g, &st.tm, args[nargs-1].s)
		}
	case "'", "\"":
		if word == "\"" && nargs >= 3 {
			g.tw, g.tc = num(2), num(1)
		}
		st.tlm = matrix{1, 0, 0, 1, 0, -g.tl}.mul(st.tlm)
		st.tm = st.tlm
		if nargs >= 1 && args[nargs-1].kind == opStr {
			in.show(g, &st.tm, args[nargs-1].s)
		}
	case "TJ":
		in.showArray(st, args)
	}
}

// showArray shows the last array operand of TJ: its strings, and its
// numbers as moves back along the line in thousandths of the font size.
func (in *interp) showArray(st *opState, args []operand) {
	start := -1
	for i := len(args) - 1; i >= 0; i-- {
		if args[i].kind == opArr {
			start = i
			break
		}
	}
	if start < 0 {
		return
	}
	g, tm := &st.g, &st.tm
	for _, a := range args[start+1:] {
		switch a.kind {
		case opStr:
			in.show(g, tm, a.s)
		case opNum:
			tx := -a.num / 1000 * g.tfs * g.th
			tm[4] += tx * tm[0]
			tm[5] += tx * tm[1]
		}
	}
}

// form draws a form XObject.
func (in *interp) form(res *resources, name string, g gstate, depth int) {
	in.forms++
	in.ops += formCost
	if in.forms > maxFormRuns {
		return
	}
	if err := in.ctx.Err(); err != nil {
		in.err = err
		return
	}
	if res.forms == nil {
		res.forms = map[string]*formData{}
	}
	fd, ok := res.forms[name]
	if !ok {
		fd = in.loadForm(res, name)
		res.forms[name] = fd
	}
	if fd == nil {
		return
	}
	g.ctm = fd.m.mul(g.ctm)
	stack := in.stack
	in.stack = nil
	in.run(fd.data, fd.res, g, depth+1)
	in.stack = stack[:0]
}

func (in *interp) loadForm(res *resources, name string) *formData {
	xo := res.v.Key("XObject").Key(name)
	if xo.Kind() != pdf.Stream || xo.Key("Subtype").Name() != "Form" {
		return nil
	}
	fd := &formData{m: identity, res: res}
	if m := xo.Key("Matrix"); m.Len() == 6 {
		fd.m = matrix{m.Index(0).Float64(), m.Index(1).Float64(), m.Index(2).Float64(), m.Index(3).Float64(), m.Index(4).Float64(), m.Index(5).Float64()}
	}
	if r := xo.Key("Resources"); r.Kind() == pdf.Dict {
		fd.res = &resources{v: r}
	}
	data, err := readStream(xo, max(0, maxContentBytes-in.bytes))
	in.bytes += len(data)
	if err != nil && len(data) == 0 {
		return nil
	}
	fd.data = data
	return fd
}

// show places the glyphs of one shown string.
func (in *interp) show(g *gstate, tm *matrix, s []byte) {
	f := g.font
	if f == nil {
		return
	}
	th := g.th
	// Text rendering matrix without the per-glyph translation: font size
	// and horizontal scaling, text matrix, then the current transformation
	// matrix. Within the string only the translation moves.
	m := tm.mul(g.ctm)
	size := math.Abs(g.tfs) * math.Hypot(m[2], m[3])
	scale := math.Abs(g.tfs*th) * math.Hypot(m[0], m[1]) // advance length per width unit
	var dir uint8
	switch {
	case math.Abs(m[0]) >= math.Abs(m[1]) && m[0] >= 0:
		dir = 0
	case math.Abs(m[0]) >= math.Abs(m[1]):
		dir = 2
	case m[1] > 0:
		dir = 1
	default:
		dir = 3
	}
	if g.tfs*th < 0 { // a mirrored font size turns the writing direction
		dir = (dir + 2) % 4
	}
	for len(s) > 0 {
		code, n := f.decodeNext(s)
		s = s[n:]
		text, w := f.glyph(code)
		adv := w*g.tfs + g.tc
		if n == 1 && code == 32 {
			adv += g.tw
		}
		adv *= th
		if text != "" && len(in.glyphs) < maxGlyphs {
			x := m[4] + g.rise*m[2]
			y := m[5] + g.rise*m[3]
			gl := glyph{dir: dir, w: math.Abs(w) * scale, size: size, text: text}
			switch dir {
			case 0:
				gl.u, gl.v = x, y
			case 2:
				gl.u, gl.v = -x, -y
			case 1:
				gl.u, gl.v = y, -x
			default:
				gl.u, gl.v = -y, x
			}
			if isFinite(gl.u) && isFinite(gl.v) && isFinite(gl.w) && isFinite(gl.size) {
				in.glyphs = append(in.glyphs, gl)
			}
		}
		tm[4] += adv * tm[0]
		tm[5] += adv * tm[1]
		m[4] += adv * m[0]
		m[5] += adv * m[1]
	}
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// page interprets a page's content and returns its glyphs, which stay valid
// until the next call (the buffers are reused from page to page).
func (in *interp) page(ctx context.Context, page pdf.Value, res pdf.Value) ([]glyph, error) {
	in.ctx, in.glyphs, in.ops, in.forms, in.err = ctx, in.glyphs[:0], 0, 0, nil
	contents := page.Key("Contents")
	data := in.data[:0]
	appendStream := func(s pdf.Value) error {
		if s.Kind() != pdf.Stream {
			return nil
		}
		var err error
		n := len(data)
		data, err = readStreamAppend(data, s, maxContentBytes-len(data))
		if err != nil && len(data) == n {
			return err
		}
		data = append(data, '\n')
		return nil
	}
	switch contents.Kind() {
	case pdf.Stream:
		if err := appendStream(contents); err != nil {
			return nil, fmt.Errorf("page content: %w", err)
		}
	case pdf.Array:
		for i := 0; i < contents.Len() && len(data) < maxContentBytes; i++ {
			if err := appendStream(contents.Index(i)); err != nil {
				return nil, fmt.Errorf("page content: %w", err)
			}
		}
	}
	in.data = data
	in.bytes = len(data)
	g := gstate{ctm: identity, th: 1}
	in.run(data, &resources{v: res}, g, 0)
	if in.err != nil {
		return nil, in.err
	}
	return in.glyphs, nil
}
