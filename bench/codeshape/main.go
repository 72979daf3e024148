// Command codeshape measures the shape of the code the issue-17 targets
// speak of: the line count of every non-test .go file, the line count of
// every function and method (from its func keyword to its closing brace),
// and per package the number of map[string]any and
// map[string]json.RawMessage type expressions (interface{} spelt out
// counts as any). It prints the files and functions over the limits, the
// largest files, the longest functions and the map counts, and exits 1
// when a file or a function is over its limit and -check is given.
//
//	go run ./bench/codeshape
//	go run ./bench/codeshape -check -files 600 -funcs 100 ./journal ./sandbox
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fileShape is one non-test Go file.
type fileShape struct {
	path  string
	lines int
}

// funcShape is one function or method.
type funcShape struct {
	path  string
	line  int
	name  string
	lines int
}

// pkgMaps counts the open-map type expressions of one package folder.
type pkgMaps struct {
	dir      string
	anyMaps  int
	rawMaps  int
	testOnly bool
}

// shape is everything measured under the roots.
type shape struct {
	files []fileShape
	funcs []funcShape
	maps  map[string]*pkgMaps
}

func main() {
	maxFile := flag.Int("files", 600, "the most lines a non-test file may have")
	maxFunc := flag.Int("funcs", 100, "the most lines a function may have")
	top := flag.Int("top", 10, "how many of the largest files to list")
	topFuncs := flag.Int("top-funcs", 20, "how many of the longest functions to list")
	check := flag.Bool("check", false, "exit 1 when a file or function is over its limit")
	flag.Parse()
	roots := flag.Args()
	if len(roots) == 0 {
		roots = []string{"."}
	}
	s, err := measure(roots)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codeshape:", err)
		os.Exit(2)
	}
	over := s.report(os.Stdout, *maxFile, *maxFunc, *top, *topFuncs)
	if *check && over > 0 {
		os.Exit(1)
	}
}

// measure walks the roots and parses every .go file below them, leaving
// out folders git or Go would ignore (testdata, node_modules, dot and
// underscore folders) and code kept as its authors wrote it (vendor,
// third_party).
func measure(roots []string) (*shape, error) {
	s := &shape{maps: map[string]*pkgMaps{}}
	fset := token.NewFileSet()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			return s.addFile(fset, path)
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", root, err)
		}
	}
	return s, nil
}

func skipDir(name string) bool {
	return name == "testdata" || name == "node_modules" || name == "vendor" || name == "third_party" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// addFile measures one file: tests count for the maps (as test-only) but
// not for file and function sizes, which the targets set for code that
// ships.
func (s *shape) addFile(fset *token.FileSet, path string) error {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	isTest := strings.HasSuffix(path, "_test.go")
	dir := filepath.Dir(path)
	pm := s.maps[dir]
	if pm == nil {
		pm = &pkgMaps{dir: dir, testOnly: true}
		s.maps[dir] = pm
	}
	if !isTest {
		pm.testOnly = false
		s.files = append(s.files, fileShape{path: path, lines: fset.File(f.Pos()).LineCount()})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.MapType:
			if isTest || !isString(n.Key) {
				return true
			}
			switch {
			case isAny(n.Value):
				pm.anyMaps++
			case isSelector(n.Value, "json", "RawMessage"):
				pm.rawMaps++
			}
		case *ast.FuncDecl:
			if !isTest && n.Body != nil {
				s.funcs = append(s.funcs, funcShape{
					path:  path,
					line:  fset.Position(n.Pos()).Line,
					name:  funcName(n),
					lines: fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1,
				})
			}
		}
		return true
	})
	return nil
}

func isString(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "string"
}

func isAny(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "any"
	case *ast.InterfaceType:
		return len(e.Methods.List) == 0
	}
	return false
}

func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == name
}

// funcName names a method with its receiver type, as go doc does.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// report prints the figures and returns how many files and functions are
// over their limits.
func (s *shape) report(w io.Writer, maxFile, maxFunc, top, topFuncs int) int {
	sort.Slice(s.files, func(i, j int) bool {
		if s.files[i].lines != s.files[j].lines {
			return s.files[i].lines > s.files[j].lines
		}
		return s.files[i].path < s.files[j].path
	})
	sort.Slice(s.funcs, func(i, j int) bool {
		if s.funcs[i].lines != s.funcs[j].lines {
			return s.funcs[i].lines > s.funcs[j].lines
		}
		return s.funcs[i].path < s.funcs[j].path
	})
	overFiles, overFuncs := 0, 0
	for _, f := range s.files {
		if f.lines > maxFile {
			overFiles++
		}
	}
	for _, f := range s.funcs {
		if f.lines > maxFunc {
			overFuncs++
		}
	}
	fmt.Fprintf(w, "%d non-test files, %d over %d lines; %d functions, %d over %d lines\n",
		len(s.files), overFiles, maxFile, len(s.funcs), overFuncs, maxFunc)

	fmt.Fprintf(w, "\nlargest files (and every one over %d):\n", maxFile)
	for i, f := range s.files {
		if i >= top && f.lines <= maxFile {
			break
		}
		fmt.Fprintf(w, "%6d  %s\n", f.lines, f.path)
	}
	fmt.Fprintf(w, "\nlongest functions (and every one over %d):\n", maxFunc)
	for i, f := range s.funcs {
		if i >= topFuncs && f.lines <= maxFunc {
			break
		}
		fmt.Fprintf(w, "%6d  %s:%d %s\n", f.lines, f.path, f.line, f.name)
	}

	dirs := make([]*pkgMaps, 0, len(s.maps))
	anyTotal, rawTotal := 0, 0
	for _, pm := range s.maps {
		anyTotal += pm.anyMaps
		rawTotal += pm.rawMaps
		if pm.anyMaps+pm.rawMaps > 0 {
			dirs = append(dirs, pm)
		}
	}
	sort.Slice(dirs, func(i, j int) bool {
		a, b := dirs[i], dirs[j]
		if a.anyMaps+a.rawMaps != b.anyMaps+b.rawMaps {
			return a.anyMaps+a.rawMaps > b.anyMaps+b.rawMaps
		}
		return a.dir < b.dir
	})
	fmt.Fprintf(w, "\nmap[string]any / map[string]json.RawMessage in non-test code: %d / %d\n", anyTotal, rawTotal)
	for _, pm := range dirs {
		fmt.Fprintf(w, "%6d %6d  %s\n", pm.anyMaps, pm.rawMaps, pm.dir)
	}
	return overFiles + overFuncs
}
