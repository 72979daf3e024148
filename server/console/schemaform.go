package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Kinds of a generated form field.
const (
	kindText    = "text"
	kindNumber  = "number"
	kindInteger = "integer"
	kindBoolean = "boolean"
	kindEnum    = "enum"
	kindJSON    = "json" // arrays, objects and anything else: JSON typed in a textarea
)

// maxFields bounds the fields generated from one schema: a hostile
// schema with thousands of properties renders its first ones and the
// JSON textarea still takes the rest.
const maxFields = 100

// field is one input of a playground form, made from one property of the
// tool's input schema.
type field struct {
	Name, Kind, Description string
	Index                   int
	Required                bool
	Options                 []option // enum values
	Value                   string   // what was posted, shown again
}

// option is one enum value: Value its JSON text, Label how it reads.
type option struct{ Value, Label string }

// ID is the field's element id.
// (by position: a property's name may hold any character).
func (f field) ID() string { return fmt.Sprintf("arg-%d", f.Index) }

// propSchema is the part of a property's schema the form reads.
type propSchema struct {
	Type        json.RawMessage   `json:"type"`
	Enum        []json.RawMessage `json:"enum"`
	Description string            `json:"description"`
}

// schemaFields makes the form fields of an object schema's properties, in
// the schema's order; a schema that is not an object with properties has
// none (its arguments are typed as JSON).
func schemaFields(schema json.RawMessage) []field {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &top) != nil || len(top.Properties) == 0 {
		return nil
	}
	var props map[string]propSchema
	if json.Unmarshal(top.Properties, &props) != nil {
		return nil
	}
	var out []field
	for _, name := range objectKeys(top.Properties) {
		if len(out) == maxFields {
			break
		}
		p := props[name]
		f := field{Name: name, Index: len(out), Description: p.Description, Required: slices.Contains(top.Required, name), Kind: kindJSON}
		switch {
		case len(p.Enum) > 0:
			f.Kind = kindEnum
			for _, v := range p.Enum {
				label := string(v)
				var s string
				if json.Unmarshal(v, &s) == nil {
					label = s
				}
				f.Options = append(f.Options, option{Value: string(v), Label: label})
			}
		default:
			switch schemaType(p.Type) {
			case "string":
				f.Kind = kindText
			case "number":
				f.Kind = kindNumber
			case "integer":
				f.Kind = kindInteger
			case "boolean":
				f.Kind = kindBoolean
			}
		}
		out = append(out, f)
	}
	return out
}

// schemaType is a property's one type: a name, or the one name besides
// "null" of a list; "" for anything else.
func schemaType(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return ""
	}
	list = slices.DeleteFunc(list, func(t string) bool { return t == "null" })
	if len(list) == 1 {
		return list[0]
	}
	return ""
}

// objectKeys are a JSON object's keys in their order, each once.
func objectKeys(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// formArguments builds a call's arguments from the posted fields. Empty
// fields are left out (the pipeline says which required ones are
// missing); a number that does not parse is sent as the string it is, so
// the pipeline's own validation names it. Only a JSON field that is not
// JSON is refused here, since it cannot be sent at all.
func formArguments(fields []field, f url.Values) (json.RawMessage, []string) {
	args := map[string]json.RawMessage{}
	var bad []string
	str := func(s string) json.RawMessage {
		b, _ := json.Marshal(s)
		return b
	}
	for i := range fields {
		fd := &fields[i]
		v := f.Get("arg." + fd.Name)
		fd.Value = v
		if v == "" && fd.Kind != kindText {
			continue
		}
		if v == "" && !fd.Required {
			continue
		}
		switch fd.Kind {
		case kindText:
			args[fd.Name] = str(v)
		case kindNumber, kindInteger, kindEnum:
			var n any
			if json.Unmarshal([]byte(v), &n) == nil && (fd.Kind == kindEnum || isNumber(n)) {
				args[fd.Name] = json.RawMessage(v)
			} else {
				args[fd.Name] = str(v)
			}
		case kindBoolean:
			args[fd.Name] = json.RawMessage(map[bool]string{true: "true", false: "false"}[v == "true"])
		default:
			if !json.Valid([]byte(v)) {
				bad = append(bad, fmt.Sprintf("%s: not JSON (type an array as [\"a\", \"b\"], an object as {\"k\": 1})", fd.Name))
				continue
			}
			args[fd.Name] = json.RawMessage(strings.TrimSpace(v))
		}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, append(bad, err.Error())
	}
	return b, bad
}

func isNumber(v any) bool {
	_, ok := v.(float64)
	return ok
}
