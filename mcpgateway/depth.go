package mcpgateway

import (
	"errors"
	"fmt"
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

// depthScan follows the nesting of JSON text read in pieces (a response
// body, JSON or an event stream of JSON messages): a byte loop, no
// decoding. Brackets in strings do not count. A body whose framing puts a
// stray quote outside the JSON (an event stream's id line) can hide its
// depth from the scan; the SDK then refuses the message itself, and the
// call fails as lost.
type depthScan struct {
	depth            int
	inString, escape bool
}

// scan reads p and reports whether the nesting went past maxMessageDepth.
func (s *depthScan) scan(p []byte) bool {
	for _, c := range p {
		switch {
		case s.inString:
			switch {
			case s.escape:
				s.escape = false
			case c == '\\':
				s.escape = true
			case c == '"':
				s.inString = false
			}
		case c == '"':
			s.inString = true
		case c == '[' || c == '{':
			s.depth++
			if s.depth > maxMessageDepth {
				return true
			}
		case c == ']' || c == '}':
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
	case map[string]any:
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
