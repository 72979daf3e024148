package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// A structured result over the result cap is cut where a cut keeps it a
// value of the same shape: the longest strings are shortened (each ending
// in cutMark) and, when that is not enough, arrays keep only their first
// elements. Object members are never dropped and their order is kept, so
// the cut value still has every field the output schema requires; the
// executor then checks it against that schema (encode) before sending it.

// cutMark ends a string the cut shortened.
const cutMark = "…"

// maxCutDepth bounds the nesting the cut walks; encoding/json refuses
// deeper values anyway, so a result this deep is not cut but refused.
const maxCutDepth = 10000

// jsonNode is one JSON value with its object members in their order.
type jsonNode struct {
	kind byte   // 's' string, 'a' array, 'o' object, 'l' literal (number, true, false, null)
	str  string // string value, or a literal's text
	keys []json.RawMessage
	kids []*jsonNode
}

// errTooDeep ends a parse of a value nested deeper than maxCutDepth.
var errTooDeep = errors.New("nested too deeply to cut")

// parseTree reads one JSON value keeping the order of object members.
func parseTree(b []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := parseNode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return n, nil
}

func parseNode(dec *json.Decoder, depth int) (*jsonNode, error) {
	if depth > maxCutDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case string:
		return &jsonNode{kind: 's', str: t}, nil
	case json.Number:
		return &jsonNode{kind: 'l', str: t.String()}, nil
	case bool:
		return &jsonNode{kind: 'l', str: strconv.FormatBool(t)}, nil
	case nil:
		return &jsonNode{kind: 'l', str: "null"}, nil
	case json.Delim:
		n := &jsonNode{kind: 'a'}
		if t == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := json.Marshal(k.(string))
				n.keys = append(n.keys, key)
			}
			kid, err := parseNode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	}
	return nil, errors.New("unexpected JSON token")
}

// bounds returns the longest string (bytes) and the longest array
// (elements) of the tree.
func (n *jsonNode) bounds() (maxStr, maxArr int) {
	switch n.kind {
	case 's':
		return len(n.str), 0
	case 'a', 'o':
		if n.kind == 'a' {
			maxArr = len(n.kids)
		}
		for _, k := range n.kids {
			s, a := k.bounds()
			maxStr, maxArr = max(maxStr, s), max(maxArr, a)
		}
	}
	return maxStr, maxArr
}

// cutEncoder writes the tree with strings over strCap bytes cut and
// arrays over arrCap elements shortened; it stops as soon as the output
// is over limit.
type cutEncoder struct {
	buf            []byte
	limit          int
	strCap, arrCap int
	cut            bool // something was actually cut
}

func (c *cutEncoder) over() bool { return len(c.buf) > c.limit }

func (c *cutEncoder) write(n *jsonNode) {
	if c.over() {
		return
	}
	switch n.kind {
	case 'l':
		c.buf = append(c.buf, n.str...)
	case 's':
		s := n.str
		if len(s) > c.strCap+len(cutMark) {
			cut := c.strCap
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = s[:cut] + cutMark
			c.cut = true
		}
		q, _ := json.Marshal(s)
		c.buf = append(c.buf, q...)
	case 'a':
		kids := n.kids
		if len(kids) > c.arrCap {
			kids = kids[:c.arrCap]
			c.cut = true
		}
		c.buf = append(c.buf, '[')
		for i, k := range kids {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			c.write(k)
			if c.over() {
				return
			}
		}
		c.buf = append(c.buf, ']')
	case 'o':
		c.buf = append(c.buf, '{')
		for i, k := range n.kids {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			c.buf = append(c.buf, n.keys[i]...)
			c.buf = append(c.buf, ':')
			c.write(k)
			if c.over() {
				return
			}
		}
		c.buf = append(c.buf, '}')
	}
}

// encodeCut returns the tree cut at strCap and arrCap, and whether it
// fits in limit bytes.
func (n *jsonNode) encodeCut(limit, strCap, arrCap int) ([]byte, bool) {
	c := cutEncoder{buf: make([]byte, 0, min(limit+1, 1<<20)), limit: limit, strCap: strCap, arrCap: arrCap}
	c.write(n)
	return c.buf, !c.over()
}

// largestFitting is the largest x in [lo, hi] for which fits(x) holds,
// fits being monotone (true up to some x, false above); lo-1 when even
// lo does not fit.
func largestFitting(lo, hi int, fits func(int) bool) int {
	if !fits(lo) {
		return lo - 1
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// minStringCut is the shortest a cut leaves the longest strings before it
// would rather shorten arrays: a list of short entries keeps whole entries.
const minStringCut = 256

// cutJSON cuts the JSON value b to at most limit bytes, as little as fits:
// the longest strings alone when they keep at least minStringCut bytes;
// else the arrays alone (their first elements, whole); else both, the
// arrays first. False when no such cut fits (an object of too many
// members, numbers in no array) or b cannot be read as one value.
func cutJSON(b []byte, limit int) ([]byte, bool) {
	root, err := parseTree(b)
	if err != nil {
		return nil, false
	}
	maxStr, maxArr := root.bounds()
	fits := func(strCap, arrCap int) bool { _, ok := root.encodeCut(limit, strCap, arrCap); return ok }
	strCap := largestFitting(0, maxStr, func(s int) bool { return fits(s, maxArr) })
	arrCap := maxArr
	if strCap < minStringCut {
		if a := largestFitting(1, maxArr, func(a int) bool { return fits(maxStr, a) }); a >= 1 {
			strCap, arrCap = maxStr, a
		} else if strCap < 0 {
			arrCap = largestFitting(0, maxArr, func(a int) bool { return fits(0, a) })
			if arrCap < 0 {
				return nil, false
			}
			strCap = largestFitting(0, maxStr, func(s int) bool { return fits(s, arrCap) })
		}
	}
	return root.encodeCut(limit, strCap, arrCap)
}
