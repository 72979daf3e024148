package v1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The wire structs of this package write their fields in declaration
// order, and the golden files pin the bytes a map gave before: keys in
// sorted order. So every struct type with json tags declares its fields
// sorted by JSON name (a struct encoded through wire.Marshal is sorted
// anyway; keeping all of them sorted keeps the rule simple).
func TestWireStructFieldsAreInMapOrder(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			var names []string
			for _, fld := range st.Fields.List {
				if fld.Tag == nil {
					continue
				}
				tag, _ := strconv.Unquote(fld.Tag.Value)
				jn, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
				if jn != "" && jn != "-" {
					names = append(names, jn)
				}
			}
			if len(names) == 0 {
				return true
			}
			checked++
			if !slices.IsSorted(names) {
				t.Errorf("%s: %s declares its JSON fields %v, not in sorted order", fset.Position(ts.Pos()), ts.Name.Name, names)
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d wire structs; the package has more", checked)
	}
}
