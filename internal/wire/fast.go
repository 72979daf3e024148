package wire

import "strconv"

// The fast scan: a byte scanner that allocates nothing for the inputs
// toolhost sees on every call (keys in the checked objects written as
// plain ASCII, few of them). It only ever says "passes" or "not known":
// whatever it cannot vouch for, an error included, goes to the token walk
// of CheckDepth, which decides and words the error. So the scan can never
// accept what the walk would refuse, and every message stays the walk's.
//
// It is ours, not a tokenizer library's, because the walk's verdicts must
// hold exactly (encoding/json's: invalid UTF-8 is accepted, numbers
// outside float64 refused, keys compared decoded), which a general
// tokenizer checks differently; measured in BenchmarkCheckDepth, the scan
// costs a tenth of the walk on an MCP tools/call body and allocates
// nothing.

// maxFastKeys bounds the keys of one checked object the scan compares
// pairwise, and maxOpenKeys those of all the open ones; a larger object
// goes to the walk (its map).
const (
	maxFastKeys = 32
	maxOpenKeys = 64
)

// Member receives a member of the top-level object as Scan reads it: the
// key as written (plain ASCII, no escapes) and the raw value, without the
// whitespace around it.
type Member func(key, value []byte)

// Scan reports whether b certainly passes CheckDepth(b, keyDepth), calling
// member (when non-nil) for each member of the top-level object in order.
// false means "not known": call CheckDepth for the verdict, and read the
// members some other way; member may have been called for some already.
func Scan(b []byte, keyDepth int, member Member) bool {
	s := scanner{b: b, keyDepth: keyDepth}
	s.ws()
	if s.i == len(s.b) || !s.value(0, 0, member) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

type span struct{ from, to int }

type scanner struct {
	b        []byte
	i        int
	keyDepth int
	keys     [maxOpenKeys]span // keys of the open checked objects, innermost last
	nkeys    int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at s.i; depth counts the open containers around
// it, objects the open objects.
func (s *scanner) value(depth, objects int, member Member) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return depth < MaxDepth && s.object(depth+1, objects+1, member)
	case c == '[':
		return depth < MaxDepth && s.array(depth+1, objects)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	}
	return false
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

func (s *scanner) object(depth, objects int, member Member) bool {
	s.i++ // '{'
	checked := objects <= s.keyDepth
	first := s.nkeys
	defer func() { s.nkeys = first }()
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		from := s.i + 1
		plain, ok := s.str()
		if !ok {
			return false
		}
		key := span{from, s.i - 1}
		if checked {
			if !plain || s.nkeys-first >= maxFastKeys || s.nkeys == maxOpenKeys {
				return false
			}
			for _, k := range s.keys[first:s.nkeys] {
				if string(s.b[k.from:k.to]) == string(s.b[key.from:key.to]) {
					return false
				}
			}
			s.keys[s.nkeys] = key
			s.nkeys++
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		start := s.i
		if !s.value(depth, objects, nil) {
			return false
		}
		if member != nil {
			member(s.b[key.from:key.to], s.b[start:s.i])
		}
		if more, ok := s.sep('}'); !more {
			return ok
		}
	}
}

func (s *scanner) array(depth, objects int) bool {
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth, objects, nil) {
			return false
		}
		if more, ok := s.sep(']'); !more {
			return ok
		}
	}
}

// sep reads what follows a member or an element: ',' (more follow) or
// end (the object or array ends there); anything else fails.
func (s *scanner) sep(end byte) (more, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return true, true
	case end:
		s.i++
		return false, true
	}
	return false, false
}

// str scans a string at s.i (the opening quote); plain reports that it
// holds only printable ASCII without escapes, so its bytes are its value.
// Other bytes of 0x80 and up are taken as they are: encoding/json accepts
// invalid UTF-8 in strings too (as U+FFFD).
func (s *scanner) str() (plain, ok bool) {
	s.i++
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return plain, true
		case c < 0x20:
			return false, false
		case c == '\\':
			plain = false
			if s.i+1 >= len(s.b) {
				return false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 || !hex4(s.b[s.i+2:s.i+6]) {
					return false, false
				}
				s.i += 6
			default:
				return false, false
			}
		default:
			if c >= 0x80 {
				plain = false
			}
			s.i++
		}
	}
	return false, false
}

func hex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// number scans a JSON number. One that may lie outside float64's range
// (an exponent, or more than 300 digits) is parsed: the walk refuses it.
func (s *scanner) number() bool {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	exp := false
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		exp = true
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	if exp || s.i-start > 300 {
		_, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
		return err == nil
	}
	return true
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}
