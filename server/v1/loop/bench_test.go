package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// instantUpstream answers at once from memory: a round with one hosted call
// until the conversation holds `rounds` assistant messages, then an answer.
// With it, a run's time is the loop's own work per round (classifying
// calls, the executor pipeline of a no-op tool, events, the round record,
// growing the conversation) without upstream or tool time.
type instantUpstream struct{ rounds int }

func (u instantUpstream) Call(_ context.Context, req *loop.UpstreamRequest, onDelta func(loop.Delta) error) (*loop.UpstreamResponse, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == loop.RoleAssistant {
			n++
		}
	}
	resp := &loop.UpstreamResponse{
		Meta:    loop.Meta{ID: "chatcmpl-bench", Created: 1, Model: req.Model},
		Dialect: loop.DialectOpenAI,
		Usage:   loop.Usage{Present: true, InputTokens: 10, OutputTokens: 2, Dialect: loop.DialectOpenAI, Detail: map[string]any{"prompt_tokens": json.Number("10"), "completion_tokens": json.Number("2")}},
	}
	if n < u.rounds {
		id := fmt.Sprintf("call_%d", n)
		resp.Message = loop.Message{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: id, Name: "sleep", Args: json.RawMessage(`{"ms":0}`)}}}
		resp.FinishReason = loop.FinishToolCalls
		if onDelta != nil {
			if err := onDelta(loop.Delta{Tool: &loop.ToolDelta{Index: 0, ID: id, Name: "sleep", Args: `{"ms":0}`}}); err != nil {
				return nil, err
			}
		}
	} else {
		resp.Message = loop.Message{Role: loop.RoleAssistant, Text: "done"}
		resp.FinishReason = loop.FinishStop
		if onDelta != nil {
			if err := onDelta(loop.Delta{Text: "done"}); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}

// BenchmarkLoopRoundOverhead measures the latency the loop adds per round,
// excluding upstream and tool time. It reports the p50 and p99 of per-round
// time over the runs (each run = 4 hosted rounds + the answer round).
func BenchmarkLoopRoundOverhead(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			const hostedRounds = 4
			r := newRunner(b)
			route := &loop.Route{Name: "mem", Protocol: loop.DialectOpenAI, SupportsTools: true, Upstream: instantUpstream{rounds: hostedRounds}}
			sink := func(loop.Event) error { return nil }
			if !stream {
				sink = nil
			}
			per := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				res, err := r.Run(context.Background(), &loop.Run{
					Request: userRequest("bench", stream),
					Hosted:  loop.Hosted{Tools: []string{"sleep"}, MaxToolRounds: 8},
					Route:   route,
					Caller:  loop.Caller{RequestID: "req_bench"},
					Sink:    sink,
				})
				if err != nil {
					b.Fatal(err)
				}
				per = append(per, time.Since(start)/time.Duration(res.ToolRounds()))
			}
			b.StopTimer()
			slices.Sort(per)
			b.ReportMetric(float64(per[len(per)/2].Microseconds()), "p50-µs/round")
			b.ReportMetric(float64(per[len(per)*99/100].Microseconds()), "p99-µs/round")
		})
	}
}

// BenchmarkOpenAIClientRound is one upstream round trip through the OpenAI
// client to the fake upstream on loopback (HTTP, JSON/SSE encoding and
// decoding), for context: it is upstream time plus the client's work.
func BenchmarkOpenAIClientRound(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			route, _ := fakeRoute(b, fakeupstream.Round{Content: "a short answer of a few words", Usage: json.RawMessage(`{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`)})
			req := userRequest("hi", stream)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := route.Upstream.Call(context.Background(), &loop.UpstreamRequest{Model: "fake-1", Messages: req.Messages, Stream: stream}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
