package mcpremote

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/tools"
)

// A remote tool's input schema is offered (tools/list, the hosted /v1
// definitions, the runtime catalog) and validated against as the server
// listed it, unless it is one no client should have to take whole:
//
//   - over maxSchemaBytes of JSON,
//   - nested more than maxSchemaDepth levels (objects and arrays), or
//   - holding a $ref cycle: a local $ref whose target reaches itself again
//     through the $refs inside it (a recursive schema, or $refs that only
//     point at each other). Clients and model SDKs that inline references
//     follow such a schema forever.
//
// Such a schema is replaced by its shallow projection (parameter_schema
// basis shallow_schema_projection, scope projection): an object whose
// top-level properties keep, each, only what one level says (after
// following local $refs that reach no cycle, at most maxRefHops): type,
// title, description (at most maxProjectedText bytes), format, enum and
// const of plain values (enum at most maxProjectedEnum of them), a plain
// default, and the numeric, length and pattern bounds. What is below a
// property (its properties, items, $defs, combinators) is dropped, so a
// nested object or array accepts any content there; the server still
// validates its own arguments. required keeps the properties that are
// kept; properties past maxProjectedProperties or the size budget
// (sorted by name) are dropped, and additionalProperties then allows them
// (it is kept only when every property is). A schema that is not an
// object at the top projects to {"type":"object"}.
const (
	maxSchemaBytes         = 64 << 10
	maxSchemaDepth         = 32
	maxRefHops             = 8
	maxProjectedProperties = 256
	maxProjectedText       = 1024
	maxProjectedEnum       = 64
	// maxRefPairs bounds the work of finding cycles (targets × $refs); a
	// schema with more is projected without looking further.
	maxRefPairs = 1 << 20
)

// offeredSchema is the input schema toolhost offers for a listed one and
// its basis.
func offeredSchema(listed []byte) (json.RawMessage, string) {
	if len(listed) <= maxSchemaBytes && jsonDepth(listed) <= maxSchemaDepth {
		// Most schemas have no $ref: they are not decoded again here
		// (every listing builds its tools).
		if !bytes.Contains(listed, []byte(`"$ref"`)) {
			return listed, tools.BasisDeclared
		}
		var doc any
		if json.Unmarshal(listed, &doc) == nil && !hasRefCycle(doc) {
			return listed, tools.BasisDeclared
		}
	}
	return project(listed), tools.BasisShallowProjection
}

