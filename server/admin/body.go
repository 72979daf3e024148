package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
)

// MaxBodyBytes bounds the JSON body of every write route of the tools API.
const MaxBodyBytes = 256 << 10

// readBody reads one JSON object strictly into v: at most MaxBodyBytes,
// no duplicate keys, no unknown fields, no trailing data. Every failure is
// a validationError naming the problem.
func readBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return invalid("the request body could not be read: %s", clip.Echo(err.Error()))
	}
	if len(b) > MaxBodyBytes {
		return invalid("the request body is larger than %d bytes", MaxBodyBytes)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return invalid("the request body is empty; send a JSON object")
	}
	if err := wire.Check(b); err != nil {
		return invalid("the request body is not strict JSON: %s", clip.Echo(err.Error()))
	}
	if bytes.TrimSpace(b)[0] != '{' {
		return invalid("the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalid("field %s: expected %s, not %s", te.Field, te.Type, te.Value)
		}
		return invalid("the request body: %s", clip.Echo(err.Error()))
	}
	return nil
}

// fieldError is a validationError that names its field.
func fieldError(field, format string, args ...any) error {
	return validationError{msg: field + ": " + fmt.Sprintf(format, args...), field: field}
}
