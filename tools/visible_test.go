package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/journal"
)

// A proposal with Visible names is looked up among them only (invariant
// 6.1.2: the tool must be in this request's set): a name outside them is
// refused at lookup with unknown_tool even when the executor knows the
// tool, the refusal lists the visible names sorted and deduplicated, no
// near name is matched, and the journal holds the refusal as
// parse_rejected with the run id and round of the call.
func TestProposalVisibleNamesRefuseAtLookup(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name     string
		tool     string
		visible  []string
		wantCode string
		wantText string // the whole message when wantCode is set
		wantRuns int64
	}{
		{name: "nil visible: no restriction", tool: "probe", wantRuns: 1},
		{name: "visible tool runs", tool: "probe", visible: []string{"probe", "get_weather"}, wantRuns: 1},
		{name: "invented name lists the visible ones sorted", tool: "get_tiem", visible: []string{"probe", "get_weather", "get_time", "probe"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "get_tiem"; available tools: get_time, get_weather, probe`},
		{name: "known tool outside the request refused", tool: "probe", visible: []string{"get_weather"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "probe"; available tools: get_weather`},
		{name: "near name not matched", tool: "prob", visible: []string{"probe"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "prob"; available tools: probe`},
		{name: "case not folded", tool: "Probe", visible: []string{"probe"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "Probe"; available tools: probe`},
		{name: "cyrillic look-alike not matched", tool: "prоbe", visible: []string{"probe"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "prоbe"; available tools: probe`},
		{name: "trailing space not trimmed", tool: "probe ", visible: []string{"probe"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "probe "; available tools: probe`},
		{name: "empty visible set refuses everything", tool: "probe", visible: []string{},
			wantCode: CodeUnknownTool, wantText: `unknown tool "probe"; no tools are available`},
		{name: "huge name quoted bounded", tool: long, visible: []string{"probe"},
			wantCode: CodeUnknownTool, wantText: `unknown tool "` + strings.Repeat("x", 200) + `…(1048576 bytes in all)"; available tools: probe`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &probe{name: "probe", run: echo}
			e, err := NewExecutor(Options{}, p)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Execute(context.Background(), Proposal{
				Tool: tt.tool, Args: json.RawMessage(`{}`), CallID: "call_1", Visible: tt.visible,
				Caller: Caller{Face: "hosted", FloorID: "req_1", RunID: "run_1", Round: 2},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.calls.Load(); got != tt.wantRuns {
				t.Fatalf("tool ran %d times, want %d", got, tt.wantRuns)
			}
			if out.Code != tt.wantCode {
				t.Fatalf("code %q (%s), want %q", out.Code, out.Text, tt.wantCode)
			}
			r := record(t, e, LocalAccount, out.ExecutionID)
			if r.RunID != "run_1" || r.Round != 2 || r.FloorID != "req_1" || r.CallID != "call_1" || r.Face != "hosted" {
				t.Errorf("record run %q round %d floor %q call %q face %q", r.RunID, r.Round, r.FloorID, r.CallID, r.Face)
			}
			if tt.wantCode == "" {
				if out.IsError || r.State != journal.StateObserved {
					t.Errorf("outcome %+v, state %s", out, r.State)
				}
				return
			}
			if !out.IsError || out.Status != StatusError || out.Text != tt.wantText {
				t.Errorf("outcome status %s text\n got %q\nwant %q", out.Status, out.Text, tt.wantText)
			}
			if r.State != journal.StateParseRejected || r.Status != journal.Status(StatusError) || r.ErrorCode != CodeUnknownTool || r.Commit != journal.CommitDiscarded {
				t.Errorf("record state %s status %s code %s commit %s", r.State, r.Status, r.ErrorCode, r.Commit)
			}
		})
	}
}
