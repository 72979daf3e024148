package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
)

// approvalRig is an executor with one tool, an in-memory journal and
// approval store, and a clock the test moves.
type approvalRig struct {
	exec  *tools.Executor
	store *journal.MemStore
	tool  *effectTool
	now   atomic.Int64
}

func newApprovalRig(t *testing.T, effect catalog.SideEffect, opts tools.Options) *approvalRig {
	t.Helper()
	r := &approvalRig{store: journal.NewMemStore(), tool: &effectTool{effect: effect}}
	r.now.Store(time.UnixMilli(1_790_000_000_000).UnixNano())
	opts.Clock = func() time.Time { return time.Unix(0, r.now.Load()).UTC() }
	if opts.Policies == nil {
		opts.Policies = map[string]approval.Policy{}
	}
	r.exec, _ = newExec(t, r.store, opts, r.tool)
	return r
}

func (r *approvalRig) advance(d time.Duration) { r.now.Add(int64(d)) }

func (r *approvalRig) call(t *testing.T, args string, confirm tools.Confirmer) *tools.Outcome {
	t.Helper()
	out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(args),
		Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct"}, Face: "mcp"}, Confirm: confirm})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// states returns the states of an execution's events, with the detail of
// the event in state st.
func (r *approvalRig) states(t *testing.T, id string, st journal.State) ([]journal.State, json.RawMessage) {
	t.Helper()
	evs, err := r.store.Events(context.Background(), "acct", id)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.State
	var detail json.RawMessage
	for _, e := range evs {
		if e.Kind == "" {
			out = append(out, e.State)
		}
		if e.State == st && e.Kind == "" {
			detail = e.Detail
		}
	}
	return out, detail
}

type requiredDetails struct {
	Error struct {
		Code       string          `json:"code"`
		ApprovalID string          `json:"approval_id"`
		Tool       string          `json:"tool"`
		Arguments  json.RawMessage `json:"arguments"`
		ExpiresAt  string          `json:"expires_at"`
	} `json:"error"`
}

func approvalID(t *testing.T, out *tools.Outcome) string {
	t.Helper()
	var d requiredDetails
	if err := json.Unmarshal(out.Structured, &d); err != nil || d.Error.ApprovalID == "" {
		t.Fatalf("no approval id in %s (%v)", out.Structured, err)
	}
	return d.Error.ApprovalID
}

func TestApprovalPolicyDecidesWhichCallsAsk(t *testing.T) {
	tests := []struct {
		name    string
		effect  catalog.SideEffect
		config  approval.Policy // Options.Policies of the tool, "" for none
		session *string
		asks    bool
	}{
		{"IrreversibleByDefault", catalog.SideEffectIrreversible, "", nil, true},
		{"SandboxByDefault", catalog.SideEffectSandbox, "", nil, false},
		{"ReadOnlyByDefault", catalog.SideEffectNone, "", nil, false},
		{"ConfigNever", catalog.SideEffectIrreversible, approval.Never, nil, false},
		{"ConfigAlwaysOnAReadOnlyTool", catalog.SideEffectNone, approval.Always, nil, true},
		{"SessionTightens", catalog.SideEffectNone, approval.Never, ptr("always"), true},
		{"SessionCannotLoosen", catalog.SideEffectIrreversible, "", ptr("never"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sessions := session.NewMemStore()
			opts := tools.Options{Sessions: sessions}
			if tc.config != "" {
				opts.Policies = map[string]approval.Policy{"effect": tc.config}
			}
			r := newApprovalRig(t, tc.effect, opts)
			caller := tools.Caller{Identity: identity.Identity{AccountID: "acct"}, Face: "mcp", SessionID: "s1"}
			if tc.session != nil {
				p := session.Default()
				p.RequireApproval = tc.session
				if _, err := sessions.TouchSession(context.Background(), "acct", "s1", time.Now()); err != nil {
					t.Fatal(err)
				}
				if err := sessions.SetSessionPermissions(context.Background(), "acct", "s1", p, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{}`), Caller: caller})
			if err != nil {
				t.Fatal(err)
			}
			if asked := out.Code == tools.CodeApprovalRequired; asked != tc.asks || (!tc.asks && out.IsError) {
				t.Fatalf("outcome %s %s, want asks=%v", out.Code, out.Message, tc.asks)
			}
			if got := r.tool.runs.Load(); got != int64(map[bool]int{true: 0, false: 1}[tc.asks]) {
				t.Errorf("tool ran %d times", got)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestApprovalRequiredThenApprovedRunsTheSameCallOnce(t *testing.T) {
	r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{})
	args := `{"n": 7}`
	out := r.call(t, args, nil)
	if out.Code != tools.CodeApprovalRequired || out.Status != tools.StatusDenied || r.tool.runs.Load() != 0 {
		t.Fatalf("first call: %+v", out)
	}
	var d requiredDetails
	_ = json.Unmarshal(out.Structured, &d)
	if d.Error.Tool != "effect" || string(d.Error.Arguments) != `{"n":7}` || d.Error.ExpiresAt != "2026-09-21T14:28:20Z" {
		t.Errorf("details %s", out.Structured)
	}
	id := approvalID(t, out)
	states, detail := r.states(t, out.ExecutionID, journal.StateAuthorizationRejected)
	if !slices.Equal(states, []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorizationRejected}) || !json.Valid(detail) {
		t.Errorf("first call's events %v", states)
	}
	rec, _ := r.store.Get(context.Background(), "acct", out.ExecutionID)
	if rec.ErrorCode != tools.CodeApprovalRequired || !containsID(rec.Result, id) {
		t.Errorf("journal record %s %s", rec.ErrorCode, rec.Result)
	}

	// Asking again before a decision: a new pending approval, nothing runs.
	if again := r.call(t, args, nil); again.Code != tools.CodeApprovalRequired || approvalID(t, again) == id {
		t.Fatalf("second undecided call: %+v", again)
	}

	r.advance(time.Minute)
	a, err := r.exec.DecideApproval(context.Background(), "acct", id, approval.Decision{Approve: true, By: "key_1", Via: approval.ViaREST})
	if err != nil || a.Status != approval.Approved {
		t.Fatalf("approve: %+v %v", a, err)
	}
	// Another account's id is not found; a second decision is refused.
	if _, err := r.exec.DecideApproval(context.Background(), "other", id, approval.Decision{Approve: true, By: "x"}); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("another account decided: %v", err)
	}
	if _, err := r.exec.DecideApproval(context.Background(), "acct", id, approval.Decision{By: "x"}); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("decided twice: %v", err)
	}

	// A changed argument is another invocation: it needs its own approval.
	if changed := r.call(t, `{"n":8}`, nil); changed.Code != tools.CodeApprovalRequired || r.tool.runs.Load() != 0 {
		t.Fatalf("changed args ran: %+v", changed)
	}
	// The same invocation, spelled otherwise (whitespace, the default
	// filled in), runs under the approval.
	ran := r.call(t, `{ "n" :7 }`, nil)
	if ran.IsError || r.tool.runs.Load() != 1 {
		t.Fatalf("approved call: %+v", ran)
	}
	states, detail = r.states(t, ran.ExecutionID, journal.StatePrepared)
	want := []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAuthorized,
		journal.StatePrepared, journal.StateExecuting, journal.StateCommitted, journal.StateObserved}
	if !slices.Equal(states, want) {
		t.Errorf("approved call's events %v", states)
	}
	var prepared struct {
		Confirmation struct {
			ApprovalID string `json:"approval_id"`
			DecidedBy  string `json:"decided_by"`
			DecidedVia string `json:"decided_via"`
			DecidedAt  string `json:"decided_at"`
		} `json:"confirmation"`
	}
	if err := json.Unmarshal(detail, &prepared); err != nil || prepared.Confirmation.ApprovalID != id ||
		prepared.Confirmation.DecidedBy != "key_1" || prepared.Confirmation.DecidedVia != "rest" || prepared.Confirmation.DecidedAt == "" {
		t.Errorf("prepared detail %s", detail)
	}
	got, _ := r.exec.Approvals().GetApproval(context.Background(), "acct", id)
	if got.Status != approval.Consumed || got.ConsumedBy != ran.ExecutionID {
		t.Errorf("approval after the call: %+v", got)
	}
	// A third identical call needs a new approval.
	if third := r.call(t, args, nil); third.Code != tools.CodeApprovalRequired || r.tool.runs.Load() != 1 {
		t.Fatalf("third call: %+v", third)
	}
}

func containsID(b []byte, id string) bool {
	return len(id) > 0 && json.Valid(b) && slices.Contains(splitQuoted(b), id)
}

func splitQuoted(b []byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case string:
			out = append(out, x)
		}
	}
	var v any
	_ = json.Unmarshal(b, &v)
	walk(v)
	return out
}

func TestAnApprovalExpires(t *testing.T) {
	tests := []struct {
		name     string
		decideAt time.Duration // after the request
		callAt   time.Duration // after the request
		decided  bool
		runs     bool
	}{
		{"DecidedAndUsedInTime", time.Minute, 14 * time.Minute, true, true},
		{"DecidedTooLate", 15 * time.Minute, 16 * time.Minute, false, false},
		{"UsedTooLate", time.Minute, 15 * time.Minute, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{})
			id := approvalID(t, r.call(t, `{}`, nil))
			r.advance(tc.decideAt)
			_, err := r.exec.DecideApproval(context.Background(), "acct", id, approval.Decision{Approve: true, By: "k", Via: approval.ViaREST})
			var se *approval.StateError
			if tc.decided != (err == nil) || !tc.decided && (!errors.As(err, &se) || se.Status != approval.Expired) {
				t.Fatalf("decide: %v", err)
			}
			r.advance(tc.callAt - tc.decideAt)
			out := r.call(t, `{}`, nil)
			if (r.tool.runs.Load() == 1) != tc.runs || tc.runs == out.IsError {
				t.Errorf("runs=%d outcome %s", r.tool.runs.Load(), out.Code)
			}
		})
	}
}

func TestConcurrentIdenticalCallsConsumeOneApproval(t *testing.T) {
	r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{})
	id := approvalID(t, r.call(t, `{"n":3}`, nil))
	if _, err := r.exec.DecideApproval(context.Background(), "acct", id, approval.Decision{Approve: true, By: "k"}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	outs := make([]*tools.Outcome, n)
	for i := range n {
		wg.Go(func() {
			out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":3}`),
				Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct"}}})
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	ok, required := 0, 0
	for _, o := range outs {
		switch {
		case o == nil:
		case !o.IsError:
			ok++
		case o.Code == tools.CodeApprovalRequired:
			required++
		}
	}
	if ok != 1 || required != n-1 || r.tool.runs.Load() != 1 {
		t.Fatalf("%d ran, %d need approval, tool ran %d times", ok, required, r.tool.runs.Load())
	}
}

func TestAConfirmerDecidesWhileTheCallWaits(t *testing.T) {
	yes := func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
		return approval.Decision{Approve: true, By: "terminal", Via: approval.ViaTerminal}, nil
	}
	no := func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
		return approval.Decision{By: "terminal", Via: approval.ViaTerminal, Reason: "not today </script>\u202e"}, nil
	}
	gone := func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
		return approval.Decision{}, errors.New("the user closed the form")
	}
	waitCtx := []journal.State{journal.StateProposed, journal.StateParsed, journal.StateValidated, journal.StateAwaitingApproval}
	tests := []struct {
		name    string
		confirm tools.Confirmer
		cancel  bool
		code    string
		status  approval.Status
		states  []journal.State
	}{
		{"Accept", yes, false, "", approval.Consumed, append(slices.Clone(waitCtx), journal.StateAuthorized, journal.StatePrepared,
			journal.StateExecuting, journal.StateCommitted, journal.StateObserved)},
		{"Decline", no, false, tools.CodeApprovalDeclined, approval.Declined, append(slices.Clone(waitCtx), journal.StateAuthorizationRejected)},
		{"ConfirmerFails", gone, false, tools.CodeApprovalDeclined, approval.Declined, append(slices.Clone(waitCtx), journal.StateAuthorizationRejected)},
		{"CallerGoesAway", nil, true, tools.CodeCancelled, approval.Pending, append(slices.Clone(waitCtx), journal.StateCancelledBeforeCommit)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var seen tools.ApprovalRequest
			confirm := func(c context.Context, req tools.ApprovalRequest) (approval.Decision, error) {
				seen = req
				// While it waits, the journal shows the call opened in
				// awaiting_approval.
				if rec, err := r.store.Get(context.Background(), "acct", req.Approval.ExecutionID); err != nil || rec.Lifecycle != journal.Opened {
					t.Errorf("while waiting: %+v %v", rec.Lifecycle, err)
				}
				if tc.cancel {
					cancel()
					<-c.Done()
					return approval.Decision{}, c.Err()
				}
				return tc.confirm(c, req)
			}
			out, err := r.exec.Execute(ctx, tools.Proposal{Tool: "effect", Args: json.RawMessage(`{"n":2}`),
				Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct"}, Face: "cli"}, Lang: catalog.English, Confirm: confirm})
			if err != nil {
				t.Fatal(err)
			}
			if out.Code != tc.code || (tc.code == "") == out.IsError {
				t.Fatalf("outcome %s: %s", out.Code, out.Message)
			}
			if seen.Description != "test tool" || string(seen.Approval.Args) != `{"n":2}` || seen.Policy != approval.BySideEffect ||
				seen.PolicyBasis != approval.BasisPlatform || seen.Approval.Face != "cli" {
				t.Errorf("request %+v", seen)
			}
			if runs := r.tool.runs.Load(); runs != map[bool]int64{true: 1, false: 0}[tc.code == ""] {
				t.Errorf("ran %d", runs)
			}
			a, _ := r.exec.Approvals().GetApproval(context.Background(), "acct", seen.Approval.ID)
			if a.Status != tc.status {
				t.Errorf("approval %s, want %s", a.Status, tc.status)
			}
			if states, _ := r.states(t, out.ExecutionID, ""); !slices.Equal(states, tc.states) {
				t.Errorf("events %v\nwant %v", states, tc.states)
			}
			rec, _ := r.store.Get(context.Background(), "acct", out.ExecutionID)
			if rec.Lifecycle != journal.Finished {
				t.Errorf("record left %s", rec.Lifecycle)
			}
		})
	}
}
