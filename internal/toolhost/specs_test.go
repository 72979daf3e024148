package toolhost

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestToolSpecsMatchGolden snapshots every published tool's contract:
// schemas, annotations, side-effect level, replay safety, paid unit and both
// languages' text. A change to any of them fails here until the golden is
// refreshed on purpose with `go test ./internal/toolhost -run TestToolSpecs -update`.
func TestToolSpecsMatchGolden(t *testing.T) {
	o := &Options{Data: t.TempDir(), TestTools: true, Config: config.Default()}
	kit, err := toolset(o, slog.New(slog.DiscardHandler), toolsetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.close()
	var buf bytes.Buffer
	for _, tl := range kit.tools {
		spec := tl.Spec()
		// Re-indent the raw schemas so the golden diff is readable.
		var in, out any
		if err := json.Unmarshal(spec.Input, &in); err != nil {
			t.Fatalf("%s input schema: %v", spec.Name, err)
		}
		if len(spec.Output) > 0 {
			if err := json.Unmarshal(spec.Output, &out); err != nil {
				t.Fatalf("%s output schema: %v", spec.Name, err)
			}
		}
		// Every description inside the schemas is in both languages:
		// Check refuses a partial SchemaZH, this a missing one.
		if err := spec.Check(); err != nil {
			t.Fatal(err)
		}
		for _, sc := range []struct {
			name   string
			schema json.RawMessage
			zh     catalog.SchemaZH
		}{{"input", spec.Input, spec.InputZH}, {"output", spec.Output, spec.OutputZH}} {
			if bytes.Contains(sc.schema, []byte(`"description"`)) && len(sc.zh) == 0 {
				t.Errorf("%s: the %s schema's descriptions have no Chinese (catalog.SchemaZH)", spec.Name, sc.name)
			}
		}
		var inZH, outZH any
		if err := json.Unmarshal(spec.InputIn(catalog.Chinese), &inZH); err != nil {
			t.Fatalf("%s Chinese input schema: %v", spec.Name, err)
		}
		if len(spec.Output) > 0 {
			if err := json.Unmarshal(spec.OutputIn(catalog.Chinese), &outZH); err != nil {
				t.Fatalf("%s Chinese output schema: %v", spec.Name, err)
			}
		}
		b, err := json.MarshalIndent(map[string]any{
			"name": spec.Name, "version": spec.Version, "title": spec.Title,
			"description": spec.Description, "input_schema": in, "output_schema": out,
			"input_schema_zh": inZH, "output_schema_zh": outZH,
			"annotations": spec.Annotations, "side_effect_level": spec.SideEffect,
			"replay_safe": spec.ReplaySafe, "paid_unit": spec.PaidUnit,
		}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteString("\n")
	}
	golden := filepath.Join("testdata", "tool-specs.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Fatalf("tool specs changed; if on purpose, run: go test ./internal/toolhost -run TestToolSpecs -update\n--- got ---\n%s", buf.String())
	}
}
