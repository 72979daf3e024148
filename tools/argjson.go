package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/wire"
)

// ErrArgsSyntax is wrapped by every strict-parse failure.
var ErrArgsSyntax = errors.New("arguments are not strict JSON")

// ParseArgs parses tool arguments strictly: the bytes must be exactly one JSON
// object, with no duplicate keys at any depth, no numbers outside float64's
// finite range, and nothing after the value. Empty input and "null" mean "no
// arguments" (MCP clients may omit them) and yield an empty object.
//
// Numbers come back as json.Number in canonical form, so equal values have
// equal spellings (20, 20.0 and 2e1 are all "20") before any digest is taken.
//
// encoding/json accepts duplicate keys (last wins) and trailing values in a
// stream, so we walk its token stream ourselves rather than call Unmarshal.
// An object wire.Decode vouches for (the arguments of almost every
// call) is built by it instead, without a token stream's allocation per
// token; everything else, every error included, takes the walk.
func ParseArgs(raw []byte) (wire.Object, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return wire.Object{}, nil
	}
	if v, ok := wire.Decode(trimmed, canonicalNumberAny); ok {
		if obj, ok := v.(wire.Object); ok {
			return obj, nil
		}
	}
	return parseArgsWalk(trimmed)
}

// parseArgsWalk is ParseArgs by encoding/json's token stream: the verdict
// of record, and the wording of every error.
func parseArgsWalk(trimmed []byte) (wire.Object, error) {
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	v, err := parseValue(dec, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArgsSyntax, explain(err, trimmed))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON value at byte %d", ErrArgsSyntax, dec.InputOffset())
	}
	obj, ok := v.(wire.Object)
	if !ok {
		return nil, fmt.Errorf("%w: arguments must be a JSON object, got %s", ErrArgsSyntax, kindOf(v))
	}
	return obj, nil
}

func parseValue(dec *json.Decoder, path string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("unexpected end of input")
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := wire.Object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key at %s is not a string", pathOrRoot(path))
				}
				if _, dup := obj[key]; dup {
					return nil, fmt.Errorf("duplicate key %q in the object at %s", key, pathOrRoot(path))
				}
				val, err := parseValue(dec, path+"/"+escapePointer(key))
				if err != nil {
					return nil, err
				}
				obj[key] = val
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				val, err := parseValue(dec, path+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				arr = append(arr, val)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %q at %s", t, pathOrRoot(path))
	case json.Number:
		n, err := canonicalNumber(t)
		if err != nil {
			return nil, fmt.Errorf("number %s at %s: %w", t, pathOrRoot(path), err)
		}
		return n, nil
	default:
		return t, nil // string, bool, nil
	}
}

func canonicalNumberAny(n json.Number) (any, error) { return canonicalNumber(n) }

// canonicalNumber rewrites n so that equal values are spelled alike: integers
// without fraction or exponent, everything else in Go's shortest form.
func canonicalNumber(n json.Number) (json.Number, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", errors.New("not a finite number (outside the float64 range)")
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return json.Number(strconv.FormatInt(int64(f), 10)), nil
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// explain turns encoding/json's syntax errors into messages a model can act on.
func explain(err error, raw []byte) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if lit, at := bareLiteral(raw); lit != "" {
			return fmt.Errorf("%s at byte %d is not a JSON number (NaN and Infinity are not allowed)", lit, at)
		}
		return fmt.Errorf("%s (near byte %d)", se.Error(), se.Offset)
	}
	return err
}

// bareLiteral finds NaN or Infinity outside strings, the usual way a
// non-finite number sneaks into "JSON" written by a model or a JS runtime.
func bareLiteral(raw []byte) (string, int) {
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr:
			for _, lit := range []string{"NaN", "Infinity"} {
				if bytes.HasPrefix(raw[i:], []byte(lit)) {
					return lit, i
				}
			}
		}
	}
	return "", 0
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// CanonicalJSON encodes v with sorted object keys and canonical numbers, the
// form the idempotency digest is taken over.
//
// The values ParseArgs builds (maps, slices, json.Number, strings, bools,
// nil) are written by appendCanonical; a value of any other type (a
// Normalizer may put one in) sends the whole of v to json.Encoder, whose
// bytes appendCanonical's are (TestCanonicalJSONAsEncoder).
func CanonicalJSON(v any) (json.RawMessage, error) {
	if b, ok := appendCanonical(make([]byte, 0, 256), v); ok {
		return b, nil
	}
	return encodeCanonical(v)
}

// encodeCanonical is CanonicalJSON by json.Encoder.
func encodeCanonical(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// appendCanonical appends v as json.Encoder with SetEscapeHTML(false)
// writes it, or says false for a value it leaves to the encoder.
func appendCanonical(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendCanonicalString(b, v), true
	case json.Number:
		if !plainNumber(string(v)) {
			return b, false // "" is written as 0, an invalid one refused
		}
		return append(b, v...), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case wire.Object:
		if v == nil {
			return append(b, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendCanonical(b, v[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendCanonicalString writes s as it is when it is printable ASCII
// without a quote or backslash, through json.Encoder otherwise.
func appendCanonicalString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := encodeCanonical(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainNumber reports whether s is a JSON number (what json.Encoder
// checks of a json.Number before writing it as it is).
func plainNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
