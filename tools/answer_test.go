package tools_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// A Confirmer that asks in a later request (ErrAskLater) ends the call
// approval_required after awaiting_approval, its approval pending; the
// call that carries the answer runs only when the answer names a pending
// approval of its own account, session and invocation, decides it and
// consumes it — once.
func TestAnAnswerCarriedByALaterCallDecidesItsApproval(t *testing.T) {
	later := func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
		return approval.Decision{}, tools.ErrAskLater
	}
	yes := approval.Decision{Approve: true, By: "key_1", Via: approval.ViaElicitation}
	no := approval.Decision{By: "key_1", Via: approval.ViaElicitation, Reason: "the user chose decline"}
	tests := []struct {
		name    string
		account string
		session string
		args    string
		id      func(asked string) string
		d       approval.Decision
		after   time.Duration
		code    string
		status  approval.Status // the asked approval's, afterwards
	}{
		{"Approve", "acct", "s1", `{"n":2}`, nil, yes, 0, "", approval.Consumed},
		{"Decline", "acct", "s1", `{"n":2}`, nil, no, 0, tools.CodeApprovalDeclined, approval.Declined},
		{"ChangedArguments", "acct", "s1", `{"n":3}`, nil, yes, 0, tools.CodeApprovalInvalid, approval.Pending},
		{"SameArgumentsOtherSpelling", "acct", "s1", `{"n":2.0}`, nil, yes, 0, "", approval.Consumed},
		{"AnotherAccount", "other", "s1", `{"n":2}`, nil, yes, 0, tools.CodeApprovalInvalid, approval.Pending},
		{"AnotherSession", "acct", "s2", `{"n":2}`, nil, yes, 0, tools.CodeApprovalInvalid, approval.Pending},
		{"Expired", "acct", "s1", `{"n":2}`, nil, yes, 15 * time.Minute, tools.CodeApprovalInvalid, approval.Pending},
		{"NotAnID", "acct", "s1", `{"n":2}`, func(string) string { return "apr_\u202e" }, yes, 0, tools.CodeApprovalInvalid, approval.Pending},
		{"UnknownID", "acct", "s1", `{"n":2}`, func(string) string { return approval.NewID() }, yes, 0, tools.CodeApprovalInvalid, approval.Pending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{})
			exec := func(account, session, args string, confirm tools.Confirmer, ans *tools.Answer) *tools.Outcome {
				t.Helper()
				out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(args),
					Caller:  tools.Caller{Identity: identity.Identity{AccountID: account}, Face: "mcp", SessionID: session},
					Confirm: confirm, Answer: ans})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			first := exec("acct", "s1", `{"n":2}`, later, nil)
			asked := approvalID(t, first)
			if first.Code != tools.CodeApprovalRequired || r.tool.runs.Load() != 0 {
				t.Fatalf("the asking call: %s, %d runs", first.Code, r.tool.runs.Load())
			}
			if states, _ := r.states(t, first.ExecutionID, ""); !slices.Contains(states, journal.StateAwaitingApproval) ||
				states[len(states)-1] != journal.StateAuthorizationRejected {
				t.Errorf("the asking call's events %v", states)
			}
			id := asked
			if tc.id != nil {
				id = tc.id(asked)
			}
			r.advance(tc.after)
			out := exec(tc.account, tc.session, tc.args, later, &tools.Answer{ApprovalID: id, Decision: tc.d})
			if out.Code != tc.code || (tc.code == "") == out.IsError {
				t.Fatalf("outcome %s: %s", out.Code, out.Message)
			}
			if runs := r.tool.runs.Load(); runs != map[bool]int64{true: 1, false: 0}[tc.code == ""] {
				t.Errorf("ran %d", runs)
			}
			a, _ := r.exec.Approvals().GetApproval(context.Background(), "acct", asked)
			if a.Status != tc.status {
				t.Errorf("approval %s, want %s", a.Status, tc.status)
			}
			if tc.code == "" {
				if a.DecidedVia != approval.ViaElicitation || a.ConsumedBy != out.ExecutionID {
					t.Errorf("approval %+v", a)
				}
				// A replay of the same answer runs nothing.
				again := exec(tc.account, tc.session, tc.args, later, &tools.Answer{ApprovalID: id, Decision: tc.d})
				if again.Code != tools.CodeApprovalInvalid || r.tool.runs.Load() != 1 {
					t.Errorf("replayed answer: %s, %d runs", again.Code, r.tool.runs.Load())
				}
			}
		})
	}
}

// Of eight requests carrying the same answer at once (a client's retry
// replayed, or raced on two replicas), one runs the call; the others end
// approval_invalid.
func TestConcurrentAnswersRunTheCallOnce(t *testing.T) {
	r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{})
	later := func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
		return approval.Decision{}, tools.ErrAskLater
	}
	p := tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":5}`),
		Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct"}, Face: "mcp"}, Confirm: later}
	first, err := r.exec.Execute(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	p.Answer = &tools.Answer{ApprovalID: approvalID(t, first), Decision: approval.Decision{Approve: true, By: "k", Via: approval.ViaElicitation}}
	const n = 8
	codes := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := r.exec.Execute(context.Background(), p)
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = out.Code
		})
	}
	wg.Wait()
	ran, invalid := 0, 0
	for _, c := range codes {
		switch c {
		case "":
			ran++
		case tools.CodeApprovalInvalid:
			invalid++
		}
	}
	if ran != 1 || invalid != n-1 || r.tool.runs.Load() != 1 {
		t.Fatalf("%d ran, %d invalid (%v), tool ran %d times", ran, invalid, codes, r.tool.runs.Load())
	}
}
