package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// wait_job reports a call that is still running at once (wait_seconds 0),
// waits for one to finish and then answers with its status and result as
// read_result reads it, and knows no execution of another account — on
// every journal store.
func TestWaitJobWaitsForAnExecutionToFinish(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tool := &effectTool{effect: catalog.SideEffectSandbox, gate: make(chan struct{}), started: make(chan struct{}, 1)}
			exec, _ := newExec(t, open(t), tools.Options{}, tool)
			running := make(chan *tools.Outcome, 1)
			go func() {
				out, err := exec.Execute(ctx, tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":7}`), Caller: tools.Caller{Face: "mcp"}})
				if err != nil {
					t.Error(err)
				}
				running <- out
			}()
			<-tool.started
			id := openedID(t, exec)

			st := waitJob(t, exec, tools.Caller{Face: "mcp"}, fmt.Sprintf(`{"execution_id":%q,"wait_seconds":0}`, id))
			if st.Finished || st.Status != journal.StatusRunning || st.ToolName != "effect" || st.Content != nil {
				t.Errorf("while it runs: %+v", st)
			}
			// Another account's wait names nothing.
			other := tools.Caller{Face: "mcp", Identity: identity.Identity{AccountID: "acct_other"}}
			if out := call(t, exec, other, fmt.Sprintf(`{"execution_id":%q,"wait_seconds":0}`, id)); out.Code != tools.CodeNotFound {
				t.Errorf("another account's wait: %+v", out)
			}

			waited := make(chan tools.JobState, 1)
			go func() { waited <- waitJob(t, exec, tools.Caller{Face: "mcp"}, fmt.Sprintf(`{"execution_id":%q}`, id)) }()
			close(tool.gate)
			st = <-waited
			if out := <-running; out.IsError {
				t.Fatalf("the call: %+v", out)
			}
			if !st.Finished || st.Status != journal.StatusSuccess || st.Content == nil || !strings.Contains(*st.Content, "run 1 of n=7") ||
				st.Truncated == nil || *st.Truncated {
				t.Errorf("once finished: %+v", st)
			}
		})
	}
}

// A client that gives up waiting (MCP notifications/cancelled on its
// wait_job call) ends its wait, not the job: the wait ends cancelled and the
// call it waited for still runs to its end.
func TestCancelledWaitLeavesTheJobRunning(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			tool := &effectTool{effect: catalog.SideEffectSandbox, gate: make(chan struct{}), started: make(chan struct{}, 1)}
			exec, _ := newExec(t, open(t), tools.Options{}, tool)
			running := make(chan *tools.Outcome, 1)
			go func() {
				out, err := exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":3}`), Caller: tools.Caller{Face: "mcp"}})
				if err != nil {
					t.Error(err)
				}
				running <- out
			}()
			<-tool.started
			id := openedID(t, exec)
			ctx, cancel := context.WithCancel(context.Background())
			waited := make(chan *tools.Outcome, 1)
			go func() {
				out, err := exec.Execute(ctx, tools.Proposal{Tool: tools.WaitJobTool, Args: json.RawMessage(fmt.Sprintf(`{"execution_id":%q,"wait_seconds":600}`, id)), Caller: tools.Caller{Face: "mcp"}})
				if err != nil {
					t.Error(err)
				}
				waited <- out
			}()
			cancel()
			if out := <-waited; out == nil || !out.IsError || out.Code != tools.CodeCancelled {
				t.Fatalf("the cancelled wait: %+v, want cancelled", out)
			}
			close(tool.gate)
			if out := <-running; out == nil || out.IsError {
				t.Fatalf("the call waited for: %+v, want it to run to its end", out)
			}
		})
	}
}

// Bad arguments and unknown ids are tool errors the model can read.
func TestWaitJobRefusesWhatNamesNoExecution(t *testing.T) {
	exec, _ := newExec(t, journal.NewMemStore(), tools.Options{})
	for _, tc := range []struct{ args, code string }{
		{`{"execution_id":"0190b6a2-0000-7000-8000-000000000000"}`, tools.CodeNotFound},
		{`{"execution_id":"` + strings.Repeat("x", 65) + `"}`, tools.CodeInvalidArgs},
		{`{"execution_id":"a","wait_seconds":601}`, tools.CodeInvalidArgs},
		{`{"execution_id":"a","wait_seconds":-1}`, tools.CodeInvalidArgs},
		{`{"execution_id":"a","execution_id":"b"}`, tools.CodeInvalidJSON},
		{`{"execution_id":"<script>alert(1)</script>","wait_seconds":0}`, tools.CodeNotFound},
	} {
		if out := call(t, exec, tools.Caller{Face: "mcp"}, tc.args); !out.IsError || out.Code != tc.code {
			t.Errorf("%s: %+v, want %s", tc.args, out, tc.code)
		}
	}
}

func call(t *testing.T, exec *tools.Executor, c tools.Caller, args string) *tools.Outcome {
	t.Helper()
	out, err := exec.Execute(context.Background(), tools.Proposal{Tool: tools.WaitJobTool, Args: json.RawMessage(args), Caller: c})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitJob(t *testing.T, exec *tools.Executor, c tools.Caller, args string) tools.JobState {
	t.Helper()
	out := call(t, exec, c, args)
	if out.IsError {
		t.Fatalf("wait_job %s: %+v", args, out)
	}
	var st tools.JobState
	if err := json.Unmarshal(out.Structured, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// openedID is the id of the one call the executor's journal holds opened.
func openedID(t *testing.T, exec *tools.Executor) string {
	t.Helper()
	recs, err := exec.Journal().Store().Opened(context.Background())
	if err != nil || len(recs) != 1 {
		t.Fatalf("opened records: %+v %v", recs, err)
	}
	return recs[0].ID
}
