package tooldef

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"
)

// Input is a POST or PATCH body: every field optional so absent and null
// can be told apart.
type Input struct {
	Name            *string         `json:"name"`
	Description     *string         `json:"description"`
	Parameters      json.RawMessage `json:"parameters"`
	SideEffectLevel *string         `json:"side_effect_level"`
	AllowedSlots    *[]string       `json:"allowed_slots"`
	Source          *string         `json:"source"`
	SourceID        json.RawMessage `json:"source_id"`
	Enabled         *bool           `json:"enabled"`
	HandlerType     json.RawMessage `json:"handler_type"`
	Handler         json.RawMessage `json:"handler"`
}

// Empty reports whether the input sets no field.
func (in Input) Empty() bool {
	return in.Name == nil && in.Description == nil && in.Parameters == nil && in.SideEffectLevel == nil &&
		in.AllowedSlots == nil && in.Source == nil && in.SourceID == nil && in.Enabled == nil &&
		in.HandlerType == nil && in.Handler == nil
}

// FieldError is a validation failure of one field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Rules are what validation needs from the rest of the server.
type Rules struct {
	// Slots are the configured caller slots allowed_slots may name.
	Slots []string
	// Reserved reports names a definition may not take (the builtins').
	Reserved func(name string) bool
	// CheckSchema compiles parameters with the pipeline's validator.
	CheckSchema func(raw []byte) error
}

// Limits of a definition's fields.
const (
	MaxDescriptionRunes = 4096
	MaxParametersBytes  = 64 << 10
	MaxScriptBytes      = 64 << 10
	MaxSourceIDLength   = 128
)

var (
	namePattern     = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	sourceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

// DefaultParameters is the schema of a definition that gives none.
var DefaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// New returns the defaults of a definition before a POST body applies.
func New() Definition {
	return Definition{Parameters: DefaultParameters, SideEffectLevel: "none", AllowedSlots: []string{},
		Source: SourceCustom, Enabled: true}
}

// Apply sets the fields in into d and checks the result. create says the
// body is a POST (name required).
func (r Rules) Apply(d *Definition, in Input, create bool) error {
	if create && in.Name == nil {
		return bad("name", "is required")
	}
	if in.Name != nil {
		if !namePattern.MatchString(*in.Name) {
			return bad("name", "%q is not a tool name: want 1 to 64 of A-Z a-z 0-9 _ -", clip(*in.Name))
		}
		if r.Reserved != nil && r.Reserved(*in.Name) {
			return bad("name", "%q is the name of a builtin tool", *in.Name)
		}
		d.Name = *in.Name
	}
	if in.Description != nil {
		if n := utf8.RuneCountInString(*in.Description); n > MaxDescriptionRunes {
			return bad("description", "is %d characters; at most %d", n, MaxDescriptionRunes)
		}
		d.Description = *in.Description
	}
	if in.Parameters != nil {
		p := bytes.TrimSpace(in.Parameters)
		switch {
		case string(p) == "null":
			d.Parameters = DefaultParameters
		case len(p) > MaxParametersBytes:
			return bad("parameters", "is %d bytes; at most %d", len(p), MaxParametersBytes)
		case p[0] != '{':
			return bad("parameters", "must be a JSON Schema object")
		default:
			var top map[string]any
			if err := json.Unmarshal(p, &top); err != nil {
				return bad("parameters", "%v", err)
			}
			if top["type"] != "object" {
				return bad("parameters", `must have "type": "object" (tool arguments are an object)`)
			}
			if r.CheckSchema != nil {
				if err := r.CheckSchema(p); err != nil {
					return bad("parameters", "is not a valid JSON Schema (2020-12): %v", err)
				}
			}
			var buf bytes.Buffer
			_ = json.Compact(&buf, p)
			d.Parameters = buf.Bytes()
		}
	}
	if in.SideEffectLevel != nil {
		if !slices.Contains([]string{"none", "sandbox", "irreversible"}, *in.SideEffectLevel) {
			return bad("side_effect_level", "must be none, sandbox or irreversible, not %q", clip(*in.SideEffectLevel))
		}
		d.SideEffectLevel = *in.SideEffectLevel
	}
	if in.AllowedSlots != nil {
		slots := []string{}
		for _, s := range *in.AllowedSlots {
			if !slices.Contains(r.Slots, s) {
				return bad("allowed_slots", "unknown slot %q; slots: %v", clip(s), r.Slots)
			}
			if !slices.Contains(slots, s) {
				slots = append(slots, s)
			}
		}
		d.AllowedSlots = slots
	}
	if in.Source != nil {
		switch *in.Source {
		case SourceCustom, SourceCharacter:
			d.Source = *in.Source
		case SourcePreset:
			return bad("source", "preset definitions come from the server's config file and cannot be written over the API")
		default:
			return bad("source", "must be custom or character, not %q", clip(*in.Source))
		}
	}
	if in.SourceID != nil {
		if string(in.SourceID) == "null" {
			d.SourceID = ""
		} else {
			var s string
			if err := json.Unmarshal(in.SourceID, &s); err != nil || !sourceIDPattern.MatchString(s) {
				return bad("source_id", "must be null or 1 to %d of A-Z a-z 0-9 . _ : -", MaxSourceIDLength)
			}
			d.SourceID = s
		}
	}
	if d.Source == SourceCharacter && d.SourceID == "" {
		return bad("source_id", "a character definition needs the character's id")
	}
	if in.Enabled != nil {
		d.Enabled = *in.Enabled
	}
	if in.HandlerType != nil {
		var ht *string
		if err := json.Unmarshal(in.HandlerType, &ht); err != nil {
			return bad("handler_type", "must be \"script\" or null")
		}
		switch {
		case ht == nil:
			d.HandlerType = ""
		case *ht == HandlerScript:
			d.HandlerType = HandlerScript
		default:
			return bad("handler_type", "must be \"script\" or null, not %q", clip(*ht))
		}
	}
	if in.Handler != nil {
		if string(in.Handler) == "null" {
			d.Handler = nil
		} else {
			d.Handler = in.Handler
		}
	}
	return checkHandler(d)
}

func checkHandler(d *Definition) error {
	if d.HandlerType == "" {
		if d.Handler != nil {
			return bad("handler", "needs handler_type \"script\"")
		}
		return nil
	}
	if d.Handler == nil {
		return bad("handler", `a script handler needs {"script": "…"}`)
	}
	var h struct {
		Script *string `json:"script"`
	}
	dec := json.NewDecoder(bytes.NewReader(d.Handler))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil || h.Script == nil {
		return bad("handler", `must be {"script": "<body of a JavaScript function of args>"}`)
	}
	switch {
	case len(*h.Script) == 0:
		return bad("handler", "script is empty")
	case len(*h.Script) > MaxScriptBytes:
		return bad("handler", "script is %d bytes; at most %d", len(*h.Script), MaxScriptBytes)
	}
	b, _ := json.Marshal(map[string]string{"script": *h.Script})
	d.Handler = b
	return nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
