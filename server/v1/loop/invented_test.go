package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/sleep"
)

// The refusal the model gets for get_tiem in a run with get_time hosted and
// the caller's function mine: the names it may use, sorted, and no guess.
const tiemRefusal = `unknown_tool: unknown tool "get_tiem"; available tools: get_time, mine`

// A name the model invents (neither hosted nor the caller's) is a hosted
// call that fails at lookup (§6.14 of the tool-call seed): the model gets
// unknown_tool with the names it may use and the loop goes on; the journal
// holds the refusal under the run and round. With a caller function in the
// same round, or on the final round, the invented call goes back to the
// caller with the rest of the answer, as without hosted tools. Streaming
// never leaks an invented call's deltas while the loop may still run it.
func TestRunnerInventedToolNames(t *testing.T) {
	tiem := fakeupstream.ToolCall{ID: "c_tiem", Name: "get_tiem", Arguments: `{"timezone":"Europe/Paris"}`}
	timeCall := fakeupstream.ToolCall{ID: "c_time", Name: "get_time", Arguments: `{"timezone":"UTC"}`}
	mine := fakeupstream.ToolCall{ID: "c_mine", Name: "mine", Arguments: `{"a":1}`}
	notEnabled := fakeupstream.ToolCall{ID: "c_roll", Name: "roll_dice", Arguments: `{}`}
	answer := fakeupstream.Round{Content: "It is noon."}
	type want struct {
		upstream int      // upstream calls
		statuses []string // res.Calls as name:status
		results  []string // second upstream request: what each tool message holds, in order
		journal  []string // journal records as name:state:code
		final    []string // calls left in the final message
		finish   string
		caller   []string // streamed caller calls as index:name:args
	}
	cases := []struct {
		name      string
		rounds    []fakeupstream.Round
		hosted    []string
		maxRounds int
		want      want
	}{
		{
			name:   "invented alone fails and the loop goes on",
			rounds: []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{tiem}, ArgsChunk: 3}, answer},
			hosted: []string{"get_time"}, maxRounds: 4,
			want: want{upstream: 2, statuses: []string{"get_tiem:failed"}, results: []string{tiemRefusal},
				journal: []string{"get_tiem:parse_rejected:unknown_tool"}, finish: "stop"},
		},
		{
			name:   "invented and hosted both run",
			rounds: []fakeupstream.Round{{Content: "Checking.", ToolCalls: []fakeupstream.ToolCall{tiem, timeCall}, ArgsChunk: 2}, answer},
			hosted: []string{"get_time"}, maxRounds: 4,
			want: want{upstream: 2, statuses: []string{"get_tiem:failed", "get_time:done"}, results: []string{tiemRefusal, "(UTC, UTC+00:00, unix "},
				journal: []string{"get_tiem:parse_rejected:unknown_tool", "get_time:observed:"}, finish: "stop"},
		},
		{
			name:   "a published tool not enabled here is refused too",
			rounds: []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{notEnabled}}, answer},
			hosted: []string{"get_time"}, maxRounds: 4,
			want: want{upstream: 2, statuses: []string{"roll_dice:failed"}, results: []string{`unknown_tool: unknown tool "roll_dice"; available tools: get_time, mine`},
				journal: []string{"roll_dice:parse_rejected:unknown_tool"}, finish: "stop"},
		},
		{
			name:   "invented with a caller function goes back to the caller",
			rounds: []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{tiem, timeCall, mine}, ArgsChunk: 4}},
			hosted: []string{"get_time"}, maxRounds: 4,
			want: want{upstream: 1, statuses: []string{"get_time:skipped"}, final: []string{"get_tiem", "mine"}, finish: "tool_calls",
				caller: []string{`0:get_tiem:{"timezone":"Europe/Paris"}`, `1:mine:{"a":1}`}},
		},
		{
			name:   "a caller function before the invented name keeps the model's order",
			rounds: []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{mine, timeCall, tiem}, ArgsChunk: 3}},
			hosted: []string{"get_time"}, maxRounds: 4,
			want: want{upstream: 1, statuses: []string{"get_time:skipped"}, final: []string{"mine", "get_tiem"}, finish: "tool_calls",
				caller: []string{`0:mine:{"a":1}`, `1:get_tiem:{"timezone":"Europe/Paris"}`}},
		},
		{
			name:   "invented on the final round goes back to the caller",
			rounds: []fakeupstream.Round{{Content: "No tools.", ToolCalls: []fakeupstream.ToolCall{timeCall, tiem}, ArgsChunk: 5}},
			hosted: []string{"get_time"}, maxRounds: 0,
			want: want{upstream: 1, statuses: []string{"get_time:skipped"}, final: []string{"get_tiem"}, finish: "tool_calls",
				caller: []string{`0:get_tiem:{"timezone":"Europe/Paris"}`}},
		},
		{
			name:   "without hosted tools nothing is invented",
			rounds: []fakeupstream.Round{{ToolCalls: []fakeupstream.ToolCall{tiem}, ArgsChunk: 4}},
			hosted: nil, maxRounds: 4,
			want: want{upstream: 1, final: []string{"get_tiem"}, finish: "tool_calls",
				caller: []string{`0:get_tiem:{"timezone":"Europe/Paris"}`}},
		},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				ex, err := tools.NewExecutor(tools.Options{}, append(builtin.All(), sleep.New())...)
				if err != nil {
					t.Fatal(err)
				}
				route, fake := fakeRoute(t, tc.rounds...)
				req := userRequest("what time is it", stream)
				req.Tools = []loop.Function{{Name: "mine", Parameters: json.RawMessage(`{"type":"object"}`)}}
				streamed := map[int]*strings.Builder{}
				var order []int
				names := map[int]string{}
				res, err := loop.NewRunner(ex, loop.RunnerOptions{}).Run(context.Background(), &loop.Run{
					Request: req,
					Hosted:  loop.Hosted{Tools: tc.hosted, MaxToolRounds: tc.maxRounds},
					Route:   route,
					Lang:    catalog.English,
					Caller:  loop.Caller{RequestID: "req_inv"},
					Sink: func(ev loop.Event) error {
						if ev.Kind != loop.EventCallerCallDelta {
							return nil
						}
						b, ok := streamed[ev.CallerIndex]
						if !ok {
							if ev.Name == "" {
								t.Errorf("caller call %d begins without a name", ev.CallerIndex)
							}
							b = &strings.Builder{}
							streamed[ev.CallerIndex] = b
							order = append(order, ev.CallerIndex)
							names[ev.CallerIndex] = ev.Name
						}
						b.WriteString(ev.ArgsDelta)
						return nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				w := tc.want
				if n := len(fake.Requests()); n != w.upstream {
					t.Fatalf("%d upstream calls, want %d", n, w.upstream)
				}
				var statuses []string
				for _, c := range res.Calls {
					statuses = append(statuses, c.Name+":"+string(c.Status))
					if c.Status == loop.StatusFailed && (c.Code != tools.CodeUnknownTool || !c.IsError ||
						!strings.HasPrefix(c.Summary, c.Name+" failed: unknown tool") || !strings.HasPrefix(c.Result, "unknown_tool: ")) {
						t.Errorf("failed call %+v", c)
					}
				}
				if !slices.Equal(statuses, w.statuses) {
					t.Errorf("calls %v, want %v", statuses, w.statuses)
				}
				if w.results != nil {
					var second struct {
						Messages []struct {
							Role       string `json:"role"`
							ToolCallID string `json:"tool_call_id"`
							Content    string `json:"content"`
						} `json:"messages"`
					}
					if err := json.Unmarshal(fake.Requests()[1], &second); err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, m := range second.Messages {
						if m.Role == "tool" {
							got = append(got, m.Content)
						}
					}
					if len(got) != len(w.results) {
						t.Fatalf("tool messages %q, want %d", got, len(w.results))
					}
					for i := range got {
						if !strings.Contains(got[i], w.results[i]) {
							t.Errorf("tool message %d\n got %q\nwant it to hold %q", i, got[i], w.results[i])
						}
					}
				}
				var records []string
				for _, c := range res.Calls {
					if c.ExecutionID == "" {
						continue
					}
					r, err := ex.Journal().Store().Get(context.Background(), tools.LocalAccount, c.ExecutionID)
					if err != nil {
						t.Fatal(err)
					}
					records = append(records, r.ToolName+":"+string(r.State)+":"+r.ErrorCode)
					if r.RunID != res.RunID || r.Round != 0 || r.Face != loop.Face || r.FloorID != "req_inv" || r.CallID != c.ID {
						t.Errorf("record run %q round %d face %q floor %q call %q; want run %s round 0", r.RunID, r.Round, r.Face, r.FloorID, r.CallID, res.RunID)
					}
					if r.ErrorCode != "" && r.Status != journal.Status(tools.StatusError) {
						t.Errorf("refusal recorded with status %s", r.Status)
					}
				}
				if !slices.Equal(records, w.journal) {
					t.Errorf("journal %v, want %v", records, w.journal)
				}
				var final []string
				for _, c := range res.Message.ToolCalls {
					final = append(final, c.Name)
				}
				if !slices.Equal(final, w.final) || res.FinishReason != w.finish {
					t.Errorf("final calls %v finish %q, want %v %q", final, res.FinishReason, w.final, w.finish)
				}
				var caller []string
				for _, i := range order {
					caller = append(caller, fmt.Sprintf("%d:%s:%s", i, names[i], streamed[i]))
				}
				if !stream {
					if caller != nil {
						t.Errorf("caller call events without a stream: %v", caller)
					}
					return
				}
				if !slices.Equal(caller, w.caller) {
					t.Errorf("streamed caller calls\n got %v\nwant %v", caller, w.caller)
				}
			})
		}
	}
}
