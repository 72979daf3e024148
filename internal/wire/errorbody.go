package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ErrorBody is the body every face of toolhost answers a failure with:
// every REST route's 4xx and 5xx, the {"error": ...} a failed tool call
// yields (what the journal keeps, /v1 hands the model and MCP puts in the
// structuredContent of a tool whose output schema documents it).
// /v1's own request errors (the OpenAI and Anthropic shapes) and OAuth's
// (RFC 6749) have the shapes their standards give.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the error itself, alone in MCP's
// _meta["toolhost/error"]: a stable machine code, a message that says what
// to do about it, and what else the failure carries. The fields are
// declared in sorted order of their names and Details are written among
// them in that order: the bytes the map[string]any this replaced gave.
type ErrorObject struct {
	Code string `json:"code"`
	// Field names the request's field a validation error is about.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// RetryAfterMS, when waiting helps, is how long to wait first.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	// Details are the failure's own members, written beside the fields
	// above: a permission_denied's "rule", an http_error's "status",
	// run_code's output. They are each tool's own, so they are kept as
	// JSON, each value as encoding/json writes what it decodes to (see
	// SetDetails). A field set above wins over a detail of its name.
	Details map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the fields and the details, every key in sorted
// order. HTML characters are not escaped: an outer encoder decides.
func (o ErrorObject) MarshalJSON() ([]byte, error) {
	type plain ErrorObject // without the methods, so no recursion
	if len(o.Details) == 0 {
		// The fields alone are in sorted order already.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plain(o)); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	return Marshal(plain(o), o.Details)
}

// UnmarshalJSON reads an error object; the members no field names become
// Details, each value rewritten as SetDetails writes it.
func (o *ErrorObject) UnmarshalJSON(data []byte) error {
	type plain ErrorObject
	var p plain
	extra, err := Unmarshal(data, &p)
	if err != nil {
		return err
	}
	if p.Details, err = plainMembers(extra); err != nil {
		return err
	}
	*o = ErrorObject(p)
	return nil
}

// SetDetails sets the details to the members of v, a value that encodes
// as a JSON object (a struct of the failure's own fields), or to none when
// v is nil. Each member's value is written as encoding/json writes the
// value it decodes to: object keys sorted at every depth, numbers as
// float64 gives them. That is what a map[string]any of details gave, and
// it makes the bytes the same whether the details come from a tool's
// struct or from an error object read back (the journal's, on a replay).
func (o *ErrorObject) SetDetails(v any) error {
	o.Details = nil
	if v == nil {
		return nil
	}
	members, err := Members(v)
	if err != nil {
		return fmt.Errorf("wire: error details: %w", err)
	}
	o.Details, err = plainMembers(members)
	return err
}

// plainMembers rewrites each member's value as encoding/json writes the
// value it decodes to, without escaping HTML; none is nil.
func plainMembers(members map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if len(members) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for k, raw := range members {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, &FieldError{Field: k, Err: err}
		}
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return nil, &FieldError{Field: k, Err: err}
		}
		members[k] = bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return members, nil
}
