package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/wire"
)

// DeepArgs are the arguments of the hostile tool deep.
type DeepArgs struct {
	// Levels is how deeply the value nests.
	Levels int `json:"levels"`
	// Array makes the value an array (toolhost wraps a structuredContent
	// that is not an object, one level more); else an object.
	Array bool `json:"array,omitempty"`
	// Error makes the result isError.
	Error bool `json:"error,omitempty"`
	// InContent puts the value in the _meta of the text content instead
	// of in structuredContent.
	InContent bool `json:"in_content,omitempty"`
}

// Nested is JSON text nesting levels deep: [[…]] or {"v":{"v":{}}}.
func Nested(levels int, array bool) json.RawMessage {
	if array {
		return json.RawMessage(strings.Repeat("[", levels) + strings.Repeat("]", levels))
	}
	if levels == 0 {
		return json.RawMessage(`0`)
	}
	return json.RawMessage(strings.Repeat(`{"v":`, levels-1) + "{}" + strings.Repeat("}", levels-1))
}

// Nesting is how deeply v, as encoding/json decodes it, nests arrays and
// objects: the inverse of Nested, for checking what arrived.
func Nesting(v any) int {
	deepest := 0
	switch x := v.(type) {
	case []any:
		for _, m := range x {
			deepest = max(deepest, Nesting(m))
		}
		return deepest + 1
	case wire.Object:
		for _, m := range x {
			deepest = max(deepest, Nesting(m))
		}
		return deepest + 1
	}
	return 0
}

// NestingOf is Nesting of the JSON text b, or -1 when b is not JSON.
func NestingOf(b []byte) int {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return -1
	}
	return Nesting(v)
}

// addDeep adds deep, which answers a value as deeply nested as asked (up
// to 9000 levels: the SDK encodes with encoding/json, which stops at
// 10 000):
// the go-sdk client refuses a message nested more than 1000 levels deep,
// and a value that arrives whole may still be too deep once relayed.
func (s *Server) addDeep(ro *sdk.ToolAnnotations) {
	schema := obj(`"levels":{"type":"integer","minimum":1,"maximum":9000},"array":{"type":"boolean"},"error":{"type":"boolean"},"in_content":{"type":"boolean"}`, "levels")
	s.srv.AddTool(&sdk.Tool{Name: "deep", Description: "Answers a deeply nested value.", InputSchema: schema, Annotations: ro},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.count("deep")
			var a DeepArgs
			_ = json.Unmarshal(req.Params.Arguments, &a)
			v := Nested(a.Levels, a.Array)
			res := &sdk.CallToolResult{IsError: a.Error, Content: []sdk.Content{&sdk.TextContent{Text: "deep"}}}
			if a.InContent {
				res.Content = []sdk.Content{&sdk.TextContent{Text: "deep", Meta: sdk.Meta{"v": v}}}
			} else {
				res.StructuredContent = v
			}
			return res, nil
		})
}

// DeepSchema is an input schema whose property x nests objects levels
// schema levels deep (two JSON levels each: the schema and its
// properties).
func DeepSchema(levels int) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"x":` + strings.Repeat(`{"type":"object","properties":{"x":`, levels-1) +
		`{"type":"string"}` + strings.Repeat(`}}`, levels-1) + `},"required":["x"]}`)
}

// HugeSchema is an input schema of n string properties p00000…, each
// with a description of about 40 bytes.
func HugeSchema(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","additionalProperties":false,"required":["p00000"],"properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%05d":{"type":"string","description":"parameter number %d of a huge schema"}`, i, i)
	}
	b.WriteString("}}")
	return json.RawMessage(b.String())
}

// CyclicSchema has $refs that only point at each other (a → b → a) and
// a recursive tree (node → children → node); its top-level properties
// name both.
const CyclicSchema = `{"type":"object","$defs":{` +
	`"a":{"$ref":"#/$defs/b","description":"a loop"},"b":{"$ref":"#/$defs/a"},` +
	`"node":{"type":"object","description":"a tree node","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},` +
	`"properties":{"loop":{"$ref":"#/$defs/a"},"tree":{"$ref":"#/$defs/node"},"name":{"type":"string","enum":["x","y"],"description":"a name"}},` +
	`"required":["name","tree","missing"],"additionalProperties":false}`

// AddHostileSchemas adds tools whose input schemas no client should take
// whole: deepschema (nested 490 schema levels, 980 JSON levels: within
// what a Go MCP client reads of the listing), hugeschema (20 000
// properties, about 1.2 MB) and cyclic (CyclicSchema). A call of any
// answers its arguments.
func (s *Server) AddHostileSchemas() {
	for name, schema := range map[string]json.RawMessage{"deepschema": DeepSchema(490), "hugeschema": HugeSchema(20000),
		"cyclic": json.RawMessage(CyclicSchema)} {
		s.srv.AddTool(&sdk.Tool{Name: name, Description: "A hostile input schema.", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				s.count(name)
				return text("took " + string(req.Params.Arguments)), nil
			})
	}
}
