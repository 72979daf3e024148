package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/sleep"
)

// blob is a test tool whose result is n bytes of text: what a round of
// fetched pages feeds the model.
type blob struct{}

func (blob) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "blob", Version: "1.0.0",
		Title:       catalog.Text{ZH: "大结果", EN: "Big result"},
		Description: catalog.Text{ZH: "测试工具：返回 n 字节文本", EN: "test tool: returns n bytes of text"},
		Input:       json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`),
		SideEffect:  catalog.SideEffectNone,
	}
}

func (blob) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var in struct{ N int }
	if err := inv.Decode(&in); err != nil {
		return nil, err
	}
	return &tools.Result{Text: strings.Repeat("b", in.N), Summary: fmt.Sprintf("%d bytes", in.N)}, nil
}

// budgetRunner runs on an executor with an in-memory journal, closed
// (its writer stopped) when the test ends.
func budgetRunner(t testing.TB) *loop.Runner {
	t.Helper()
	ex, err := tools.NewExecutor(tools.Options{}, append(builtin.All(), sleep.New(), blob{})...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Journal().Close)
	return loop.NewRunner(ex, loop.RunnerOptions{})
}

func calls(n int, name, args string) []fakeupstream.ToolCall {
	out := make([]fakeupstream.ToolCall, n)
	for i := range out {
		out[i] = fakeupstream.ToolCall{ID: fmt.Sprintf("c%02d", i), Name: name, Arguments: args}
	}
	return out
}

// sentRequest is what the fake upstream was sent, as far as the budgets
// show in it.
type sentRequest struct {
	ToolChoice any `json:"tool_choice"`
	Messages   []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

// Each budget, once spent, makes the next upstream call the final one (tool
// choice none), names itself in StoppedBy, and leaves exact counts: the
// calls over the tool-call budget in a round are skipped, not run; results
// over the byte budget are withheld from the model.
func TestRunnerBudgets(t *testing.T) {
	usage := json.RawMessage(`{"prompt_tokens":100,"completion_tokens":0,"total_tokens":100}`)
	cases := []struct {
		name    string
		budgets loop.Budgets
		rounds  []fakeupstream.Round
		// want: upstream calls, calls by status, bytes fed, the stop.
		upstream             int
		done, skipped, fails int
		fed                  int64
		withheld             int
		stop                 loop.StopReason
	}{
		{
			name:    "40_calls_tool_call_budget_10",
			budgets: loop.Budgets{ToolCalls: 10},
			rounds: []fakeupstream.Round{
				{ToolCalls: calls(40, "sleep", `{"ms":0}`)},
				{Content: "answer from what ran"},
			},
			upstream: 2, done: 10, skipped: 30, stop: loop.StopToolCalls,
		},
		{
			name:    "budget_used_exactly_ends_before_the_next_round",
			budgets: loop.Budgets{ToolCalls: 3},
			rounds: []fakeupstream.Round{
				{ToolCalls: calls(3, "sleep", `{"ms":0}`)},
				{Content: "final", ToolCalls: calls(2, "sleep", `{"ms":0}`)},
			},
			upstream: 2, done: 3, skipped: 2, stop: loop.StopToolCalls,
		},
		{
			name:    "1.5MB_of_results_against_256KB",
			budgets: loop.Budgets{ResultBytes: 256_000},
			rounds: []fakeupstream.Round{
				{ToolCalls: calls(7, "blob", `{"n":220000}`)},
				{Content: "answer from the first result"},
			},
			upstream: 2, done: 7, fed: 220_000, withheld: 6, stop: loop.StopResultBytes,
		},
		{
			name:    "results_within_the_byte_budget",
			budgets: loop.Budgets{ResultBytes: 1000},
			rounds: []fakeupstream.Round{
				{ToolCalls: calls(2, "blob", `{"n":100}`)},
				{Content: "done"},
			},
			upstream: 2, done: 2, fed: 200,
		},
		{
			name:    "model_call_budget_2",
			budgets: loop.Budgets{ModelCalls: 2},
			rounds: []fakeupstream.Round{
				{ToolCalls: calls(1, "sleep", `{"ms":0}`)},
				{Content: "final", ToolCalls: calls(1, "sleep", `{"ms":0}`)},
			},
			upstream: 2, done: 1, skipped: 1, stop: loop.StopModelCalls,
		},
		{
			name:    "model_call_budget_1_answers_without_tools",
			budgets: loop.Budgets{ModelCalls: 1},
			rounds:  []fakeupstream.Round{{Content: "no tools", ToolCalls: calls(1, "sleep", `{"ms":0}`)}},
			// The only call is the final one.
			upstream: 1, skipped: 1, stop: loop.StopModelCalls,
		},
		{
			name:    "cost_budget",
			budgets: loop.Budgets{Cost: 100},
			rounds: []fakeupstream.Round{
				{ToolCalls: calls(1, "sleep", `{"ms":0}`), Usage: usage},
				{Content: "final", Usage: usage},
			},
			upstream: 2, done: 1, stop: loop.StopCost,
		},
		{
			name:     "no_budget_spent",
			budgets:  loop.Budgets{ToolCalls: 10, ModelCalls: 5, ResultBytes: 1 << 20, Cost: 1 << 40},
			rounds:   []fakeupstream.Round{{ToolCalls: calls(2, "sleep", `{"ms":0}`)}, {Content: "done"}},
			upstream: 2, done: 2,
		},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				route, fake := fakeRoute(t, tc.rounds...)
				route.Prices = map[string]loop.Price{"*": {Input: 1_000_000}}
				var events []loop.Event
				res, err := budgetRunner(t).Run(context.Background(), &loop.Run{
					Request: userRequest("go", stream),
					Hosted:  loop.Hosted{Tools: []string{"sleep", "blob"}, MaxToolRounds: 8},
					Route:   route,
					Lang:    catalog.English,
					Budgets: tc.budgets,
					Sink:    func(ev loop.Event) error { events = append(events, ev); return nil },
				})
				if err != nil {
					t.Fatal(err)
				}
				sent := fake.Requests()
				if len(sent) != tc.upstream {
					t.Fatalf("%d upstream calls, want %d", len(sent), tc.upstream)
				}
				status := map[loop.Status]int{}
				withheld := 0
				for _, c := range res.Calls {
					status[c.Status]++
					if c.Withheld {
						withheld++
					}
				}
				if status[loop.StatusDone] != tc.done || status[loop.StatusSkipped] != tc.skipped || status[loop.StatusFailed] != tc.fails {
					t.Errorf("calls by status %v, want done %d skipped %d failed %d", status, tc.done, tc.skipped, tc.fails)
				}
				if res.StoppedBy != tc.stop || withheld != tc.withheld || (tc.fed > 0 && res.ResultBytes != tc.fed) {
					t.Errorf("stopped by %q (want %q), withheld %d (want %d), fed %d (want %d)", res.StoppedBy, tc.stop, withheld, tc.withheld, res.ResultBytes, tc.fed)
				}
				var last sentRequest
				if err := json.Unmarshal(sent[len(sent)-1], &last); err != nil {
					t.Fatal(err)
				}
				if (tc.stop != "") != (last.ToolChoice == "none") {
					t.Errorf("last tool_choice %v with stop %q", last.ToolChoice, tc.stop)
				}
				if res.Message.Text == "" || res.FinishReason != loop.FinishStop {
					t.Errorf("no final answer: %q, finish %s", res.Message.Text, res.FinishReason)
				}
				checkBudgetConversation(t, tc.name, last, res)
				checkBudgetEvents(t, events, res)
			})
		}
	}
}

// checkBudgetConversation: the final call read one tool message per call
// the model asked for, the skipped ones saying why, the withheld ones a
// note instead of the result.
func checkBudgetConversation(t *testing.T, name string, last sentRequest, res *loop.Result) {
	t.Helper()
	var tool []string
	for _, m := range last.Messages {
		if m.Role == "tool" {
			s, _ := m.Content.(string)
			tool = append(tool, s)
		}
	}
	ran := 0
	for _, rr := range res.Rounds[:len(res.Rounds)-1] {
		ran += len(rr.Calls)
	}
	if len(tool) != ran {
		t.Fatalf("%d tool messages, want %d", len(tool), ran)
	}
	for i, s := range tool {
		c := res.Calls[i]
		switch {
		case c.Status == loop.StatusSkipped:
			// The OpenAI client marks an error result for the model.
			if s != "[tool error] not run: the request's tool-call budget is spent" {
				t.Errorf("%s: skipped call %s fed %q", name, c.ID, s)
			}
		case c.Withheld:
			if s != "[tool error] result withheld: the request's tool-result budget is spent (execution "+c.ExecutionID+")" || c.ExecutionID == "" {
				t.Errorf("%s: withheld call %s fed %.80q", name, c.ID, s)
			}
		case s != c.Result:
			t.Errorf("%s: call %s fed %.80q, not its result", name, c.ID, s)
		}
	}
}

// checkBudgetEvents: calls skipped for a budget never start; the round's
// proposed and done lists hold the calls that ran.
func checkBudgetEvents(t *testing.T, events []loop.Event, res *loop.Result) {
	t.Helper()
	started, proposed := 0, 0
	for _, ev := range events {
		switch ev.Kind {
		case loop.EventHostedCallStarted:
			started++
		case loop.EventHostedCallsProposed:
			proposed += len(ev.Calls)
		}
	}
	ran := 0
	for _, c := range res.Calls {
		if c.Status != loop.StatusSkipped {
			ran++
		}
	}
	if started != ran || proposed != ran {
		t.Errorf("%d started, %d proposed, %d ran", started, proposed, ran)
	}
}

// memUpstream answers from memory, for runs inside a synctest bubble: the
// i-th call gets answers[i], later calls a plain answer. It keeps every
// request.
type memUpstream struct {
	answers []loop.Message
	mu      sync.Mutex
	reqs    []loop.UpstreamRequest
	at      []time.Time
}

func (u *memUpstream) Call(_ context.Context, req *loop.UpstreamRequest, _ func(loop.Delta) error) (*loop.UpstreamResponse, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := len(u.reqs)
	u.reqs = append(u.reqs, *req)
	u.at = append(u.at, time.Now())
	resp := &loop.UpstreamResponse{Meta: loop.Meta{ID: fmt.Sprintf("mem-%d", n), Model: req.Model}, Dialect: loop.DialectOpenAI,
		Message: loop.Message{Role: loop.RoleAssistant, Text: "answer"}, FinishReason: loop.FinishStop}
	if n < len(u.answers) {
		resp.Message = u.answers[n]
		if len(resp.Message.ToolCalls) > 0 {
			resp.FinishReason = loop.FinishToolCalls
		}
	}
	return resp, nil
}

func sleepCalls(n int, ms int) []loop.ToolCall {
	out := make([]loop.ToolCall, n)
	for i := range out {
		out[i] = loop.ToolCall{ID: fmt.Sprintf("s%d", i), Name: "sleep", Args: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, ms))}
	}
	return out
}

// A wall-clock budget ends a loop of slow tools on time: the calls running
// at the deadline are cancelled and fail (the model is told why), the ones
// waiting for a slot never start, the next round's calls are skipped, and
// the final call is made at the deadline — on the bubble's clock, so the
// instants are exact.
func TestRunnerWallClockEndsSlowTools(t *testing.T) {
	cases := []struct {
		name string
		// answers: the model's rounds; each sleep call takes ms.
		answers  []loop.Message
		wall     time.Duration
		finalAt  time.Duration // when the final call is made
		upstream int
		done     int
		failed   int
		skipped  int
	}{
		{
			// Six calls of a minute: four run at once and are cancelled at
			// 5 s, the two waiting for a slot fail without starting.
			name:    "one_round_cut_at_the_deadline",
			answers: []loop.Message{{Role: loop.RoleAssistant, ToolCalls: sleepCalls(6, 60_000)}},
			wall:    5 * time.Second, finalAt: 5 * time.Second, upstream: 2, failed: 6,
		},
		{
			// Rounds of 2 s calls: rounds at 0 s and 2 s run, the one asked
			// at 4 s is cut at 5 s, then the final call, whose call is
			// skipped.
			name: "a_loop_of_slow_rounds",
			answers: []loop.Message{
				{Role: loop.RoleAssistant, ToolCalls: sleepCalls(1, 2000)},
				{Role: loop.RoleAssistant, ToolCalls: sleepCalls(1, 2000)},
				{Role: loop.RoleAssistant, ToolCalls: sleepCalls(1, 2000)},
				{Role: loop.RoleAssistant, ToolCalls: sleepCalls(1, 2000)},
			},
			wall: 5 * time.Second, finalAt: 5 * time.Second, upstream: 4, done: 2, failed: 1, skipped: 1,
		},
		{
			// A round that ends exactly at the deadline: its call is done,
			// the loop stops without another round.
			name: "deadline_met_by_a_round",
			answers: []loop.Message{
				{Role: loop.RoleAssistant, ToolCalls: sleepCalls(1, 5000)},
				{Role: loop.RoleAssistant, ToolCalls: sleepCalls(1, 5000)},
			},
			wall: 5 * time.Second, finalAt: 5 * time.Second, upstream: 2, done: 1, skipped: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runner := budgetRunner(t)
				up := &memUpstream{answers: tc.answers}
				start := time.Now()
				res, err := runner.Run(t.Context(), &loop.Run{
					Request: userRequest("go", false),
					Hosted:  loop.Hosted{Tools: []string{"sleep"}, MaxToolRounds: 8},
					Route:   &loop.Route{Name: "mem", Protocol: loop.DialectOpenAI, SupportsTools: true, Upstream: up},
					Lang:    catalog.English,
					Budgets: loop.Budgets{WallClock: tc.wall},
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(up.reqs) != tc.upstream {
					t.Fatalf("%d upstream calls, want %d", len(up.reqs), tc.upstream)
				}
				final := up.reqs[len(up.reqs)-1]
				if final.ToolChoice.Mode != loop.ToolChoiceNone || res.StoppedBy != loop.StopWallClock {
					t.Errorf("final tool choice %+v, stopped by %q", final.ToolChoice, res.StoppedBy)
				}
				if at := up.at[len(up.at)-1].Sub(start); at != tc.finalAt {
					t.Errorf("final call at %v, want %v", at, tc.finalAt)
				}
				status := map[loop.Status]int{}
				for _, c := range res.Calls {
					status[c.Status]++
					if c.Status == loop.StatusFailed && !strings.Contains(c.Result, "before the request's wall-clock budget ran out") {
						t.Errorf("failed call %s told the model %q", c.ID, c.Result)
					}
				}
				if status[loop.StatusDone] != tc.done || status[loop.StatusFailed] != tc.failed || status[loop.StatusSkipped] != tc.skipped {
					t.Errorf("calls by status %v, want done %d failed %d skipped %d", status, tc.done, tc.failed, tc.skipped)
				}
			})
		})
	}
}

// A key's budgets lower the server's, never raise them; a zero leaves the
// server's.
func TestBudgetsTighter(t *testing.T) {
	server := loop.Budgets{ToolCalls: 100, ResultBytes: 1 << 20, WallClock: time.Minute, FinalGrace: time.Second}
	cases := []struct {
		name string
		key  loop.Budgets
		want loop.Budgets
	}{
		{"none", loop.Budgets{}, server},
		{"lower", loop.Budgets{ToolCalls: 10, WallClock: time.Second}, loop.Budgets{ToolCalls: 10, ResultBytes: 1 << 20, WallClock: time.Second, FinalGrace: time.Second}},
		{"higher_is_ignored", loop.Budgets{ToolCalls: 1000, ResultBytes: 1 << 30}, server},
		{"bound_the_server_leaves_off", loop.Budgets{ModelCalls: 3, Cost: 50}, loop.Budgets{ModelCalls: 3, ToolCalls: 100, ResultBytes: 1 << 20, WallClock: time.Minute, Cost: 50, FinalGrace: time.Second}},
		{"grace_is_the_server's", loop.Budgets{FinalGrace: time.Hour}, server},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := server.Tighter(tc.key); got != tc.want {
				t.Errorf("got %+v want %+v", got, tc.want)
			}
		})
	}
}
