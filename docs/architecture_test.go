package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The layering of the module is the "Package layout" table of
// docs/architecture.md: its first column names a folder (a row covers that
// folder and every folder below it that has no row of its own), its last
// column the rows it may import, as `path` in backticks, "everything" for a
// command at the top, or "—" for none. TestArchitecture reads that table and
// checks every package of the module against it with `go list -deps`, so the
// page and the code cannot drift apart: a new package needs a row (or falls
// under its folder's), a new import needs the table to allow it.

const architecturePage = "architecture.md"

// layer is one row of the table.
type layer struct {
	path       string // module-relative folder, no trailing slash
	everything bool   // may import any row
	mayImport  []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// parseLayers reads the rows of the "Package layout" table.
func parseLayers(r io.Reader) ([]layer, error) {
	var (
		layers  []layer
		inTable bool
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inTable = strings.TrimSpace(line) == "## Package layout"
			continue
		}
		if !inTable || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) < 3 {
			return nil, fmt.Errorf("row %q: want | path | what | may import |", line)
		}
		first := backticked.FindStringSubmatch(cells[0])
		if first == nil {
			return nil, fmt.Errorf("row %q: no `path` in the first column", line)
		}
		l := layer{path: strings.TrimSuffix(first[1], "/")}
		last := strings.TrimSpace(cells[len(cells)-1])
		switch {
		case strings.HasPrefix(last, "everything"):
			l.everything = true
		case last == "—" || last == "":
		default:
			for _, m := range backticked.FindAllStringSubmatch(last, -1) {
				l.mayImport = append(l.mayImport, strings.TrimSuffix(m[1], "/"))
			}
			if len(l.mayImport) == 0 {
				return nil, fmt.Errorf("row %s: may-import column %q names no `path` (use — for none)", l.path, last)
			}
		}
		layers = append(layers, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, errors.New("no rows found under \"## Package layout\"")
	}
	return layers, nil
}

// rowOf returns the row covering a module-relative package path: the
// longest row path that is the package or one of its parent folders.
func rowOf(layers []layer, pkg string) (layer, bool) {
	best, found := layer{}, false
	for _, l := range layers {
		if (pkg == l.path || strings.HasPrefix(pkg, l.path+"/")) && (!found || len(l.path) > len(best.path)) {
			best, found = l, true
		}
	}
	return best, found
}

// allowedRows is the closure of a row's may-import column: the rows whose
// packages may appear anywhere in its dependencies.
func allowedRows(layers []layer, from layer) map[string]bool {
	byPath := map[string]layer{}
	for _, l := range layers {
		byPath[l.path] = l
	}
	seen := map[string]bool{}
	var walk func(l layer)
	walk = func(l layer) {
		next := l.mayImport
		if l.everything {
			next = nil
			for _, o := range layers {
				next = append(next, o.path)
			}
		}
		for _, p := range next {
			if !seen[p] {
				seen[p] = true
				walk(byPath[p])
			}
		}
	}
	walk(from)
	return seen
}

