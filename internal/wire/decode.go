package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// Object is a JSON object whose members nobody here fixes (a caller's
// arguments, a remote MCP server's structuredContent) as Decode and
// encoding/json build it. It is an alias, not a type of its own, so that a
// value decoded into an any is one at every depth (v.(wire.Object)).
type Object = map[string]any

// Decode builds the value of b when Scan(b, MaxDepth, nil) vouches for it:
// what a json.Decoder with UseNumber reads token by token, objects as
// Object, arrays as []any (never nil), strings decoded as
// encoding/json decodes them, and each number's text passed to number.
// false means "not known", as for Scan (or number failed): read b the
// slow way.
func Decode(b []byte, number func(json.Number) (any, error)) (any, bool) {
	if !Scan(b, MaxDepth, nil) {
		return nil, false
	}
	d := builder{b: b, number: number}
	d.ws()
	v := d.value()
	return v, d.err == nil
}

// builder reads bytes the scan has vouched for, so it checks nothing.
type builder struct {
	b      []byte
	i      int
	number func(json.Number) (any, error)
	err    error
}

func (d *builder) ws() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\n' || d.b[d.i] == '\r') {
		d.i++
	}
}

func (d *builder) value() any {
	switch c := d.b[d.i]; c {
	case '{':
		d.i++
		obj := Object{}
		for d.ws(); d.b[d.i] != '}'; d.ws() {
			key := d.str()
			d.ws()
			d.i++ // ':'
			d.ws()
			obj[key] = d.value()
			d.ws()
			if d.b[d.i] == ',' {
				d.i++
				d.ws()
			}
		}
		d.i++
		return obj
	case '[':
		d.i++
		arr := []any{}
		for d.ws(); d.b[d.i] != ']'; d.ws() {
			arr = append(arr, d.value())
			d.ws()
			if d.b[d.i] == ',' {
				d.i++
			}
		}
		d.i++
		return arr
	case '"':
		return d.str()
	case 't':
		d.i += 4
		return true
	case 'f':
		d.i += 5
		return false
	case 'n':
		d.i += 4
		return nil
	}
	start := d.i
	for d.i < len(d.b) && isNumberByte(d.b[d.i]) {
		d.i++
	}
	v, err := d.number(json.Number(d.b[start:d.i]))
	if err != nil {
		d.err = err
	}
	return v
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str reads the string at d.i: its bytes when they hold no escape and
// are valid UTF-8 (what encoding/json's unquoting leaves as it is), else
// as encoding/json unquotes it.
func (d *builder) str() string {
	start := d.i
	d.i++
	escaped, ascii := false, true
	for d.b[d.i] != '"' {
		c := d.b[d.i]
		if c == '\\' {
			escaped = true
			d.i++ // the escaped byte; \uXXXX's hex digits are plain
		} else if c >= 0x80 {
			ascii = false
		}
		d.i++
	}
	d.i++
	if raw := d.b[start+1 : d.i-1]; !escaped && (ascii || utf8.Valid(raw)) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(d.b[start:d.i], &s)
	return s
}
