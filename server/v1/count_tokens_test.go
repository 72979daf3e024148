package v1_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tiktoken "github.com/pkoukk/tiktoken-go"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

func estimate(ctx context.Context, t *testing.T, text string) (int64, error) {
	t.Helper()
	return v1.EstimateTokens(ctx, &loop.UpstreamRequest{Model: "m", Messages: []loop.Message{{Role: loop.RoleUser, Text: text}}})
}

// Ordinary text is counted exactly as the cl100k_base BPE counts it: only
// pathological runs are cut into chunks.
func TestEstimateCountsOrdinaryTextExactly(t *testing.T) {
	text := longTexts(t)["prose"][:64<<10] + " 近一年钙钛矿封装稳定性有哪些新进展？ 12345678 don't  \n\n\tend"
	got, err := estimate(context.Background(), t, text) // loads the embedded ranks
	if err != nil {
		t.Fatal(err)
	}
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(3+3) + int64(len(enc.EncodeOrdinary("user"))+len(enc.EncodeOrdinary(text)))
	if got != want {
		t.Fatalf("estimate %d, BPE %d", got, want)
	}
}

// One unbroken run of a character is no longer quadratic: 1 MB of it is
// estimated well within a deadline the old code missed by hours (80 000
// characters alone took it 5 s), and the estimate stays near the true
// count (about one token per 8 x's for shorter runs).
func TestEstimateIsLinearInOneUnbrokenRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := estimate(ctx, t, strings.Repeat("x", 1<<20))
	if err != nil {
		t.Fatalf("1 MB of one character: %v", err)
	}
	if n < (1<<20)/64 || n > (1<<20)/2 {
		t.Fatalf("estimate %d tokens for 1 MB of x", n)
	}
}

// The estimate stops when the request's context ends.
func TestEstimateStopsWhenTheCallerGoes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := estimate(ctx, t, longTexts(t)["random-letters"])
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

// Text beyond the estimate's cap is a clear 413, not minutes of CPU.
func TestCountTokensRefusesTooMuchText(t *testing.T) {
	e := newProtocolEnv(t, "toolhost", loop.DialectOpenAI, fakeupstream.Script{})
	body := `{"model":"fake-1","messages":[{"role":"user","content":"` + strings.Repeat("x", 5<<20) + `"}]}`
	r := e.postTo("/v1/messages/count_tokens", body, nil)
	if r.status != 413 || !strings.Contains(string(r.body), "too_large_to_estimate") {
		t.Fatalf("status %d: %.300s", r.status, r.body)
	}
}
