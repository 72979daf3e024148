package mcp

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/toolhost/toolhost/internal/wire"
)

// envelopes checks body strictly and reads the envelope of each message
// in it. The envelope and its params are strict; the tool arguments
// inside are the pipeline's to refuse, as a result the model can read.
//
// A single message goes through one allocation-free scan that both checks
// and reads it (wire.Scan), reading the fields as json.Unmarshal
// into envelope would: names matched regardless of case, the last match
// winning, a value of the wrong type leaving the field as it was. What the
// scan cannot vouch for, and a batch, take wire.CheckDepth and
// json.Unmarshal. The two passes cost a tools/call ~50 µs on the server.
func envelopes(body []byte) ([]envelope, error) {
	var m envelope
	var params [2][]byte
	n := 0
	single := false
	ok := wire.Scan(body, 2, func(key, value []byte) {
		single = true
		switch k := string(key); {
		case strings.EqualFold(k, "id"):
			m.ID = value
		case strings.EqualFold(k, "method"):
			setString(&m.Method, value)
		case strings.EqualFold(k, "params"):
			if n < len(params) {
				params[n] = value
			}
			n++
		}
	})
	if ok && single && n <= len(params) {
		if m.Method == "initialize" || m.Method == "tools/call" {
			for _, p := range params[:n] {
				m.readParams(p)
			}
		}
		return []envelope{m}, nil
	}
	if err := wire.CheckDepth(body, 2); err != nil {
		return nil, err
	}
	var msgs []envelope
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		_ = json.Unmarshal(body, &msgs)
		return msgs, nil
	}
	m = envelope{}
	_ = json.Unmarshal(body, &m)
	return []envelope{m}, nil
}

// readParams reads one "params" value already vouched for by the scan
// (its keys plain ASCII): only an object fills the fields.
func (m *envelope) readParams(p []byte) {
	if len(p) == 0 || p[0] != '{' {
		return
	}
	wire.Scan(p, 1, func(key, value []byte) {
		switch k := string(key); {
		case strings.EqualFold(k, "name"):
			m.Params.Name = value
		case strings.EqualFold(k, "clientInfo"):
			m.Params.ClientInfo = value
		}
	})
}

// setString sets *dst to the JSON string value (a value of another type
// leaves it, as json.Unmarshal does).
func setString(dst *string, value []byte) {
	if len(value) == 0 || value[0] != '"' {
		return
	}
	if bytes.IndexByte(value, '\\') < 0 && isASCII(value) {
		*dst = string(value[1 : len(value)-1])
		return
	}
	_ = json.Unmarshal(value, dst)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
