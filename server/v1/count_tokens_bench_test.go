package v1_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
)

// The embedded estimate of count_tokens for a request of ~2 KB of text
// with every builtin tool definition.
func BenchmarkEstimateTokens(b *testing.B) {
	ex, err := tools.NewExecutor(tools.Options{}, builtin.All()...)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, s := range ex.Catalog().List() {
		names = append(names, s.Name)
	}
	defs, err := loop.NewRunner(ex, loop.RunnerOptions{}).Definitions(names, catalog.Chinese)
	if err != nil {
		b.Fatal(err)
	}
	req := &loop.UpstreamRequest{
		Model: "m",
		Messages: []loop.Message{
			{Role: loop.RoleSystem, Text: "You are brief."},
			{Role: loop.RoleUser, Text: strings.Repeat("近一年钙钛矿封装稳定性有哪些新进展？ What changed in perovskite encapsulation? ", 20)},
		},
		Tools: defs,
	}
	if _, err := v1.EstimateTokens(context.Background(), req); err != nil { // loads the tokenizer once
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v1.EstimateTokens(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// longTexts are 1 MB inputs: ordinary prose (this repository's README,
// repeated), one character repeated (one unbroken pre-token piece, the
// case that was quadratic), and random letters (unbroken and never
// repeating, so no memo helps).
func longTexts(tb testing.TB) map[string]string {
	const size = 1 << 20
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		tb.Fatal(err)
	}
	prose := strings.Repeat(string(readme), size/len(readme)+1)[:size]
	rnd := rand.New(rand.NewPCG(1, 2))
	letters := make([]byte, size)
	for i := range letters {
		letters[i] = byte('a' + rnd.IntN(26))
	}
	return map[string]string{"prose": prose, "one-char": strings.Repeat("x", size), "random-letters": string(letters)}
}

// BenchmarkEstimateTokensLong: the count_tokens estimate of 1 MB of text
// (target: one repeated character ≤ 50 ms and ≤ 2× prose).
func BenchmarkEstimateTokensLong(b *testing.B) {
	texts := longTexts(b)
	for _, name := range []string{"prose", "one-char", "random-letters"} {
		req := &loop.UpstreamRequest{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Text: texts[name]}}}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(texts[name])))
			for b.Loop() {
				if _, err := v1.EstimateTokens(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
