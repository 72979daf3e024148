package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/sleep"
)

func newRunner(t testing.TB) *loop.Runner {
	t.Helper()
	ex, err := tools.NewExecutor(tools.Options{}, append(builtin.All(), sleep.New())...)
	if err != nil {
		t.Fatal(err)
	}
	return loop.NewRunner(ex, loop.RunnerOptions{})
}

func fakeRoute(t testing.TB, rounds ...fakeupstream.Round) (*loop.Route, *fakeupstream.Server) {
	t.Helper()
	fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	return &loop.Route{Name: "fake", Protocol: loop.DialectOpenAI, SupportsTools: true,
		Upstream: openai.New(openai.Config{Name: "fake", BaseURL: fake.URL()})}, fake
}

func userRequest(text string, stream bool) loop.Request {
	raw, _ := json.Marshal(map[string]string{"role": "user", "content": text})
	m, _ := openai.DecodeMessage(raw)
	return loop.Request{Model: "fake-1", Messages: []loop.Message{m}, Stream: stream, OptionsDialect: loop.DialectOpenAI}
}

var kindNames = map[loop.EventKind]string{
	loop.EventRoundStart: "round_start", loop.EventUpstreamMeta: "meta", loop.EventTextDelta: "text",
	loop.EventCallerCallDelta: "caller_call", loop.EventHostedCallsProposed: "proposed",
	loop.EventHostedCallStarted: "started", loop.EventHostedCallFinished: "finished",
	loop.EventHostedCallsDone: "calls_done", loop.EventRoundEnd: "round_end",
}

// The event sequence every wire format renders from: per round a start,
// the upstream meta, text as it streams, then for a hosted round the
// proposed calls, start/finish per call and the done list, and the round
// end; caller calls stream as they come.
func TestRunnerEventSequence(t *testing.T) {
	rounds := []fakeupstream.Round{
		{Content: "ab", ChunkRunes: 1, ToolCalls: []fakeupstream.ToolCall{{ID: "h1", Name: "sleep", Arguments: `{"ms":0}`}}, Usage: json.RawMessage(`{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`)},
		{Content: "c", ToolCalls: []fakeupstream.ToolCall{{ID: "h2", Name: "sleep", Arguments: `{"ms":0}`}, {ID: "f1", Name: "mine", Arguments: `{"a":1}`}}, ArgsChunk: 3, Usage: json.RawMessage(`{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}`)},
	}
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			route, _ := fakeRoute(t, rounds...)
			var seq []string
			var callerArgs strings.Builder
			req := userRequest("go", stream)
			req.Tools = []loop.Function{{Name: "mine", Parameters: json.RawMessage(`{"type":"object"}`)}}
			res, err := newRunner(t).Run(context.Background(), &loop.Run{
				Request: req,
				Hosted:  loop.Hosted{Tools: []string{"sleep"}, MaxToolRounds: 4},
				Route:   route,
				Lang:    catalog.English,
				Caller:  loop.Caller{RequestID: "req_1"},
				Sink: func(ev loop.Event) error {
					s := kindNames[ev.Kind]
					switch ev.Kind {
					case loop.EventTextDelta:
						s += ":" + ev.Text
					case loop.EventHostedCallStarted, loop.EventHostedCallFinished:
						s += ":" + ev.Call.ID + ":" + string(ev.Call.Status)
					case loop.EventCallerCallDelta:
						if ev.Name != "" {
							s += ":" + ev.Name
						}
						callerArgs.WriteString(ev.ArgsDelta)
						if ev.Name == "" {
							return nil
						}
					}
					seq = append(seq, s)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"round_start", "meta", "text:a", "text:b", "proposed", "started:h1:", "finished:h1:done", "calls_done", "round_end",
				"round_start", "meta", "text:c", "caller_call:mine", "round_end"}
			if !stream {
				want = []string{"round_start", "meta", "proposed", "started:h1:", "finished:h1:done", "calls_done", "round_end", "round_start", "meta", "round_end"}
			}
			if strings.Join(seq, " ") != strings.Join(want, " ") {
				t.Errorf("events\n got %v\nwant %v", seq, want)
			}
			if stream && callerArgs.String() != `{"a":1}` {
				t.Errorf("caller args %q", callerArgs.String())
			}
			if res.ToolRounds() != 2 || len(res.Calls) != 2 || res.Calls[1].Status != loop.StatusSkipped || res.FinishReason != "tool_calls" {
				t.Errorf("result: rounds %d calls %+v finish %s", res.ToolRounds(), res.Calls, res.FinishReason)
			}
			if len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Name != "mine" || !res.HostedRemoved {
				t.Errorf("final message calls %+v", res.Message.ToolCalls)
			}
			if res.Usage.InputTokens != 12 || res.Usage.OutputTokens != 3 {
				t.Errorf("usage %+v", res.Usage)
			}
		})
	}
}