// checkLayers reports every package whose dependencies the table does not
// allow, every package no row covers, and every cycle among the rows.
func checkLayers(layers []layer, module string, deps map[string][]string) []string {
	var problems []string
	known := map[string]bool{}
	for _, l := range layers {
		known[l.path] = true
	}
	for _, l := range layers {
		for _, p := range l.mayImport {
			if !known[p] {
				problems = append(problems, fmt.Sprintf("row %s may import `%s`, which has no row", l.path, p))
			}
		}
		if !l.everything && allowedRows(layers, l)[l.path] {
			problems = append(problems, fmt.Sprintf("row %s may import itself through its may-import column: the layers have a cycle", l.path))
		}
	}
	pkgs := make([]string, 0, len(deps))
	for p := range deps {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, full := range pkgs {
		pkg := strings.TrimPrefix(strings.TrimPrefix(full, module), "/")
		row, ok := rowOf(layers, pkg)
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s is under no row of the table: add one", full))
			continue
		}
		allowed := allowedRows(layers, row)
		for _, d := range deps[full] {
			dep := strings.TrimPrefix(strings.TrimPrefix(d, module), "/")
			drow, ok := rowOf(layers, dep)
			if !ok || drow.path == row.path || allowed[drow.path] || row.everything {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s (row %s) depends on %s (row %s), which its row may not import", full, row.path, d, drow.path))
		}
	}
	return problems
}

// moduleDeps lists, for every non-test package of the module, the module's
// own packages among its dependencies (go list -deps: direct and indirect).
func moduleDeps(t *testing.T) (string, map[string][]string) {
	t.Helper()
	modCmd := exec.Command("go", "list", "-m")
	modCmd.Dir = ".."
	modOut, err := modCmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(modOut))
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Deps", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./...: %v\n%s", err, stderr.String())
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if p.ImportPath != module && !strings.HasPrefix(p.ImportPath, module+"/") {
			continue
		}
		var own []string
		for _, d := range p.Deps {
			if d == module || strings.HasPrefix(d, module+"/") {
				own = append(own, d)
			}
		}
		deps[p.ImportPath] = own
	}
	if len(deps) == 0 {
		t.Fatal("go list -deps ./... listed no package of the module")
	}
	return module, deps
}

func TestArchitecture(t *testing.T) {
	f, err := os.Open(architecturePage)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layers, err := parseLayers(f)
	if err != nil {
		t.Fatalf("%s: %v", architecturePage, err)
	}
	module, deps := moduleDeps(t)
	for _, p := range checkLayers(layers, module, deps) {
		t.Errorf("%s: %s", architecturePage, p)
	}
}

// TestArchitectureCatchesViolations feeds the checker a table and an import
// graph with one fault each, so TestArchitecture cannot pass by checking
// nothing.
func TestArchitectureCatchesViolations(t *testing.T) {
	const table = "## Package layout\n\n| path | what | may import |\n|---|---|---|\n" +
		"| `cmd/` | the binary | everything below |\n" +
		"| `server/` | HTTP | `tools` |\n" +
		"| `tools/` | the pipeline | `catalog` |\n" +
		"| `tools/builtin/` | builtins | `tools` |\n" +
		"| `catalog/` | specs | — |\n\n## Tests\n| `x/` | not the table | — |\n"
	layers, err := parseLayers(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(layers); got != 5 {
		t.Fatalf("parsed %d rows, want 5 (rows after the next heading are not the table)", got)
	}
	tests := []struct {
		name string
		deps map[string][]string
		want []string // substrings of the problems, in order; none for a clean graph
	}{
		{"clean", map[string][]string{
			"m/cmd/toolhost":  {"m/server", "m/tools", "m/tools/builtin", "m/catalog"},
			"m/server":        {"m/tools", "m/catalog"},
			"m/tools":         {"m/catalog"},
			"m/tools/builtin": {"m/tools", "m/catalog"},
		}, nil},
		{"upward import", map[string][]string{"m/tools": {"m/server", "m/catalog"}}, []string{"m/tools (row tools) depends on m/server"}},
		{"a lower row importing a higher one", map[string][]string{
			"m/catalog": {"m/tools/builtin"},
		}, []string{"m/catalog (row catalog) depends on m/tools/builtin (row tools/builtin)"}},
		{"package without a row", map[string][]string{"m/store": nil}, []string{"package m/store is under no row"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkLayers(layers, "m", tt.deps)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q does not say %q", got[i], w)
				}
			}
		})
	}
	cyclic, err := parseLayers(strings.NewReader("## Package layout\n| `a/` | x | `b` |\n| `b/` | y | `a` |\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := checkLayers(cyclic, "m", nil); len(got) != 2 || !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "cycle") }) {
		t.Errorf("a cycle a→b→a: problems %q, want one per row naming the cycle", got)
	}
}
