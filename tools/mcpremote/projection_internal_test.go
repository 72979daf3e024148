package mcpremote

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// A schema any client can take whole is offered as listed, byte for
// byte; one over the bounds, or with a $ref cycle, is offered as its
// shallow projection, and the projection is itself within every bound.
func TestOfferedSchemaProjectsOnlyWhatNoClientShouldTakeWhole(t *testing.T) {
	deepJSON := strings.Repeat(`{"a":`, maxSchemaDepth) + `1` + strings.Repeat(`}`, maxSchemaDepth)
	tests := []struct {
		name   string
		listed string
		basis  string
	}{
		{"plain", `{"type":"object","properties":{"q":{"type":"string","description":"the query"}},"required":["q"]}`, tools.BasisDeclared},
		{"a $ref without a cycle", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"q":{"$ref":"#/$defs/s"}}}`, tools.BasisDeclared},
		{"a $ref outside (left to the compiler to refuse)", `{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}`, tools.BasisDeclared},
		{"\"$ref\" only inside a string", `{"type":"object","properties":{"q":{"type":"string","description":"\"$ref\": \"#\""}}}`, tools.BasisDeclared},
		{"nested to the depth bound", `{"type":"object","properties":{"x":{"default":` + strings.Repeat(`[`, maxSchemaDepth-4) + strings.Repeat(`]`, maxSchemaDepth-4) + `}}}`, tools.BasisDeclared},
		{"nested past the depth bound", `{"type":"object","properties":{"x":{"default":` + deepJSON + `}}}`, tools.BasisShallowProjection},
		{"1000 deep", string(testserver.DeepSchema(500)), tools.BasisShallowProjection},
		{"huge", string(testserver.HugeSchema(20000)), tools.BasisShallowProjection},
		{"refs pointing at each other", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, tools.BasisShallowProjection},
		{"a ref to itself", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, tools.BasisShallowProjection},
		{"a ref to the root", `{"type":"object","properties":{"self":{"$ref":"#"}}}`, tools.BasisShallowProjection},
		{"a recursive tree", `{"type":"object","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`, tools.BasisShallowProjection},
		{"a three-step cycle through escaped pointers", `{"type":"object","$defs":{"a/b":{"$ref":"#/$defs/c~0d"},"c~d":{"properties":{"x":{"$ref":"#/$defs/e"}}},"e":{"items":[{"$ref":"#/$defs/a~1b"}]}},"properties":{"x":{"$ref":"#/$defs/e"}}}`, tools.BasisShallowProjection},
		{"the cycle test server's schema", testserver.CyclicSchema, tools.BasisShallowProjection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, basis := offeredSchema([]byte(tt.listed))
			if basis != tt.basis {
				t.Fatalf("basis %s, want %s", basis, tt.basis)
			}
			if basis == tools.BasisDeclared {
				if string(got) != tt.listed {
					t.Fatalf("a schema within the bounds changed:\n got %s\nwant %s", got, tt.listed)
				}
				return
			}
			if len(got) > maxSchemaBytes || jsonDepth(got) > 4 || bytes.Contains(got, []byte(`"$ref"`)) {
				t.Fatalf("the projection is not shallow (%d bytes, depth %d): %.300s", len(got), jsonDepth(got), got)
			}
			if again, b := offeredSchema(got); b != tools.BasisDeclared || !bytes.Equal(again, got) {
				t.Fatalf("the projection is projected again: %s", again)
			}
			if err := tools.CheckSchema("projection", got); err != nil {
				t.Fatalf("the projection does not compile: %v", err)
			}
		})
	}
}

// The projection of the cycle test server's schema, the contract of what
// a projection keeps.
func TestShallowProjectionGolden(t *testing.T) {
	got := project([]byte(testserver.CyclicSchema))
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", "projection_cyclic.golden")
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Fatalf("projection changed; if on purpose run go test ./tools/mcpremote -run TestShallowProjectionGolden -update\n%s", pretty.Bytes())
	}
}

// The huge schema keeps the first properties by name up to the budget,
// required among them, and allows the rest.
func TestProjectionOfAHugeSchemaAllowsWhatItDrops(t *testing.T) {
	var p struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(project(testserver.HugeSchema(20000)), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Properties) != maxProjectedProperties || p.Properties["p00000"] == nil || p.Properties["p00255"] == nil ||
		len(p.Required) != 1 || p.AdditionalProperties != nil {
		t.Fatalf("%d properties, required %v, additionalProperties %v", len(p.Properties), p.Required, p.AdditionalProperties)
	}
}

func FuzzOfferedSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, testserver.CyclicSchema, `{"properties":{"a":{"$ref":"#/x/0/y"}},"x":[{"y":{"$ref":"#"}}]}`,
		`{"properties":{"a":{"$ref":"#/properties/a"}}}`, `[1,2]`, `{"properties":[]}`, `{"required":[1,"a","a"],"properties":{"a":true}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, basis := offeredSchema(b)
		if basis == tools.BasisShallowProjection && (len(got) > maxSchemaBytes || jsonDepth(got) > 4 || !json.Valid(got)) {
			t.Fatalf("projection of %q: %s", b, got)
		}
	})
}
