package v1_test

import (
	"strings"
	"testing"

	"toolhost/catalog"
	"toolhost/loop"
	v1 "toolhost/server/v1"
	"toolhost/tools"
	"toolhost/tools/builtin"
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
	if _, err := v1.EstimateTokens(req); err != nil { // loads the tokenizer once
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v1.EstimateTokens(req); err != nil {
			b.Fatal(err)
		}
	}
}
