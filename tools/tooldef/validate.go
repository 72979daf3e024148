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
// body is a POST (name required). The fields are checked in the order of
// the wire format, and the first bad one is the error.
func (r Rules) Apply(d *Definition, in Input, create bool) error {
	if create && in.Name == nil {
		return bad("name", "is required")
	}
	if err := r.applyName(d, in.Name); err != nil {
		return err
	}
	if in.Description != nil {
		if n := utf8.RuneCountInString(*in.Description); n > MaxDescriptionRunes {
			return bad("description", "is %d characters; at most %d", n, MaxDescriptionRunes)
		}
		d.Description = *in.Description
	}
	if err := r.applyParameters(d, in.Parameters); err != nil {
		return err
	}
	if in.SideEffectLevel != nil {
		if !slices.Contains([]string{"none", "sandbox", "irreversible"}, *in.SideEffectLevel) {
			return bad("side_effect_level", "must be none, sandbox or irreversible, not %q", clip(*in.SideEffectLevel))
		}
		d.SideEffectLevel = *in.SideEffectLevel
	}
	if err := r.applySlots(d, in.AllowedSlots); err != nil {
		return err
	}
	if err := applySource(d, in.Source, in.SourceID); err != nil {
		return err
	}
	if in.Enabled != nil {
		d.Enabled = *in.Enabled
	}
	if err := applyHandler(d, in.HandlerType, in.Handler); err != nil {
		return err
	}
	return checkHandler(d)
}

func (r Rules) applyName(d *Definition, name *string) error {
	if name == nil {
		return nil
	}
	if !namePattern.MatchString(*name) {
		return bad("name", "%q is not a tool name: want 1 to 64 of A-Z a-z 0-9 _ -", clip(*name))
	}
	if r.Reserved != nil && r.Reserved(*name) {
		return bad("name", "%q is the name of a builtin tool", *name)
	}
	d.Name = *name
	return nil
}

// applyParameters keeps a schema that is an object schema of bounded size,
// compacted; null restores the default.
func (r Rules) applyParameters(d *Definition, params json.RawMessage) error {
	if params == nil {
		return nil
	}
	p := bytes.TrimSpace(params)
	switch {
	case string(p) == "null":
		d.Parameters = DefaultParameters
		return nil
	case len(p) > MaxParametersBytes:
		return bad("parameters", "is %d bytes; at most %d", len(p), MaxParametersBytes)
	case p[0] != '{':
		return bad("parameters", "must be a JSON Schema object")
	}
	var top struct {
		Type any `json:"type"` // a schema's type may be a list of names
	}
	if err := json.Unmarshal(p, &top); err != nil {
		return bad("parameters", "%v", err)
	}
	if top.Type != "object" {
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
	return nil
}

// applySlots keeps the known slots, each once, in the order given.
func (r Rules) applySlots(d *Definition, allowed *[]string) error {
	if allowed == nil {
		return nil
	}
	slots := []string{}
	for _, s := range *allowed {
		if !slices.Contains(r.Slots, s) {
			return bad("allowed_slots", "unknown slot %q; slots: %v", clip(s), r.Slots)
		}
		if !slices.Contains(slots, s) {
			slots = append(slots, s)
		}
	}
	d.AllowedSlots = slots
	return nil
}

// applySource sets where the definition comes from; a character's
// definition must name the character.
func applySource(d *Definition, source *string, sourceID json.RawMessage) error {
	if source != nil {
		switch *source {
		case SourceCustom, SourceCharacter:
			d.Source = *source
		case SourcePreset:
			return bad("source", "preset definitions come from the server's config file and cannot be written over the API")
		default:
			return bad("source", "must be custom or character, not %q", clip(*source))
		}
	}
	if sourceID != nil {
		if string(sourceID) == "null" {
			d.SourceID = ""
		} else {
			var s string
			if err := json.Unmarshal(sourceID, &s); err != nil || !sourceIDPattern.MatchString(s) {
				return bad("source_id", "must be null or 1 to %d of A-Z a-z 0-9 . _ : -", MaxSourceIDLength)
			}
			d.SourceID = s
		}
	}
	if d.Source == SourceCharacter && d.SourceID == "" {
		return bad("source_id", "a character definition needs the character's id")
	}
	return nil
}

// applyHandler sets the handler type (script or null) and the handler;
// checkHandler then checks the pair.
func applyHandler(d *Definition, handlerType, handler json.RawMessage) error {
	if handlerType != nil {
		var ht *string
		if err := json.Unmarshal(handlerType, &ht); err != nil {
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
	if handler != nil {
		if string(handler) == "null" {
			d.Handler = nil
		} else {
			d.Handler = handler
		}
	}
	return nil
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
