package tools_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/session"
)

// The session builtins describe their parameters in both languages, as
// every builtin does (internal/toolhost's spec golden covers the others).
func TestSessionBuiltinsDescribeTheirParametersInBothLanguages(t *testing.T) {
	ex, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Variables: session.NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	specs := ex.SessionSpecs()
	if len(specs) != len(tools.SessionToolNames) {
		t.Fatalf("%d session builtins", len(specs))
	}
	for _, s := range specs {
		if bytes.Contains(s.Input, []byte(`"description"`)) && len(s.InputZH) == 0 {
			t.Errorf("%s: no Chinese for its parameters", s.Name)
		}
		zh := string(s.InputIn(catalog.Chinese))
		for p, text := range s.InputZH {
			if !strings.Contains(zh, text) {
				t.Errorf("%s: %s is not in Chinese: %s", s.Name, p, zh)
			}
		}
	}
}
