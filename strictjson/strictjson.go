// Package strictjson checks that bytes are exactly one JSON value with no
// duplicate object keys at any depth and nothing after it. encoding/json
// keeps the last of duplicate keys and a Decoder stops after the first
// value, so `{"name":"roll_dice","name":"get_time"}` or a body followed by
// garbage would otherwise be read as something the sender may not have
// meant. Check walks the token stream without building values.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"toolhost/clip"
)

// ErrNotStrict is wrapped by every failure of Check.
var ErrNotStrict = errors.New("not strict JSON")

// MaxDepth bounds nesting (encoding/json allows 10 000).
const MaxDepth = 512

// Check returns nil when b is one JSON value without duplicate keys and
// without trailing data, or an error wrapping ErrNotStrict that says where.
func Check(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys   map[string]struct{}
		object bool
		expect bool // object: the next token is a key
	}
	var stack []*frame
	started := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if !started {
				return fmt.Errorf("%w: empty input", ErrNotStrict)
			}
			if len(stack) > 0 {
				return fmt.Errorf("%w: unexpected end of input", ErrNotStrict)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %s (near byte %d)", ErrNotStrict, clip.Message(err.Error()), dec.InputOffset())
		}
		if started && len(stack) == 0 {
			return fmt.Errorf("%w: data after the JSON value at byte %d", ErrNotStrict, dec.InputOffset())
		}
		started = true
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			key := tok.(string) // the decoder only yields strings here
			if _, dup := top.keys[key]; dup {
				return fmt.Errorf("%w: duplicate key %q (near byte %d)", ErrNotStrict, clip.Echo(key), dec.InputOffset())
			}
			top.keys[key] = struct{}{}
			top.expect = false
			continue
		}
		if top != nil && top.object {
			top.expect = true // this token is the value; a key comes next
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{keys: map[string]struct{}{}, object: true, expect: true})
			case '[':
				stack = append(stack, &frame{})
			case ']':
				stack = stack[:len(stack)-1]
			}
			if len(stack) > MaxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrNotStrict, MaxDepth)
			}
		}
	}
}