// jsonDepth is the deepest nesting of objects and arrays in b (a byte
// scan: no decoding, so a hostile depth costs nothing but the loop).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escape := false, false
	for _, c := range b {
		switch {
		case escape:
			escape = false
		case inString:
			switch c {
			case '\\':
				escape = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// ref is one $ref of a schema: where it is and the local target it names
// (a JSON Pointer, "" for the root), ok false for a target outside.
type ref struct {
	at     []string
	target []string
	ok     bool
}

// refs collects the $refs of v below path. The walk is as deep as the
// schema, which the transport keeps within maxMessageDepth.
func refs(v any, path []string, out *[]ref) {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x["$ref"].(string); ok {
			t, ok := pointer(s)
			*out = append(*out, ref{at: slices.Clone(path), target: t, ok: ok})
		}
		for k, m := range x {
			refs(m, append(path, k), out)
		}
	case []any:
		for i, m := range x {
			refs(m, append(path, strconv.Itoa(i)), out)
		}
	}
}

// pointer parses a local reference "#", "#/a/b~1c" into its segments.
func pointer(s string) ([]string, bool) {
	if s == "#" {
		return []string{}, true
	}
	if !strings.HasPrefix(s, "#/") {
		return nil, false
	}
	segs := strings.Split(s[2:], "/")
	for i, p := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return segs, true
}

func within(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// hasRefCycle reports whether a local $ref's target reaches itself again:
// a $ref inside the target pointing at it or at an ancestor, or targets
// whose $refs lead from one to the other and back.
func hasRefCycle(doc any) bool {
	var rs []ref
	refs(doc, nil, &rs)
	if len(rs) == 0 {
		return false
	}
	targets := map[string][]string{}
	for _, r := range rs {
		if !r.ok {
			continue
		}
		if within(r.at, r.target) {
			return true // inside its own target: recursion
		}
		targets[strings.Join(r.target, "/")] = r.target
	}
	if len(targets)*len(rs) > maxRefPairs {
		return true
	}
	// edges[p] are the targets of the $refs inside target p.
	edges := map[string][]string{}
	for key, t := range targets {
		for _, r := range rs {
			if r.ok && within(r.at, t) {
				edges[key] = append(edges[key], strings.Join(r.target, "/"))
			}
		}
	}
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(string) bool
	visit = func(k string) bool {
		state[k] = active
		for _, n := range edges[k] {
			if state[n] == active || state[n] == unseen && visit(n) {
				return true
			}
		}
		state[k] = done
		return false
	}
	keys := make([]string, 0, len(targets))
	for k := range targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if state[k] == unseen && visit(k) {
			return true
		}
	}
	return false
}

// project is the shallow projection of a listed schema (see above).
func project(listed []byte) json.RawMessage {
	var root map[string]any
	out := map[string]any{"type": "object"}
	if json.Unmarshal(listed, &root) != nil {
		b, _ := json.Marshal(out)
		return b
	}
	for _, k := range []string{"title", "description"} {
		if s, ok := root[k].(string); ok {
			out[k] = clipText(s)
		}
	}
	props, _ := root["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	kept := map[string]any{}
	budget := maxSchemaBytes / 2
	for _, n := range names {
		if len(kept) == maxProjectedProperties {
			break
		}
		p := shallow(props[n], root)
		b, _ := json.Marshal(p)
		if budget -= len(b) + len(n) + 4; budget < 0 {
			break
		}
		kept[n] = p
	}
	out["properties"] = kept
	var required []string
	if req, ok := root["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok && kept[s] != nil && !slices.Contains(required, s) {
				required = append(required, s)
			}
		}
	}
	if required != nil {
		out["required"] = required
	}
	if ap, ok := root["additionalProperties"].(bool); ok && len(kept) == len(names) {
		out["additionalProperties"] = ap
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// shallow is one property's schema reduced to what its own level says.
func shallow(p any, root map[string]any) any {
	if b, ok := p.(bool); ok {
		return b
	}
	m, ok := p.(map[string]any)
	if !ok {
		return map[string]any{}
	}
	out := map[string]any{}
	// The referring schema's own words win over its target's.
	for _, k := range []string{"title", "description"} {
		if s, ok := m[k].(string); ok {
			out[k] = clipText(s)
		}
	}
	for hops := 0; hops < maxRefHops; hops++ {
		s, ok := m["$ref"].(string)
		if !ok {
			break
		}
		t, _ := resolve(root, s)
		if t == nil {
			return out // a target outside or missing: anything
		}
		m = t
		for _, k := range []string{"title", "description"} {
			if s, ok := m[k].(string); ok && out[k] == nil {
				out[k] = clipText(s)
			}
		}
	}
	if _, stillRef := m["$ref"]; stillRef {
		return out
	}
	switch t := m["type"].(type) {
	case string:
		out["type"] = t
	case []any:
		if plain(t) {
			out["type"] = t
		}
	}
	if s, ok := m["format"].(string); ok {
		out["format"] = clipText(s)
	}
	if e, ok := m["enum"].([]any); ok && len(e) <= maxProjectedEnum && plain(e) {
		out["enum"] = e
	}
	for _, k := range []string{"const", "default"} {
		if v, ok := m[k]; ok && plain([]any{v}) {
			out[k] = v
		}
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"minLength", "maxLength", "minItems", "maxItems"} {
		if v, ok := m[k].(float64); ok {
			out[k] = v
		}
	}
	if s, ok := m["pattern"].(string); ok && len(s) <= maxProjectedText {
		out["pattern"] = s
	}
	return out
}

// resolve follows a local reference in root; nil when it names nothing.
func resolve(root map[string]any, s string) (map[string]any, bool) {
	segs, ok := pointer(s)
	if !ok {
		return nil, false
	}
	var cur any = root
	for _, seg := range segs {
		switch x := cur.(type) {
		case map[string]any:
			cur = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// plain reports whether every value is a string, number, bool or null
// (short strings only).
func plain(vs []any) bool {
	for _, v := range vs {
		switch x := v.(type) {
		case nil, bool, float64:
		case string:
			if len(x) > maxProjectedText {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// clipText cuts s to maxProjectedText bytes on a rune boundary.
func clipText(s string) string {
	if len(s) <= maxProjectedText {
		return s
	}
	cut := maxProjectedText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
