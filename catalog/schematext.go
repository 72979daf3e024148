package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SchemaZH is the Chinese of the descriptions inside a tool's schema, by
// the JSON Pointer of the schema object each describes ("" the schema
// itself, "/properties/timezone" a parameter, "/properties/files/items"
// deeper): the English is the schema's own "description" there, so a
// schema is written once, in English, and the text of each description
// is a catalog.Text of that English and this Chinese. A spec that has one
// covers every description of its schema (Check).
type SchemaZH map[string]string

// InputIn is the input schema with its descriptions in lang: Input itself
// in English or when the spec has no InputZH (tool definitions, remote
// tools: their text is their author's).
func (s Spec) InputIn(lang Lang) json.RawMessage {
	if lang != Chinese || len(s.InputZH) == 0 {
		return s.Input
	}
	if s.zh != nil {
		return s.zh.input
	}
	b, _ := localize(s.Input, s.InputZH)
	return b
}

// OutputIn is InputIn's counterpart for the output schema.
func (s Spec) OutputIn(lang Lang) json.RawMessage {
	if lang != Chinese || len(s.OutputZH) == 0 {
		return s.Output
	}
	if s.zh != nil {
		return s.zh.output
	}
	b, _ := localize(s.Output, s.OutputZH)
	return b
}

// zhSchemas are a spec's schemas in Chinese, rendered once by Prepare.
type zhSchemas struct {
	input, output json.RawMessage
}

// Prepare checks s and renders its Chinese schemas once, so that InputIn
// and OutputIn of it (and of its copies) cost nothing per request. A
// spec not prepared renders them at each call.
func Prepare(s Spec) (Spec, error) {
	if err := s.Check(); err != nil {
		return s, err
	}
	if len(s.InputZH) == 0 && len(s.OutputZH) == 0 {
		return s, nil
	}
	in, err := localize(s.Input, s.InputZH)
	if err != nil {
		return s, fmt.Errorf("tool %s: input schema: %w", s.Name, err)
	}
	out, err := localize(s.Output, s.OutputZH)
	if err != nil {
		return s, fmt.Errorf("tool %s: output schema: %w", s.Name, err)
	}
	s.zh = &zhSchemas{input: in, output: out}
	return s, nil
}

// checkSchemaZH reports a SchemaZH that leaves a description of the
// schema without Chinese, names one the schema does not have, or is
// empty somewhere.
func checkSchemaZH(schema json.RawMessage, zh SchemaZH) error {
	if len(zh) == 0 {
		return nil
	}
	doc, err := decodeSchema(schema)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	described(doc, "", have)
	var missing []string
	for p := range have {
		if zh[p] == "" {
			missing = append(missing, p)
		}
	}
	for p := range zh {
		if !have[p] {
			return fmt.Errorf("a Chinese description for %q, which has no English one", p)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("no Chinese for the descriptions at %s", strings.Join(missing, ", "))
	}
	return nil
}

// described collects the pointers of the schema objects under v that
// have a description. Values of default, const, enum and examples are
// data, not schemas: a "description" in them is not text to translate.
func described(v any, ptr string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["description"].(string); ok {
			out[ptr] = true
		}
		for k, m := range x {
			switch k {
			case "default", "const", "enum", "examples":
				continue
			}
			described(m, ptr+"/"+escapePointer(k), out)
		}
	case []any:
		for i, m := range x {
			described(m, ptr+"/"+strconv.Itoa(i), out)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// localize returns schema with the description at each pointer of zh
// replaced by its Chinese (numbers kept as written, keys sorted, no HTML
// escaping).
func localize(schema json.RawMessage, zh SchemaZH) (json.RawMessage, error) {
	if len(zh) == 0 || len(schema) == 0 {
		return schema, nil
	}
	doc, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	for p, text := range zh {
		obj, ok := at(doc, p).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no schema object at %q", p)
		}
		obj["description"] = text
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func decodeSchema(schema json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// at is the value at a JSON Pointer ("" the whole document), nil when
// there is none.
func at(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	cur := doc
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	return cur
}
