// Package wire is JSON as toolhost reads it off and writes it to the wire.
//
// Strict input (strictjson.go): Check tells that bytes are exactly one
// JSON value with no duplicate object keys at any depth and nothing after
// it, and Decode builds the value of what it vouches for (objects as
// Object, the alias for a JSON object of members nobody fixes).
//
// Wire-format objects (wire.go): Unmarshal fills a struct's fields by their exact json names (not the
// case-insensitive match of encoding/json: "Model" is not "model") and
// returns every other member byte for byte. Marshal writes a struct's
// fields together with such members, every key in sorted order — the order
// encoding/json gives a map — so a struct can replace a map[string]any
// without changing a byte of the output; a field the struct sets wins over
// a member of the same name, a field it omits (omitempty) leaves the name
// to the member. HTML characters are not escaped: an outer encoder decides.
//
// A type with an Extra field uses them in its own methods:
//
//	func (c completion) MarshalJSON() ([]byte, error) {
//		type plain completion // without the method, so no recursion
//		return wire.Marshal(plain(c), c.Extra)
//	}
//
// The error body (errorbody.go): ErrorBody is the one body a failure is
// answered with on every face, ErrorObject its error (code, message,
// retry_after_ms, field, and the failure's own details beside them).
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// ErrNotObject is returned when a value does not encode (Marshal) or is not
// written (Unmarshal) as a JSON object.
var ErrNotObject = errors.New("not a JSON object")

// FieldError is a member that does not decode into its field.
type FieldError struct {
	Field string // the member's name
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Marshal encodes v, a struct (or pointer to one) that encodes as a JSON
// object, with the members of extra whose names v does not write.
func Marshal(v any, extra map[string]json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	known := bytes.TrimRight(buf.Bytes(), "\n")
	ms, err := split(known, len(extra))
	if err != nil {
		return nil, fmt.Errorf("wire: %T: %w", v, err)
	}
	n := len(ms)
	for k, raw := range extra {
		if slices.ContainsFunc(ms[:n], func(m member) bool { return m.name == k }) {
			continue
		}
		ms = append(ms, member{name: k, value: raw, extra: true})
	}
	if n == len(ms) && sorted(ms) {
		return known, nil
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out := bytes.NewBuffer(make([]byte, 0, len(known)+64*(len(ms)-n)))
	out.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			out.WriteByte(',')
		}
		if !m.extra {
			out.Write(m.key)
			out.WriteByte(':')
			out.Write(m.value)
			continue
		}
		if err := writeKey(out, m.name); err != nil {
			return nil, err
		}
		out.WriteByte(':')
		if len(m.value) == 0 {
			out.WriteString("null")
			continue
		}
		if err := json.Compact(out, m.value); err != nil {
			return nil, fmt.Errorf("wire: member %q: %w", m.name, err)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// Members encodes v, a value that encodes as a JSON object (a struct, a
// map), and returns its members by name, each value as encoded, HTML
// characters not escaped: what Marshal takes as extra members.
func Members(v any) (map[string]json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	ms, err := split(bytes.TrimRight(buf.Bytes(), "\n"), 0)
	if err != nil {
		return nil, fmt.Errorf("wire: %T: %w", v, err)
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.name] = m.value
	}
	return out, nil
}

// Unmarshal decodes data, a JSON object, into v, a pointer to a struct:
// each exported field from the member of exactly its json name, in the
// order the fields are declared (the first failure is a *FieldError). It
// returns the members no field names, as written.
func Unmarshal(data []byte, v any) (map[string]json.RawMessage, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("wire: Unmarshal into %T, want a pointer to a struct", v)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return nil, ErrNotObject
		}
		return nil, err
	}
	if err := Fill(m, v); err != nil {
		return nil, err
	}
	for _, f := range fieldsOf(rv.Elem().Type()) {
		delete(m, f.name)
	}
	return m, nil
}

// Fill decodes the members of an object already split by name into v, a
// pointer to a struct, as Unmarshal does; members is not changed.
func Fill(members map[string]json.RawMessage, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("wire: Fill into %T, want a pointer to a struct", v)
	}
	sv := rv.Elem()
	for _, f := range fieldsOf(sv.Type()) {
		raw, ok := members[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, sv.Field(f.index).Addr().Interface()); err != nil {
			return &FieldError{Field: f.name, Err: err}
		}
	}
	return nil
}

// Names are the member names v, a struct, reads and writes.
func Names(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fs := fieldsOf(t)
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

type field struct {
	name  string
	index int
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf lists the decodable fields of t: exported, not tagged "-".
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fs = append(fs, field{name: name, index: i})
	}
	fieldCache.Store(t, fs)
	return fs
}

// member is one member of an object: key is its name as encoded (quoted),
// value the encoded value.
type member struct {
	name  string
	key   []byte
	value []byte
	extra bool
}

func sorted(ms []member) bool {
	return slices.IsSortedFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
}

// writeKey writes s as a JSON string the way encoding/json writes a map
// key (without HTML escaping).
func writeKey(out *bytes.Buffer, s string) error {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		out.WriteByte('"')
		out.WriteString(s)
		out.WriteByte('"')
		return nil
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	out.Truncate(out.Len() - 1) // Encode's newline
	return nil
}

// split lists the members of b, a compact JSON object as encoding/json
// writes it.
func split(b []byte, more int) ([]member, error) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, ErrNotObject
	}
	ms := make([]member, 0, 16+more)
	i := 1
	for i < len(b)-1 {
		kEnd := skipString(b, i)
		if kEnd <= i || kEnd >= len(b) || b[kEnd] != ':' {
			return nil, errors.New("malformed object")
		}
		key := b[i:kEnd]
		name := string(key[1 : len(key)-1])
		if bytes.IndexByte(key, '\\') >= 0 {
			if err := json.Unmarshal(key, &name); err != nil {
				return nil, err
			}
		}
		vEnd := skipValue(b, kEnd+1)
		ms = append(ms, member{name: name, key: key, value: b[kEnd+1 : vEnd]})
		i = vEnd
		if i < len(b)-1 && b[i] == ',' {
			i++
		}
	}
	return ms, nil
}

// skipString returns the index after the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return i
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the compact value starting at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			j = skipString(b, j) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case ',':
			if depth == 0 {
				return j
			}
		}
	}
	return len(b)
}
