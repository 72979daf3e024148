package loop

import (
	"bytes"
	"encoding/json"
)

// fixArgs is the arguments a hosted call runs with: the model's, with the
// caller's fixed arguments of the tool in place of the model's values (a
// domain filter the caller declared holds whatever the model writes).
// Arguments that are not a JSON object are left for the executor to refuse.
func (h Hosted) fixArgs(tool string, args json.RawMessage) json.RawMessage {
	fixed := h.Fixed[tool]
	if len(fixed) == 0 {
		return args
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(args))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return args
	}
	for k, v := range fixed {
		obj[k] = v
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return args
	}
	return out
}
