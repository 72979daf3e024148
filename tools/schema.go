package tools

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
)

// Validator identifies the JSON Schema implementation and its settings; it is
// recorded with every call so a validation verdict can be reproduced.
const Validator = "santhosh-tekuri/jsonschema/v6 (draft 2020-12, format assertions on)"

// compileSchema compiles one tool schema under the 2020-12 dialect with format
// assertions enabled (the seed asks that this choice be explicit).
func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// A schema comes from a caller or a remote server: its $refs may
	// point only inside itself, never to a file or a URL.
	c.UseLoader(refusingLoader{})
	url := "toolhost:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	return s, nil
}

// refusingLoader loads no external schema.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %s; only references inside the schema are allowed", clip.Echo(url))
}

var printer = message.NewPrinter(language.Und)

// kindMessage words one validation failure. Numeric bounds are spelled out
// exactly ("got 2000000, want 1000"): the library's printer would write
// "2×10⁰⁶" or "2,000", which a model may not map back to what it sent.
func kindMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return "minimum: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.Maximum:
		return "maximum: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "exclusiveMinimum: got " + ratString(k.Got) + ", want more than " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "exclusiveMaximum: got " + ratString(k.Got) + ", want less than " + ratString(k.Want)
	}
	return k.LocalizedString(printer)
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// maxValidationLines bounds the failures one message lists.
const maxValidationLines = 20

// describeValidation flattens a validation error into one line per failing
// leaf, "at /sides: maximum: got 2000, want 1000", sorted for stable output.
func describeValidation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			if len(e.InstanceLocation) == 0 {
				loc = "the top level"
			}
			lines = append(lines, "at "+clip.Echo(loc)+": "+clip.Echo(kindMessage(e.ErrorKind)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(lines)
	if len(lines) > maxValidationLines {
		more := len(lines) - maxValidationLines
		lines = append(lines[:maxValidationLines], fmt.Sprintf("and %d more", more))
	}
	return strings.Join(lines, "; ")
}

// applyDefaults fills missing top-level properties from their schema defaults.
func applyDefaults(args wire.Object, props map[string]any) {
	for name, p := range props {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		def, has := pm["default"]
		if !has {
			continue
		}
		if _, set := args[name]; !set {
			args[name] = def
		}
	}
}

// CheckSchema compiles raw as a tool's input schema with the pipeline's
// dialect and validator, for schemas that arrive at run time (tool
// definitions).
func CheckSchema(name string, raw []byte) error {
	_, err := compileSchema(name, raw)
	return err
}
