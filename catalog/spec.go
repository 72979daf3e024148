package catalog

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// SideEffect classifies what a call may change outside the process.
type SideEffect string

const (
	// SideEffectNone: reads only (it may still be billed or logged upstream).
	SideEffectNone SideEffect = "none"
	// SideEffectSandbox: writes only inside a throw-away sandbox.
	SideEffectSandbox SideEffect = "sandbox"
	// SideEffectIrreversible: may change the outside world for good.
	SideEffectIrreversible SideEffect = "irreversible"
)

// Async capabilities of a tool (Spec.Async, the runtime catalog's
// async_capability).
const (
	InlineOnly = "inline_only"
	DeferredOK = "deferred_ok"
)

// Deferrable reports whether a call of the tool may run as a background job.
func (s Spec) Deferrable() bool { return s.Async == DeferredOK }

// SchemaDialect is the JSON Schema dialect every tool schema is written in and
// validated against.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Text is a piece of user-facing text in both languages we publish.
type Text struct {
	ZH string `json:"zh"`
	EN string `json:"en"`
}

// In returns the text in lang, falling back to the other language when empty.
func (t Text) In(lang Lang) string {
	if lang == English {
		if t.EN != "" {
			return t.EN
		}
		return t.ZH
	}
	if t.ZH != "" {
		return t.ZH
	}
	return t.EN
}

// Annotations are the MCP tool hints. They describe behaviour to clients; they
// grant nothing.
type Annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

// Spec is the contract of one tool version.
type Spec struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       Text   `json:"title"`
	Description Text   `json:"description"`
	// Input and Output are the schemas with their descriptions in
	// English; InputZH and OutputZH give each description's Chinese
	// (InputIn, OutputIn render a schema in a language).
	Input       json.RawMessage `json:"input_schema"`
	InputZH     SchemaZH        `json:"input_zh,omitempty"`
	Output      json.RawMessage `json:"output_schema,omitempty"`
	OutputZH    SchemaZH        `json:"output_zh,omitempty"`
	Annotations Annotations     `json:"annotations"`
	SideEffect  SideEffect      `json:"side_effect_level"`
	// ReplaySafe says whether running the same normalized arguments again is
	// harmless (a retry or a journal replay may do it).
	ReplaySafe bool `json:"replay_safe"`
	// PaidUnit names what the tool bills per unit ("" for free tools).
	PaidUnit string `json:"paid_unit,omitempty"`
	// Async is the tool's async_capability: DeferredOK when a call may run
	// as a durable background job that answers first with a receipt;
	// InlineOnly (or empty) when every call runs while its caller waits.
	// DeferByDefault makes a background job the default delivery of a
	// DeferredOK tool (default_delivery_mode async_job); a caller may still
	// ask for inline.
	Async          string `json:"async_capability,omitempty"`
	DeferByDefault bool   `json:"defer_by_default,omitempty"`

	// zh are the Chinese schemas Prepare rendered (nil: rendered per call).
	zh *zhSchemas
}

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Check reports whether the spec is complete and self-consistent.
func (s Spec) Check() error {
	if !namePattern.MatchString(s.Name) {
		return fmt.Errorf("tool name %q: want lower-case letters, digits and underscores", s.Name)
	}
	if s.Version == "" {
		return fmt.Errorf("tool %s: empty version", s.Name)
	}
	if s.Description.EN == "" || s.Description.ZH == "" {
		return fmt.Errorf("tool %s: description needs both zh and en text", s.Name)
	}
	switch s.SideEffect {
	case SideEffectNone, SideEffectSandbox, SideEffectIrreversible:
	default:
		return fmt.Errorf("tool %s: unknown side-effect level %q", s.Name, s.SideEffect)
	}
	var in map[string]any
	if err := json.Unmarshal(s.Input, &in); err != nil {
		return fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	if in["type"] != "object" {
		return fmt.Errorf("tool %s: input schema must have type object", s.Name)
	}
	if len(s.Output) > 0 {
		var out map[string]any
		if err := json.Unmarshal(s.Output, &out); err != nil {
			return fmt.Errorf("tool %s: output schema: %w", s.Name, err)
		}
	}
	if err := checkSchemaZH(s.Input, s.InputZH); err != nil {
		return fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	if err := checkSchemaZH(s.Output, s.OutputZH); err != nil {
		return fmt.Errorf("tool %s: output schema: %w", s.Name, err)
	}
	switch s.Async {
	case "", InlineOnly, DeferredOK:
	default:
		return fmt.Errorf("tool %s: unknown async capability %q", s.Name, s.Async)
	}
	if s.DeferByDefault && s.Async != DeferredOK {
		return fmt.Errorf("tool %s: deferred by default but not deferred_ok", s.Name)
	}
	if s.Annotations.ReadOnly && s.SideEffect == SideEffectIrreversible {
		return fmt.Errorf("tool %s: read-only hint contradicts irreversible side effects", s.Name)
	}
	return nil
}

// Lang is the language of published text.
type Lang string

const (
	Chinese Lang = "zh"
	English Lang = "en"
)
