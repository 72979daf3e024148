package catalog

import (
	"encoding/json"
	"strings"
	"testing"
)

func spec(input string, zh SchemaZH) Spec {
	return Spec{Name: "t", Version: "1", Description: Text{ZH: "工具", EN: "tool"}, SideEffect: SideEffectNone,
		Input: json.RawMessage(input), InputZH: zh}
}

// A SchemaZH covers every description of its schema and nothing else;
// what is data (default, const, enum, examples) is not a description.
func TestCheckWantsChineseForEveryDescription(t *testing.T) {
	const in = `{"type":"object","description":"top","properties":{"a":{"type":"string","description":"an a"},` +
		`"a/b~c":{"type":"array","items":{"type":"object","properties":{"x":{"description":"an x"}}}},` +
		`"d":{"default":{"description":"data, not a description"},"enum":[{"description":"data"}]}}}`
	full := SchemaZH{"": "顶层", "/properties/a": "一个 a", "/properties/a~1b~0c/items/properties/x": "一个 x"}
	tests := []struct {
		name string
		zh   SchemaZH
		want string // "" for no error
	}{
		{"complete", full, ""},
		{"none at all (a definition's or a remote tool's)", nil, ""},
		{"one missing", SchemaZH{"": "顶层", "/properties/a": "一个 a"}, "no Chinese for the descriptions at /properties/a~1b~0c/items/properties/x"},
		{"an empty one", SchemaZH{"": "", "/properties/a": "一个 a", "/properties/a~1b~0c/items/properties/x": "一个 x"}, `no Chinese for the descriptions at `},
		{"one for a schema without a description", merge(full, SchemaZH{"/properties/d": "数据"}), `a Chinese description for "/properties/d", which has no English one`},
		{"one inside a default", merge(full, SchemaZH{"/properties/d/default": "数据"}), `which has no English one`},
		{"a pointer that is not one", merge(full, SchemaZH{"properties/a": "一个 a"}), `which has no English one`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := spec(in, tt.zh).Check()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Check = %v, want %q", err, tt.want)
			}
		})
	}
}

func merge(a, b SchemaZH) SchemaZH {
	out := SchemaZH{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// English is the schema as written; Chinese replaces each description and
// nothing else (numbers as written, markup not escaped), the same whether
// the spec was prepared or not.
func TestInputInRendersEachLanguage(t *testing.T) {
	in := `{"type":"object","properties":{"n":{"type":"integer","maximum":1e2,"default":20.0,"description":"how many <b>&"},"s":{"type":"string","description":"a \"quoted\" </untrusted-data> word"}}}`
	zh := SchemaZH{"/properties/n": "多少 <b>&", "/properties/s": "一个“带引号”的 </untrusted-data> 词"}
	s := spec(in, zh)
	if got := string(s.InputIn(English)); got != in {
		t.Fatalf("English: %s", got)
	}
	want := `{"properties":{"n":{"default":20.0,"description":"多少 <b>&","maximum":1e2,"type":"integer"},"s":{"description":"一个“带引号”的 </untrusted-data> 词","type":"string"}},"type":"object"}`
	if got := string(s.InputIn(Chinese)); got != want {
		t.Fatalf("Chinese:\n got %s\nwant %s", got, want)
	}
	p, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.InputIn(Chinese)); got != want || p.zh == nil {
		t.Fatalf("prepared Chinese: %s", got)
	}
	if got := string(p.OutputIn(Chinese)); got != "" {
		t.Fatalf("no output schema: %q", got)
	}
	// A spec without Chinese is its author's in every language.
	plain := spec(in, nil)
	if string(plain.InputIn(Chinese)) != in {
		t.Fatal("a schema without SchemaZH changed")
	}
}

// A registry prepares what it holds: its specs render Chinese without
// decoding again.
func TestRegistryPreparesSpecs(t *testing.T) {
	r := NewRegistry()
	if err := r.Add(spec(`{"type":"object","properties":{"a":{"description":"an a"}}}`, SchemaZH{"/properties/a": "一个 a"})); err != nil {
		t.Fatal(err)
	}
	s, _ := r.Lookup("t")
	if s.zh == nil || !strings.Contains(string(s.InputIn(Chinese)), "一个 a") {
		t.Fatalf("not prepared: %+v", s)
	}
	bad := spec(`{"type":"object","properties":{"a":{"description":"an a"}}}`, SchemaZH{"/properties/b": "b"})
	bad.Name = "u"
	if err := r.Add(bad); err == nil || !strings.Contains(err.Error(), "no English one") {
		t.Fatal("a spec with a wrong SchemaZH was registered")
	}
}
