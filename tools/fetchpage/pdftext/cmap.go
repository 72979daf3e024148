package pdftext

// CMaps: the ToUnicode and encoding CMap streams of fonts, read into a
// code space and code-to-text tables within the per-font budgets.

import "unicode/utf16"

// cmapData is what a CMap stream says: code space and code-to-text maps.
type cmapData struct {
	space  []codeRange
	uni    map[uint32]string
	ranges []uniRange
	// entries counts what uni holds, against maxCMapEntries.
	entries int
}

// parseCMap reads the bfchar, bfrange and codespacerange sections of a CMap.
func parseCMap(data []byte) cmapData {
	cm := cmapData{uni: map[uint32]string{}}
	l := lexer{data: data}
	var ops []operand
	var op operand
	inArr := false
	var arr [][]byte
	for {
		kind, word := l.next(&op)
		switch kind {
		case tokEOF:
			return cm
		case tokArrOpen:
			inArr, arr = true, arr[:0]
			continue
		case tokArrClose:
			if inArr {
				inArr = false
				ops = append(ops, operand{kind: opArr, n: len(arr)})
				for _, s := range arr {
					ops = append(ops, operand{kind: opStr, s: s})
				}
			}
			continue
		case tokOperand:
			if op.kind == opStr {
				op.s = append([]byte(nil), op.s...)
			}
			if inArr {
				if op.kind == opStr {
					arr = append(arr, op.s)
				}
				continue
			}
			if len(ops) < 1<<16 {
				ops = append(ops, op)
			}
			continue
		case tokOperator:
		default:
			continue
		}
		switch string(word) {
		case "endcodespacerange":
			cm.codespaceRanges(ops)
		case "endbfchar":
			cm.bfChars(ops)
		case "endbfrange":
			cm.bfRanges(ops)
		}
		ops = ops[:0]
		l.scratch = l.scratch[:0]
	}
}

// codespaceRanges reads the operands of a codespacerange section: pairs
// of equally long codes, the lowest and highest of a code length.
func (cm *cmapData) codespaceRanges(ops []operand) {
	for i := 0; i+1 < len(ops); i += 2 {
		lo, hi := ops[i].s, ops[i+1].s
		if len(lo) == 0 || len(lo) > 4 || len(lo) != len(hi) {
			continue
		}
		r := codeRange{n: len(lo)}
		copy(r.lo[:], lo)
		copy(r.hi[:], hi)
		cm.space = append(cm.space, r)
	}
}

// bfChars reads the operands of a bfchar section: code, UTF-16BE text.
func (cm *cmapData) bfChars(ops []operand) {
	for i := 0; i+1 < len(ops); i += 2 {
		if ops[i].kind != opStr || ops[i+1].kind != opStr || len(ops[i].s) > 4 {
			continue
		}
		if cm.entries < maxCMapEntries {
			cm.uni[codeOf(ops[i].s)] = cleanText(utf16BE(ops[i+1].s))
			cm.entries++
		}
	}
}

// bfRanges reads the operands of a bfrange section: "lo hi [t1 t2 …]"
// gives each code its own text, "lo hi t" the text t advanced by the
// code's offset from lo. Short ranges are expanded into uni; long ones are
// kept as ranges, within the CMap's budgets.
func (cm *cmapData) bfRanges(ops []operand) {
	for i := 0; i+2 < len(ops); {
		lo, hi := ops[i], ops[i+1]
		if lo.kind != opStr || hi.kind != opStr || len(lo.s) > 4 || len(hi.s) > 4 {
			i++
			continue
		}
		a, b := codeOf(lo.s), codeOf(hi.s)
		dst := ops[i+2]
		if dst.kind == opArr {
			for k := 0; k < dst.n && i+3+k < len(ops) && cm.entries < maxCMapEntries; k++ {
				cm.uni[a+uint32(k)] = cleanText(utf16BE(ops[i+3+k].s))
				cm.entries++
			}
			i += 3 + dst.n
			continue
		}
		i += 3
		if dst.kind != opStr || b < a {
			continue
		}
		units := utf16Units(dst.s)
		if b-a < 256 && cm.entries+int(b-a) < maxCMapEntries {
			for c := a; c <= b; c++ {
				cm.uni[c] = cleanText(utf16Offset(units, c-a))
				cm.entries++
			}
		} else if len(cm.ranges) < 4096 {
			cm.ranges = append(cm.ranges, uniRange{n: len(lo.s), lo: a, hi: b, dst: units})
		}
	}
}

func codeOf(b []byte) uint32 {
	var c uint32
	for _, x := range b {
		c = c<<8 | uint32(x)
	}
	return c
}

func utf16Units(b []byte) []uint16 {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
	}
	if len(b)%2 == 1 { // a one-byte destination: treat as a code unit
		u = append(u, uint16(b[len(b)-1]))
	}
	return u
}

func utf16BE(b []byte) string { return string(utf16.Decode(utf16Units(b))) }

// utf16Offset returns the text of a bfrange destination advanced by off.
func utf16Offset(units []uint16, off uint32) string {
	if len(units) == 0 {
		return ""
	}
	u := append([]uint16(nil), units...)
	u[len(u)-1] += uint16(off)
	return string(utf16.Decode(u))
}
