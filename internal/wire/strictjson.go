package wire

// Strict JSON: Check tells that bytes are exactly one JSON value with no
// duplicate object keys at any depth and nothing after it. encoding/json
// keeps the last of duplicate keys and a Decoder stops after the first
// value, so `{"name":"roll_dice","name":"get_time"}` or a body followed by
// garbage would otherwise be read as something the sender may not have
// meant. Check first runs Scan, an allocation-free byte scan that vouches
// for the usual input; what it cannot vouch for, every error included, is
// decided by a walk of encoding/json's token stream, which words the
// errors. Decode builds the value of what Scan vouches for.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/toolhost/toolhost/internal/clip"
)

// ErrNotStrict is wrapped by every failure of Check.
var ErrNotStrict = errors.New("not strict JSON")

// MaxDepth bounds nesting (encoding/json allows 10 000).
const MaxDepth = 512

// Check returns nil when b is one JSON value without duplicate keys and
// without trailing data, or an error wrapping ErrNotStrict that says where.
func Check(b []byte) error { return CheckDepth(b, MaxDepth) }

// CheckDepth is Check with duplicate keys looked for only in objects
// nested at most keyDepth objects deep (1: the top-level object's own
// keys). The rest is still checked for syntax and trailing data. /mcp uses
// 2, the JSON-RPC envelope and its params: tool arguments are the
// pipeline's to refuse, as a tool result the model can read.
func CheckDepth(b []byte, keyDepth int) error {
	if Scan(b, keyDepth, nil) {
		return nil
	}
	return walk(b, keyDepth)
}

// walk is CheckDepth by encoding/json's token stream: the verdict of
// record, and the wording of every error.
func walk(b []byte, keyDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys   map[string]struct{}
		object bool
		expect bool // object: the next token is a key
	}
	objects := 0
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
				objects--
				continue
			}
			key := tok.(string) // the decoder only yields strings here
			if top.keys == nil {
				top.expect = false
				continue
			}
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
				objects++
				f := &frame{object: true, expect: true}
				if objects <= keyDepth {
					f.keys = map[string]struct{}{}
				}
				stack = append(stack, f)
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
