// Command tokencount measures what the embedded tokenizer of
// /v1/messages/count_tokens buys over a tokenizer-free estimate: for each
// file given it prints the size, the count of the embedded estimate
// (cl100k_base BPE, as server/v1 counts one user message holding the
// file's text) and two simple estimates with their error against it:
// bytes/4, and a script-aware one (ASCII bytes/4 plus one token per
// non-ASCII character). docs/performance.md has a run and the decision.
//
//	go run ./bench/tokencount README.md docs/*.md
package main

import (
	"context"
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/loop"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tokencount FILE...")
		os.Exit(2)
	}
	fmt.Printf("%-44s %9s %9s %9s %9s %7s %9s %7s\n", "file", "bytes", "runes", "cl100k", "bytes/4", "err", "script", "err")
	var sum [4]float64
	for _, path := range os.Args[1:] {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		text := string(b)
		req := &loop.UpstreamRequest{Messages: []loop.Message{{Role: loop.RoleUser, Text: text}}}
		start := time.Now()
		bpe, err := v1.EstimateTokens(context.Background(), req)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = time.Since(start)
		// The same framing as the estimate: 3 per request, 3 per message,
		// the role's one token.
		simple := int64(len(b)/4) + 7
		ascii, other := 0, 0
		for _, r := range text {
			if r < utf8.RuneSelf {
				ascii++
			} else {
				other++
			}
		}
		script := int64(ascii/4+other) + 7
		e1 := 100 * float64(simple-bpe) / float64(bpe)
		e2 := 100 * float64(script-bpe) / float64(bpe)
		sum[0] += abs(e1)
		sum[1] += abs(e2)
		fmt.Printf("%-44s %9d %9d %9d %9d %+6.1f%% %9d %+6.1f%%\n", path, len(b), utf8.RuneCount(b), bpe, simple, e1, script, e2)
	}
	n := float64(len(os.Args) - 1)
	fmt.Printf("mean absolute error against cl100k: bytes/4 %.1f%%, script-aware %.1f%%\n", sum[0]/n, sum[1]/n)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
