package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The evaluation corpus of trafilatura as go-trafilatura ships it in its
// module (test-files/comparison/*.html and the expectations in
// scripts/comparison/data.go): about a thousand real pages in many
// languages, each with snippets the extracted text must contain ("with")
// and must not contain ("without"). It is in the Go module cache wherever
// this project builds (go-trafilatura is a dependency), so CI has it
// without fetching anything else. Scored as trafilatura scores it: a found
// "with" snippet is a true positive, a missing one a false negative, a
// found "without" snippet a false positive.

type snippetCase struct {
	url, file     string
	with, without []string
	html          []byte
}

// trafilaturaDir is the go-trafilatura module folder in the module cache.
func trafilaturaDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/markusmobius/go-trafilatura").Output()
	if err != nil {
		return "", fmt.Errorf("locate go-trafilatura in the module cache: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func loadSnippetCorpus(modDir string) ([]snippetCase, error) {
	src := filepath.Join(modDir, "scripts", "comparison", "data.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		return nil, err
	}
	var cases []snippetCase
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "comparisonData" || len(vs.Values) != 1 {
			return true
		}
		m, ok := vs.Values[0].(*ast.CompositeLit)
		if !ok {
			return false
		}
		for _, el := range m.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			c := snippetCase{url: stringLit(kv.Key)}
			entry, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				continue
			}
			for _, fe := range entry.Elts {
				fkv, ok := fe.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch fkv.Key.(*ast.Ident).Name {
				case "File":
					c.file = stringLit(fkv.Value)
				case "With":
					c.with = stringList(fkv.Value)
				case "Without":
					c.without = stringList(fkv.Value)
				}
			}
			if c.file == "" || len(c.with)+len(c.without) == 0 {
				continue
			}
			b, err := os.ReadFile(filepath.Join(modDir, "test-files", "comparison", c.file))
			if err != nil {
				continue // a few entries name files the module does not ship
			}
			c.html = b
			cases = append(cases, c)
		}
		return false
	})
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: no cases found", src)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].file < cases[j].file })
	return cases, nil
}

func stringLit(e ast.Expr) string {
	bl, ok := e.(*ast.BasicLit)
	if !ok {
		return ""
	}
	s, err := strconv.Unquote(bl.Value)
	if err != nil {
		return ""
	}
	return s
}

func stringList(e ast.Expr) []string {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range cl.Elts {
		if s := stringLit(el); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// snippetScore counts one case's true/false positives and negatives.
// Whitespace is collapsed on both sides: snippets are written as prose.
func snippetScore(c snippetCase, pred string) (tp, fn, fp, tn int) {
	p := strings.Join(strings.Fields(pred), " ")
	for _, w := range c.with {
		if strings.Contains(p, strings.Join(strings.Fields(w), " ")) {
			tp++
		} else {
			fn++
		}
	}
	for _, w := range c.without {
		if strings.Contains(p, strings.Join(strings.Fields(w), " ")) {
			fp++
		} else {
			tn++
		}
	}
	return
}
