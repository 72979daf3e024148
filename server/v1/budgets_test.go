package v1_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// budgetFaces are the three formats with a request that declares
// random_choice, and the path each is posted to.
var budgetFaces = []struct {
	name, path, body string
	protocols        []loop.Dialect
}{
	{"chat", "/v1/chat/completions", `{"model":"fake-1","messages":[{"role":"user","content":"pick five"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"never"}]}`,
		[]loop.Dialect{loop.DialectOpenAI}},
	{"messages", "/v1/messages", `{` + messagesPrefix + `,"messages":[{"role":"user","content":"pick five"}],` + mcpServers + `,"tools":[` + toolsetDice + `]}`,
		protocols},
	{"responses", "/v1/responses", `{"model":"fake-1","input":"pick five","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"never"}]}`,
		protocols},
}

func withBudgets(b loop.Budgets) envOption {
	return func(o *v1.Options, _ *recordingExec) { o.Budgets = b }
}

// A tool-call budget of 2 against a round of 5 calls, on every format,
// streamed and not: 2 run, 3 are skipped (in the extension field, not in
// the content), the next upstream call is the final one (tool choice none)
// and the extension field says stopped_by tool_calls.
func TestBudgetStopsEveryFace(t *testing.T) {
	five := make([]fakeupstream.ToolCall, 5)
	for i := range five {
		five[i] = call(fmt.Sprintf("call_%d", i), "random_choice", fmt.Sprintf(`{"options":["o%d"]}`, i))
	}
	rounds := []fakeupstream.Round{
		{ToolCalls: five, Usage: usage(30, 5, 0, 0)},
		{Content: "Two picked.", Usage: usage(40, 6, 0, 0)},
	}
	for _, f := range budgetFaces {
		for _, p := range f.protocols {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%s", f.name, p, modeName(stream)), func(t *testing.T) {
					label := "toolhost"
					e := newProtocolEnv(t, label, p, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}},
						withBudgets(loop.Budgets{ToolCalls: 2}))
					body := f.body
					if stream {
						body = withStream(body)
						if f.name == "chat" {
							body = strings.Replace(body, `"stream":true,`, `"stream":true,"stream_options":{"include_usage":true},`, 1)
						}
					}
					resp := e.postTo(f.path, body, nil)
					if resp.status != http.StatusOK {
						t.Fatalf("status %d: %s", resp.status, resp.body)
					}
					name := fmt.Sprintf("budget_tool_calls.%s.%s.%s.golden", f.name, p, modeName(stream))
					switch {
					case stream && f.name == "chat":
						golden(t, name, normalizedStream(t, resp.body, label))
					case stream:
						golden(t, name, clockFree(t, p, normalizedEvents(t, resp.body, label)))
					default:
						golden(t, name, clockFree(t, p, normalizedBody(t, resp.body, label)))
					}
					if n := len(e.exec.Proposals()); n != 2 {
						t.Errorf("executed %d calls, want 2", n)
					}
					checkFinalWithoutTools(t, e, p)
					if !strings.Contains(string(resp.body), `"stopped_by":"tool_calls"`) {
						t.Errorf("no stopped_by in %s", resp.body)
					}
					if got := strings.Count(string(resp.body), `"status":"skipped"`); got < 3 {
						t.Errorf("%d skipped calls reported, want 3", got)
					}
					for _, id := range []string{"call_2", "call_3", "call_4"} {
						if strings.Count(string(resp.body), id) != strings.Count(string(resp.body), `"id":"`+id+`","ms":0,"name":"random_choice","round":0,"status":"skipped"`) {
							t.Errorf("skipped %s shows outside the extension field", id)
						}
					}
					recs := e.rounds.ByRequest("", "req_golden")
					if len(recs) != 2 || recs[1].StoppedBy != loop.StopToolCalls || recs[0].StoppedBy != "" {
						t.Errorf("round records %+v", recs)
					}
				})
			}
		}
	}
}

// checkFinalWithoutTools: the last upstream call forbids tools, in the
// route's protocol.
func checkFinalWithoutTools(t *testing.T, e *env, p loop.Dialect) {
	t.Helper()
	reqs := e.upstreamRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream calls, want 2", len(reqs))
	}
	tc := reqs[1]["tool_choice"]
	if p == loop.DialectAnthropic {
		m, _ := tc.(map[string]any)
		if m["type"] != "none" {
			t.Errorf("final tool_choice %v", tc)
		}
		return
	}
	if tc != "none" {
		t.Errorf("final tool_choice %v", tc)
	}
}

// A key's budgets lower the server's; a failure to read them fails the
// request instead of running it unbounded.
func TestKeyBudgetsLowerTheServers(t *testing.T) {
	five := make([]fakeupstream.ToolCall, 5)
	for i := range five {
		five[i] = call(fmt.Sprintf("call_%d", i), "random_choice", `{"options":["x"]}`)
	}
	rounds := []fakeupstream.Round{{ToolCalls: five}, {Content: "done"}}
	cases := []struct {
		name    string
		key     func(ctx context.Context, keyID string) (loop.Budgets, error)
		status  int
		execute int
	}{
		{"key_lower", func(context.Context, string) (loop.Budgets, error) { return loop.Budgets{ToolCalls: 1}, nil }, http.StatusOK, 1},
		{"key_higher", func(context.Context, string) (loop.Budgets, error) { return loop.Budgets{ToolCalls: 100}, nil }, http.StatusOK, 3},
		{"key_unreadable", func(context.Context, string) (loop.Budgets, error) { return loop.Budgets{}, errors.New("store down") }, http.StatusServiceUnavailable, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "toolhost", rounds, withBudgets(loop.Budgets{ToolCalls: 3}), func(o *v1.Options, _ *recordingExec) {
				o.KeyBudgets = tc.key
			})
			resp := e.post(context.Background(), budgetFaces[0].body, map[string]string{"X-Test-Key": "key_1"})
			if resp.status != tc.status {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			if n := len(e.exec.Proposals()); n != tc.execute {
				t.Errorf("executed %d, want %d", n, tc.execute)
			}
		})
	}
}
