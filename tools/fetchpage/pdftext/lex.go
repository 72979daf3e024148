package pdftext

// The content-stream lexer. The library's pdf.Interpret would do, but it
// boxes every token into an interface value, cannot be stopped from outside,
// has no size limits and does not know inline images; content streams are
// the hot loop of extraction, so they get this small allocation-free lexer
// over the decoded bytes instead.

import "strconv"

// Operand kinds.
const (
	opNum   = iota + 1 // number
	opStr              // string (literal or hex), decoded bytes in s
	opName             // name without the slash, in s
	opArr              // array; the n elements follow it in the operand list
	opOther            // anything else (true, false, null, dict contents)
)

type operand struct {
	kind byte
	num  float64
	s    []byte
	n    int // opArr: number of elements following
}

// lexer reads tokens from one decoded content stream. Decoded string bytes go
// to scratch, which the caller resets after each operator.
type lexer struct {
	data    []byte
	pos     int
	scratch []byte
}

func isWhite(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isDelimiter(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		if isWhite(c) {
			l.pos++
			continue
		}
		if c == '%' {
			for l.pos < len(l.data) && l.data[l.pos] != '\n' && l.data[l.pos] != '\r' {
				l.pos++
			}
			continue
		}
		return
	}
}

// token kinds returned by next.
const (
	tokEOF = iota
	tokOperand
	tokOperator
	tokArrOpen
	tokArrClose
	tokDictOpen
	tokDictClose
)

// next returns the next token. For tokOperand the operand is in *op, for
// tokOperator the keyword is returned as word (a slice of the data).
func (l *lexer) next(op *operand) (kind int, word []byte) {
	l.skipSpace()
	if l.pos >= len(l.data) {
		return tokEOF, nil
	}
	c := l.data[l.pos]
	switch {
	case c == '(':
		l.pos++
		op.kind, op.s = opStr, l.literal()
		return tokOperand, nil
	case c == '<':
		if l.pos+1 < len(l.data) && l.data[l.pos+1] == '<' {
			l.pos += 2
			return tokDictOpen, nil
		}
		l.pos++
		op.kind, op.s = opStr, l.hex()
		return tokOperand, nil
	case c == '>':
		l.pos++
		if l.pos < len(l.data) && l.data[l.pos] == '>' {
			l.pos++
		}
		return tokDictClose, nil
	case c == '[':
		l.pos++
		return tokArrOpen, nil
	case c == ']':
		l.pos++
		return tokArrClose, nil
	case c == '{' || c == '}' || c == ')':
		l.pos++
		op.kind = opOther
		return tokOperand, nil
	case c == '/':
		l.pos++
		start := l.pos
		for l.pos < len(l.data) && !isWhite(l.data[l.pos]) && !isDelimiter(l.data[l.pos]) {
			l.pos++
		}
		op.kind, op.s = opName, l.data[start:l.pos]
		return tokOperand, nil
	case c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9'):
		start := l.pos
		for l.pos < len(l.data) && !isWhite(l.data[l.pos]) && !isDelimiter(l.data[l.pos]) {
			l.pos++
		}
		op.kind, op.num = opNum, parseNum(l.data[start:l.pos])
		return tokOperand, nil
	}
	start := l.pos
	for l.pos < len(l.data) && !isWhite(l.data[l.pos]) && !isDelimiter(l.data[l.pos]) {
		l.pos++
	}
	w := l.data[start:l.pos]
	switch string(w) {
	case "true", "false", "null":
		op.kind = opOther
		return tokOperand, nil
	}
	return tokOperator, w
}

// parseNum parses a PDF number leniently (garbage counts as 0, as readers do).
func parseNum(b []byte) float64 {
	// Fast path for plain integers and decimals, the overwhelming case.
	var v float64
	neg := false
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	intPart := true
	scale := 1.0
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if intPart {
				v = v*10 + float64(c-'0')
			} else {
				scale /= 10
				v += float64(c-'0') * scale
			}
		case c == '.' && intPart:
			intPart = false
		default:
			f, err := strconv.ParseFloat(string(b), 64)
			if err != nil {
				return 0
			}
			return f
		}
	}
	if neg {
		v = -v
	}
	return v
}

func (l *lexer) literal() []byte {
	start := len(l.scratch)
	depth := 1
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		l.pos++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return l.scratch[start:]
			}
		case '\\':
			if l.pos >= len(l.data) {
				return l.scratch[start:]
			}
			c = l.data[l.pos]
			l.pos++
			switch c {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if l.pos < len(l.data) && l.data[l.pos] == '\n' {
					l.pos++
				}
				continue
			case '\n':
				continue
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(c - '0')
				for k := 0; k < 2 && l.pos < len(l.data) && l.data[l.pos] >= '0' && l.data[l.pos] <= '7'; k++ {
					v = v*8 + int(l.data[l.pos]-'0')
					l.pos++
				}
				c = byte(v)
			}
		}
		l.scratch = append(l.scratch, c)
	}
	return l.scratch[start:]
}

func (l *lexer) hex() []byte {
	start := len(l.scratch)
	var v byte
	half := false
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		l.pos++
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		case c == '>':
			if half {
				l.scratch = append(l.scratch, v<<4)
			}
			return l.scratch[start:]
		default:
			continue
		}
		if half {
			l.scratch = append(l.scratch, v<<4|d)
			half = false
		} else {
			v, half = d, true
		}
	}
	return l.scratch[start:]
}

// skipInlineImage skips the binary data of an inline image, which starts
// after the ID operator and ends at whitespace, "EI" and whitespace.
func (l *lexer) skipInlineImage() {
	if l.pos < len(l.data) && isWhite(l.data[l.pos]) {
		l.pos++
	}
	for i := l.pos; i+1 < len(l.data); i++ {
		if l.data[i] == 'E' && l.data[i+1] == 'I' && (i == 0 || isWhite(l.data[i-1])) &&
			(i+2 >= len(l.data) || isWhite(l.data[i+2]) || isDelimiter(l.data[i+2])) {
			l.pos = i + 2
			return
		}
	}
	l.pos = len(l.data)
}
