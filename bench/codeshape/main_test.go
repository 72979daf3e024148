package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A package of one file and its test: the test's functions and maps do
// not count, a method is named with its receiver, interface{} is any, and
// a file over the limit is reported; testdata and third_party are not
// measured.
func TestMeasuresFilesFunctionsAndOpenMaps(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "encoding/json"

type T struct{ m map[string]any }

// Long is five lines.
func (t *T) Long() {
	_ = map[string]interface{}{}
	_ = map[string]json.RawMessage{}
	_ = map[int]any{}
}

func short() {}
`
	test := `package p

func TestX() { _ = map[string]any{} }
`
	write(t, filepath.Join(dir, "p.go"), src)
	write(t, filepath.Join(dir, "p_test.go"), test)
	write(t, filepath.Join(dir, "testdata", "skipped.go"), "package skipped\n\nfunc Huge() {\n}\n")
	write(t, filepath.Join(dir, "third_party", "lib", "lib.go"), "package lib\n\nfunc Huge() {\n}\n")

	s, err := measure([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.files) != 1 || s.files[0].lines != 14 {
		t.Fatalf("files = %+v, want p.go with 14 lines", s.files)
	}
	if len(s.funcs) != 2 || s.funcs[0].name != "T.Long" || s.funcs[0].lines != 5 || s.funcs[1].lines != 1 {
		t.Fatalf("funcs = %+v, want T.Long (5 lines) and short (1)", s.funcs)
	}
	pm := s.maps[dir]
	if pm == nil || pm.anyMaps != 2 || pm.rawMaps != 1 {
		t.Fatalf("maps = %+v, want 2 map[string]any and 1 map[string]json.RawMessage", pm)
	}

	var out bytes.Buffer
	if over := s.report(&out, 10, 4, 10, 20); over != 2 {
		t.Errorf("over = %d, want 2 (the file over 10 lines, T.Long over 4)\n%s", over, out.String())
	}
	if !strings.Contains(out.String(), "1 non-test files, 1 over 10 lines; 2 functions, 1 over 4 lines") {
		t.Errorf("report does not start with the counts:\n%s", out.String())
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