// Usage is summed field by field, nested details included; other values
// keep the latest.
func TestUsageAddSumsNestedDetails(t *testing.T) {
	parse := func(s string) loop.Usage {
		var d map[string]any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		return loop.Usage{Present: true, Dialect: loop.DialectOpenAI, Detail: d}
	}
	cases := []struct {
		name string
		a, b string
		want string
	}{
		{"flat", `{"prompt_tokens":1,"completion_tokens":2}`, `{"prompt_tokens":10,"completion_tokens":20}`, `{"completion_tokens":22,"prompt_tokens":11}`},
		{"nested", `{"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0}}`, `{"prompt_tokens_details":{"cached_tokens":4}}`, `{"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":7}}`},
		{"field_only_in_second", `{"a":1}`, `{"b":{"c":2}}`, `{"a":1,"b":{"c":2}}`},
		{"fractions", `{"cost":0.25}`, `{"cost":0.5}`, `{"cost":0.75}`},
		{"strings_keep_latest", `{"service_tier":"default","n":1}`, `{"service_tier":"flex","n":1}`, `{"n":2,"service_tier":"flex"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := parse(tc.a)
			got := a.Add(parse(tc.b))
			b, _ := json.Marshal(got.Detail)
			if string(b) != tc.want {
				t.Errorf("got %s want %s", b, tc.want)
			}
			if again, _ := json.Marshal(a.Detail); string(again) != mustCompact(t, tc.a) {
				t.Errorf("Add changed its receiver: %s", again)
			}
		})
	}
	var zero loop.Usage
	if zero.Add(loop.Usage{}).Present {
		t.Error("absent usage became present")
	}
}

func mustCompact(t *testing.T, s string) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// The OpenAI client assembles a streamed answer into the same response as
// the non-streamed one: text, tool calls split into argument pieces, usage
// with nested details.
func TestOpenAIClientStreamMatchesNonStream(t *testing.T) {
	round := fakeupstream.Round{
		Content:    "héllo wörld",
		ChunkRunes: 2,
		ArgsChunk:  2,
		ToolCalls:  []fakeupstream.ToolCall{{ID: "a", Name: "x", Arguments: `{"q":"ü"}`}, {ID: "b", Name: "y", Arguments: `{}`}},
		Usage:      json.RawMessage(`{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}`),
	}
	route, fake := fakeRoute(t, round, round)
	var got [2]*loop.UpstreamResponse
	for i, stream := range []bool{false, true} {
		req := userRequest("hi", stream)
		resp, err := route.Upstream.Call(context.Background(), &loop.UpstreamRequest{Model: "fake-1", Messages: req.Messages, Stream: stream}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = resp
	}
	for i, r := range got {
		if r.Message.Text != "héllo wörld" || len(r.Message.ToolCalls) != 2 || string(r.Message.ToolCalls[0].Args) != `{"q":"ü"}` ||
			r.FinishReason != "tool_calls" || r.Usage.InputTokens != 3 || r.Usage.CachedInputTokens != 1 || r.ID != "chatcmpl-fake-0" {
			t.Errorf("response %d: %+v", i, r)
		}
	}
	var streamed map[string]any
	_ = json.Unmarshal(fake.Requests()[1], &streamed)
	if so, _ := streamed["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream request without include_usage: %v", streamed)
	}
}

// A fake-upstream script file loads as the program reads it.
func TestLoadScript(t *testing.T) {
	path := t.TempDir() + "/s.json"
	if err := writeFile(path, `{"conversations":[{"match":"x","rounds":[{"content":"hi"}]}]}`); err != nil {
		t.Fatal(err)
	}
	s, err := fakeupstream.LoadScript(path)
	if err != nil || len(s.Conversations) != 1 || s.Conversations[0].Rounds[0].Content != "hi" {
		t.Fatalf("%+v %v", s, err)
	}
	if err := writeFile(path, `{"conversations":[],"typo":1}`); err != nil {
		t.Fatal(err)
	}
	if _, err := fakeupstream.LoadScript(path); err == nil {
		t.Error("unknown field accepted")
	}
}

// GET /v1/requests lists what the fake was sent, for the Node e2e tests:
// [] before any request, then every body in arrival order.
func TestFakeUpstreamListsRequests(t *testing.T) {
	route, fake := fakeRoute(t, fakeupstream.Round{Content: "a"}, fakeupstream.Round{Content: "b"})
	list := func() string {
		t.Helper()
		resp, err := http.Get(fake.URL() + "/requests")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := list(); got != "[]" {
		t.Fatalf("before any request: %s", got)
	}
	for _, text := range []string{"first", "sécond"} {
		req := userRequest(text, false)
		if _, err := route.Upstream.Call(context.Background(), &loop.UpstreamRequest{Model: "fake-1", Messages: req.Messages}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.Unmarshal([]byte(list()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Messages[0].Content != "first" || got[1].Messages[0].Content != "sécond" {
		t.Errorf("listed %+v", got)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// The budget: once the rounds so far cost MaxCost, the next call is the
// final one (tool choice none), as after max_tool_rounds.
func TestRunnerBudgetEndsLoopEarly(t *testing.T) {
	rounds := []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{{ID: "c1", Name: "sleep", Arguments: `{"ms":0}`}}, Usage: json.RawMessage(`{"prompt_tokens":100,"completion_tokens":0,"total_tokens":100}`)},
		{Content: "out of budget", ToolCalls: []fakeupstream.ToolCall{{ID: "c2", Name: "sleep", Arguments: `{"ms":0}`}}, Usage: json.RawMessage(`{"prompt_tokens":100,"completion_tokens":0,"total_tokens":100}`)},
	}
	cases := []struct {
		name      string
		maxCost   int64
		wantCalls int // upstream calls
	}{
		{"budget_reached_after_first_round", 100, 2},
		{"budget_not_reached", 1000, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := append([]fakeupstream.Round(nil), rounds...)
			rs = append(rs, fakeupstream.Round{Content: "third"})
			route, fake := fakeRoute(t, rs...)
			route.Prices = map[string]loop.Price{"*": {Input: 1_000_000}}
			res, err := newRunner(t).Run(context.Background(), &loop.Run{
				Request: userRequest("go", false),
				Hosted:  loop.Hosted{Tools: []string{"sleep"}, MaxToolRounds: 8},
				Route:   route,
				Budgets: loop.Budgets{Cost: tc.maxCost},
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(fake.Requests()); n != tc.wantCalls {
				t.Fatalf("%d upstream calls, want %d", n, tc.wantCalls)
			}
			if tc.wantCalls == 2 {
				var last map[string]any
				_ = json.Unmarshal(fake.Requests()[1], &last)
				if last["tool_choice"] != "none" || res.Calls[1].Status != loop.StatusSkipped || res.Cost != 200 {
					t.Errorf("final call %v, calls %+v, cost %d", last["tool_choice"], res.Calls, res.Cost)
				}
			}
		})
	}
}

// Upstream deadlines: no response headers in time, or the whole call too
// long, end the call with an error and cancel the request upstream.
func TestOpenAIClientTimeouts(t *testing.T) {
	cases := []struct {
		name     string
		timeouts upstream.Timeouts
		stream   bool
	}{
		{"header", upstream.Timeouts{Header: 50 * time.Millisecond}, false},
		{"total", upstream.Timeouts{Total: 50 * time.Millisecond}, true},
		{"idle", upstream.Timeouts{Idle: 50 * time.Millisecond}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			round := fakeupstream.Round{Hang: true}
			if tc.name == "idle" {
				round = fakeupstream.Round{Stall: true}
			}
			fake, err := fakeupstream.Start(fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{round}}}})
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			up := openai.New(openai.Config{Name: "slow", BaseURL: fake.URL(), Timeouts: tc.timeouts})
			req := userRequest("x", tc.stream)
			_, err = up.Call(context.Background(), &loop.UpstreamRequest{Model: "m", Messages: req.Messages, Stream: tc.stream}, nil)
			if err == nil || !strings.Contains(err.Error(), "upstream slow") || (tc.name == "idle" && !strings.Contains(err.Error(), "idle timeout")) {
				t.Fatalf("error %v", err)
			}
			<-fake.CancelSeen()
		})
	}
}

// A session's max_steps_per_generation ends the loop like max_tool_rounds:
// after that many hosted rounds the model answers without tools.
func TestSessionMaxStepsEndsLoop(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	ex, err := tools.NewExecutor(tools.Options{Sessions: st}, append(builtin.All(), sleep.New())...)
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	if _, err := st.TouchSession(ctx, tools.LocalAccount, "s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	p := session.Default()
	p.MaxStepsPerGeneration = &one
	if err := st.SetSessionPermissions(ctx, tools.LocalAccount, "s1", p, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sid       string
		wantCalls int
	}{{"s1", 2}, {"other", 3}} {
		route, fake := fakeRoute(t,
			fakeupstream.Round{ToolCalls: []fakeupstream.ToolCall{{ID: "c1", Name: "sleep", Arguments: `{"ms":0}`}}},
			fakeupstream.Round{Content: "second", ToolCalls: []fakeupstream.ToolCall{{ID: "c2", Name: "sleep", Arguments: `{"ms":0}`}}},
			fakeupstream.Round{Content: "third"})
		_, err := loop.NewRunner(ex, loop.RunnerOptions{}).Run(ctx, &loop.Run{
			Request: userRequest("go", false),
			Hosted:  loop.Hosted{Tools: []string{"sleep"}, MaxToolRounds: 8},
			Route:   route,
			Caller:  loop.Caller{SessionID: c.sid},
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(fake.Requests()); n != c.wantCalls {
			t.Errorf("session %s: %d upstream calls, want %d", c.sid, n, c.wantCalls)
		}
	}
}
