package mcpremote

import (
	"bytes"
	"errors"
	"fmt"
	"mime"

	"github.com/toolhost/toolhost/internal/wire"
)

// The nesting a remote result may have. The go-sdk's MCP client (v1.8.0,
// its internal/json) refuses a JSON-RPC message nested more than 1000
// levels deep, whatever encoding/json would read (10 000): the gateway's
// own client, and any Go client of toolhost. toolhost's tool results keep
// to it (run_code's values nest at most 997 levels, sandbox/quickjs), and
// so do the remote results it relays:
//
//   - a message of the server's deeper than 1000 levels is cut off in the
//     transport (the SDK would fail the whole session on it, and toolhost
//     would take the call for lost and send it again);
//   - structuredContent sits 2 levels down in a message (the message, its
//     result), so what toolhost sends as structuredContent nests at most
//     998 levels. An object the server sent is sent as it came (it fits,
//     since the server's message did); a value that is not an object is
//     wrapped as {"value": …}, a level more, so it may nest 997; the
//     structuredContent of a remote isError goes in the error object
//     (_meta["toolhost/error"].structured_content, or structuredContent's
//     error.structured_content), two levels more, so it may nest 996.
//
// A result over these is a tool error CodeUpstreamTooDeep, journaled as a
// failed call like any other.
const (
	maxMessageDepth    = 1000
	maxStructuredDepth = maxMessageDepth - 2
	maxWrappedDepth    = maxStructuredDepth - 1
	maxErrorValueDepth = maxStructuredDepth - 2
)

// errTooDeep ends a response body nested deeper than maxMessageDepth.
var errTooDeep = fmt.Errorf("the MCP server's response nests more than %d levels deep", maxMessageDepth)

// depthScan follows the nesting of a response body read in pieces: a
// byte loop, no decoding, nothing allocated. Brackets in strings do not
// count.
//
// An application/json body is one JSON text. A text/event-stream body
// (sse) is framed as the go-sdk's client (v1.8.0, mcp/event.go) reads it,
// so that the scan sees exactly the JSON the SDK decodes: lines end at
// LF (a CR before it is dropped; a CR anywhere else is part of the line,
// JSON whitespace in a data value); a line that is empty, or nothing but
// CRs, ends an event; a line is a field "name: value" cut at its first
// colon, and only the values of fields named exactly "data" are JSON, the
// data lines of one event joined into one message. So an id, event or
// retry line, a comment (":…") or any other field cannot start a string
// that hides the brackets of the next message, and cannot add brackets of
// its own. String state ends with each line (a JSON string cannot hold a
// raw newline, so a message that spans data lines is past it anyway) and
// the depth with each event (one event, one message). Treating a lone CR
// as a line end, as the SSE specification does, would hide nesting the SDK
// counts: "data: [\r[\r[…" is one data line to the SDK.
type depthScan struct {
	depth            int
	inString, escape bool

	sse  bool
	line sseLine
	// name counts the bytes of the line's field name that spell "data"
	// so far, -1 once they do not.
	name int8
	// filled is set once the line has a byte other than CR.
	filled bool
}

// sseLine is where in a line of an event stream the scan is.
type sseLine uint8

const (
	sseName sseLine = iota // the field name, up to the first colon
	sseData                // a data field's value: JSON
	sseSkip                // any other line's rest
)

// newDepthScan is the scan of a body of the given Content-Type, decided
// as the SDK decides it (mime.ParseMediaType); called once per response.
func newDepthScan(contentType string) depthScan {
	mt, _, err := mime.ParseMediaType(contentType)
	return depthScan{sse: err == nil && mt == "text/event-stream"}
}

// scan reads p and reports whether the nesting went past maxMessageDepth.
func (s *depthScan) scan(p []byte) bool {
	if !s.sse {
		return s.json(p)
	}
	for len(p) > 0 {
		switch s.line {
		case sseData, sseSkip:
			end := bytes.IndexByte(p, '\n')
			if s.line == sseData {
				v := p
				if end >= 0 {
					v = p[:end]
				}
				if s.json(v) {
					return true
				}
			}
			if end < 0 {
				return false
			}
			s.endLine()
			p = p[end+1:]
		default:
			c := p[0]
			p = p[1:]
			switch {
			case c == '\n':
				if !s.filled {
					s.depth = 0 // an empty line: the event (its message) ends
				}
				s.endLine()
			case c == ':':
				s.line = sseSkip
				if s.name == 4 {
					s.line = sseData
				}
			case c == '\r' && !s.filled:
				s.name = -1 // a CR-only line may still be empty, but not "data"
			case s.name >= 0 && s.name < 4 && c == "data"[s.name]:
				s.filled = true
				s.name++
			default:
				s.line = sseSkip // another field, or a line the SDK refuses
			}
		}
	}
	return false
}

// endLine starts the next line of an event stream.
func (s *depthScan) endLine() {
	s.line, s.name, s.filled = sseName, 0, false
	s.inString, s.escape = false, false
}

// json follows the nesting of JSON text. Inside a string it only looks
// for the quote or the backslash, in a loop of its own that keeps its
// state in registers: most of an answer's bytes are text.
func (s *depthScan) json(p []byte) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.inString {
			if s.escape {
				s.escape = false
				continue
			}
			for c != '"' && c != '\\' {
				if i++; i == len(p) {
					return false
				}
				c = p[i]
			}
			if c == '\\' {
				s.escape = true
			} else {
				s.inString = false
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
		case '[', '{':
			s.depth++
			if s.depth > maxMessageDepth {
				return true
			}
		case ']', '}':
			if s.depth > 0 {
				s.depth--
			}
		}
	}
	return false
}

// depthOver reports whether v, as decoded by encoding/json, nests arrays
// and objects more than limit levels deep. It stops at the first branch
// that does; a value within the limit is walked whole, so it is only
// asked of values that may be over (see result).
func depthOver(v any, limit int) bool {
	if limit < 0 {
		return true
	}
	switch x := v.(type) {
	case wire.Object:
		if limit == 0 {
			return true
		}
		for _, m := range x {
			if depthOver(m, limit-1) {
				return true
			}
		}
	case []any:
		if limit == 0 {
			return true
		}
		for _, m := range x {
			if depthOver(m, limit-1) {
				return true
			}
		}
	}
	return false
}

// isTooDeep reports whether err is a body cut off for its nesting.
func isTooDeep(err error) bool { return errors.Is(err, errTooDeep) }
