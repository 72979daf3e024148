package main

import (
	"math"
	"testing"
)

func TestShingleMatchIsTheBenchmarksMetric(t *testing.T) {
	// Identical texts: all true positives.
	if s := shingleMatch("a b c d e", "a b c d e"); s != [3]float64{1, 0, 0} {
		t.Fatalf("identical: %v", s)
	}
	// Truth a..e (2 shingles), prediction a..f (3 shingles): 2 TP, 1 FP.
	s := shingleMatch("a b c d e", "a b c d e f")
	if math.Abs(s[0]-2.0/3) > 1e-9 || math.Abs(s[1]-1.0/3) > 1e-9 || s[2] != 0 {
		t.Fatalf("extra: %v", s)
	}
	p, r, f1 := metrics([][3]float64{s, {1, 0, 0}})
	if math.Abs(p-(2.0/3+1)/2) > 1e-9 || r != 1 || math.Abs(f1-2*p*r/(p+r)) > 1e-9 {
		t.Fatalf("metrics p %v r %v f1 %v", p, r, f1)
	}
	// An empty prediction scores zero precision's worth of nothing and
	// zero recall.
	if _, r, _ := metrics([][3]float64{shingleMatch("a b c d", "")}); r != 0 {
		t.Fatalf("empty prediction recall %v", r)
	}
	// \w tokens: punctuation does not count, letters of any script do.
	if got := tokenize("Größe, 東京 — x_1!"); len(got) != 3 || got[0] != "Größe" || got[2] != "x_1" {
		t.Fatalf("tokens %q", got)
	}
}

func TestNormaliseMarkdownKeepsWhatAReaderSees(t *testing.T) {
	md := "## Title\n\nSee [the guide](https://example.org/a_(b)) and ![logo](x.png) here[^1].\n\n```go\nfmt.Println(1)\n```\n\n[^1]: A note.\n"
	got := normaliseMarkdown(md)
	want := "## Title\n\nSee the guide and  here.\n\n\nfmt.Println(1)\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestSnippetScore(t *testing.T) {
	c := snippetCase{with: []string{"kept  text", "missing"}, without: []string{"menu", "absent"}}
	tp, fn, fp, tn := snippetScore(c, "some kept\ntext and a menu")
	if tp != 1 || fn != 1 || fp != 1 || tn != 1 {
		t.Fatalf("tp %d fn %d fp %d tn %d", tp, fn, fp, tn)
	}
}
