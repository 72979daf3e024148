package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// StatusApprovalRequired is the status of a hosted call the pipeline did
// not run because it needs its user's approval (tools.CodeApprovalRequired):
// the run pauses after its round (Result.Awaiting).
const StatusApprovalRequired Status = "approval_required"

// ApprovalPolicy is a request's require_approval. Like a session's
// tool-permissions it only tightens: a tool whose own policy asks still
// asks under "never" (tools.Proposal.RequireApproval).
type ApprovalPolicy struct {
	// Default applies to hosted tools Tools does not name ("" for none).
	Default approval.Policy
	// Tools are the policies of named tools.
	Tools map[string]approval.Policy
}

// For is the request's policy for the tool name.
func (p ApprovalPolicy) For(name string) approval.Policy {
	if pol, ok := p.Tools[name]; ok {
		return pol
	}
	return p.Default
}

// ApprovalAnswer is the caller's decision on an approval a paused run asked
// for (an mcp_approval_response item; an entry of the extension field's
// approvals). The face puts the call it decides into Request.Messages: an
// assistant ToolCall and a RoleTool message whose ApprovalID is ID (Name,
// Args and the result are the loop's to fill in).
type ApprovalAnswer struct {
	// ID is the approval's id.
	ID      string
	Approve bool
	Reason  string
	// Echoed says the caller sent the request back (an
	// mcp_approval_request item) with Name and Args: they must be the
	// approval's tool and arguments.
	Echoed bool
	Name   string
	Args   json.RawMessage
	// Param is where the answer is in the request, for errors.
	Param string
}

// ApprovalError refuses a request whose approval answers cannot be carried
// out; nothing was decided nor run. Status is the HTTP status.
type ApprovalError struct {
	Status  int
	Reason  string
	Param   string
	Message string
}

func (e *ApprovalError) Error() string { return e.Reason + ": " + e.Message }

// Reasons of an ApprovalError.
const (
	// ReasonApprovalUnknown: no approval of the caller's account has the id.
	ReasonApprovalUnknown = "approval_request_unknown"
	// ReasonApprovalMismatch: the echoed request names another tool or
	// other arguments than the approval is bound to.
	ReasonApprovalMismatch = "approval_request_mismatch"
	// ReasonApprovalNotPending: the approval was decided otherwise, or it
	// already ran its call (409).
	ReasonApprovalNotPending = "approval_not_pending"
	// ReasonApprovalExpired: the approval expired before it ran (409).
	ReasonApprovalExpired = "approval_expired"
)

// ApprovalCallID is the call id a decided approval's call has in the
// conversation and in the response (an mcp_call's id): derived from the
// approval id, so a continuation that sends the call back as history gives
// the model the same conversation.
func ApprovalCallID(approvalID string) string {
	return "call_" + strings.TrimPrefix(approvalID, "apr_")
}

// approver is implemented by executors that keep approvals
// (tools.Executor).
type approver interface {
	GetApproval(ctx context.Context, account, id string) (approval.Approval, error)
	DecideApproval(ctx context.Context, account, id string, d approval.Decision) (approval.Approval, error)
}

// readApproval reads the approval an answer names, in account: one it
// does not hold is the caller's 400 approval_request_unknown.
func readApproval(ctx context.Context, ap approver, account string, ans ApprovalAnswer) (approval.Approval, error) {
	a, err := ap.GetApproval(ctx, account, ans.ID)
	if errors.Is(err, approval.ErrNotFound) {
		return a, &ApprovalError{Status: http.StatusBadRequest, Reason: ReasonApprovalUnknown, Param: ans.Param,
			Message: fmt.Sprintf("no approval request %q was made to this account", clipID(ans.ID))}
	}
	if err != nil {
		return a, fmt.Errorf("%w: read approval %s: %w", ErrInternal, ans.ID, err)
	}
	return a, nil
}

// answered is one checked answer with its approval.
type answered struct {
	ApprovalAnswer
	a approval.Approval
	// run says the approved call runs now; otherwise the model is told it
	// was declined.
	run bool
	// decide says the approval is still pending and is decided now.
	decide bool
}

// resume carries out the request's approval answers before the first
// upstream call: every answer is checked first (an unknown id, a changed
// echo or an approval no longer open refuses the request, nothing decided
// or run), then pending approvals are decided (Decision.Via is via, By the
// caller's key), approved calls run exactly the stored invocation under
// the approval, and the placeholders of the conversation are filled in.
// It returns the calls that ran, in the answers' order.
func (r *Runner) resume(ctx context.Context, run *Run, st *runState, runID string, sink Sink) ([]Call, error) {
	answers := run.Request.Approvals
	if len(answers) == 0 {
		return nil, nil
	}
	ap, ok := r.exec.(approver)
	if !ok {
		return nil, &ApprovalError{Status: http.StatusBadRequest, Reason: ReasonApprovalUnknown, Param: answers[0].Param,
			Message: "this deployment keeps no approvals"}
	}
	account := run.Caller.AccountID
	checked := make([]answered, 0, len(answers))
	for _, ans := range answers {
		a, err := readApproval(ctx, ap, account, ans)
		if err != nil {
			return nil, err
		}
		c, err := check(ans, a)
		if err != nil {
			return nil, err
		}
		checked = append(checked, c)
	}
	by := run.Caller.KeyID
	if by == "" {
		by = account
	}
	for _, c := range checked {
		if !c.decide {
			continue
		}
		d := approval.Decision{Approve: c.Approve, By: by, Via: run.Request.ApprovalVia, Reason: c.Reason}
		if _, err := ap.DecideApproval(ctx, account, c.ID, d); err != nil {
			var se *approval.StateError
			if errors.As(err, &se) {
				return nil, &ApprovalError{Status: http.StatusConflict, Reason: ReasonApprovalNotPending, Param: c.Param,
					Message: fmt.Sprintf("approval %s was %s meanwhile", c.ID, se.Status)}
			}
			return nil, fmt.Errorf("%w: decide approval %s: %w", ErrInternal, c.ID, err)
		}
	}
	var calls []Call
	for i, c := range checked {
		if c.run {
			calls = append(calls, Call{Index: i, ID: ApprovalCallID(c.ID), Name: c.a.Tool, Args: c.a.Args, ApprovalID: c.ID})
		}
	}
	if len(calls) > 0 {
		if err := sink(Event{Kind: EventHostedCallsProposed, Calls: cloneCalls(calls)}); err != nil {
			return nil, err
		}
		if err := r.execute(ctx, run, runID, st.names.visible, st.spend, calls, sink); err != nil {
			return nil, err
		}
		if err := sink(Event{Kind: EventHostedCallsDone, Calls: cloneCalls(calls)}); err != nil {
			return nil, err
		}
	}
	st.msgs = fillApprovals(st.msgs, checked, calls, run.Lang)
	return calls, nil
}

// check decides what an answer does with its approval, or refuses it.
func check(ans ApprovalAnswer, a approval.Approval) (answered, error) {
	c := answered{ApprovalAnswer: ans, a: a}
	if ans.Echoed && (ans.Name != a.Tool || !sameJSON(ans.Args, a.Args)) {
		return c, &ApprovalError{Status: http.StatusBadRequest, Reason: ReasonApprovalMismatch, Param: ans.Param,
			Message: fmt.Sprintf("approval request %s is for %s with the arguments %s; the mcp_approval_request sent back differs, so nothing ran", a.ID, a.Tool, clipArgs(a.Args))}
	}
	notPending := func() error {
		return &ApprovalError{Status: http.StatusConflict, Reason: ReasonApprovalNotPending, Param: ans.Param,
			Message: fmt.Sprintf("approval %s is %s; it cannot be approved again (send the mcp_call it ran instead of the approval response)", a.ID, a.Status)}
	}
	switch {
	case a.Status == approval.Pending:
		c.decide, c.run = true, ans.Approve
	case ans.Approve && a.Status == approval.Approved:
		c.run = true
	case ans.Approve && a.Status == approval.Expired:
		return c, &ApprovalError{Status: http.StatusConflict, Reason: ReasonApprovalExpired, Param: ans.Param,
			Message: fmt.Sprintf("approval %s expired at %s; the call did not run, ask the model again", a.ID, a.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"))}
	case ans.Approve:
		return c, notPending()
	case a.Status == approval.Consumed:
		return c, notPending()
	}
	// A decline of a declined, expired or approved approval is history:
	// the model is told again that the call did not run.
	return c, nil
}

// fillApprovals fills in the placeholders of the answers: the tool name
// and arguments of each decided call, and its result (the run call's, or a
// declined note).
func fillApprovals(msgs []Message, checked []answered, calls []Call, lang catalog.Lang) []Message {
	byID := map[string]answered{}
	for _, c := range checked {
		byID[c.ID] = c
	}
	ran := map[string]Call{}
	for _, c := range calls {
		ran[c.ApprovalID] = c
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Role == RoleTool && m.ApprovalID != "" {
			if c, ok := ran[m.ApprovalID]; ok {
				m.Text, m.IsError = c.Result, c.IsError
			} else if a, ok := byID[m.ApprovalID]; ok {
				m.Text, m.IsError = declinedNote(lang, a), true
			}
		}
		if len(m.ToolCalls) > 0 {
			tcs := append([]ToolCall(nil), m.ToolCalls...)
			for j, tc := range tcs {
				if a, ok := byID[tc.ApprovalID]; ok {
					tcs[j].Name, tcs[j].Args = a.a.Tool, a.a.Args
				}
			}
			m.ToolCalls = tcs
		}
		out[i] = m
	}
	return out
}

func declinedNote(lang catalog.Lang, a answered) string {
	msg := fmt.Sprintf("%s: the user declined %s (approval %s); it did not run", tools.CodeApprovalDeclined, a.a.Tool, a.ID)
	if lang != catalog.English {
		msg = fmt.Sprintf("%s：用户拒绝了 %s（批准 %s），未执行", tools.CodeApprovalDeclined, a.a.Tool, a.ID)
	}
	switch {
	case a.Reason == "":
	case lang == catalog.English:
		msg += ": " + a.Reason
	default:
		msg += "：" + a.Reason
	}
	return msg
}

// pending fills a call the pipeline ended approval_required: its approval
// id and the normalized arguments it is bound to.
func pending(c *Call, out *tools.Outcome, lang catalog.Lang) {
	c.Status = StatusApprovalRequired
	c.Result = out.Code + ": " + out.Text
	c.Summary = "awaits approval"
	if lang != catalog.English {
		c.Summary = "等待批准"
	}
	eo, ok := out.ErrorObject()
	if !ok {
		return
	}
	_ = json.Unmarshal(eo.Details["approval_id"], &c.ApprovalID)
	if args := eo.Details["arguments"]; len(args) > 0 {
		c.Args = append([]byte(nil), args...)
	}
}

// Awaiting are the calls of a run that wait for an approval.
func (r *Result) Awaiting() []Call {
	var out []Call
	for _, c := range r.Calls {
		if c.Status == StatusApprovalRequired {
			out = append(out, c)
		}
	}
	return out
}

// queueUntilMeta is sink holding the events of a resumed run back until the
// first upstream id is known (a stream opens with it), then sending them
// right after it.
func queueUntilMeta(sink Sink, held []Event) Sink {
	return func(ev Event) error {
		if err := sink(ev); err != nil {
			return err
		}
		if ev.Kind != EventUpstreamMeta || held == nil {
			return nil
		}
		q := held
		held = nil
		for _, h := range q {
			if err := sink(h); err != nil {
				return err
			}
		}
		return nil
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func clipID(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

func clipArgs(b []byte) string {
	if r := []rune(string(b)); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return string(b)
}

// resumeRun carries out the request's approval answers (resume); in a
// stream their events are held back until the first upstream id is known:
// it returns the sink the run goes on with.
func (r *Runner) resumeRun(ctx context.Context, run *Run, res *Result, st *runState, emit Sink) (Sink, error) {
	if len(run.Request.Approvals) == 0 {
		return emit, nil
	}
	var held []Event
	collect := func(ev Event) error {
		held = append(held, ev)
		return nil
	}
	calls, err := r.resume(ctx, run, st, res.RunID, collect)
	if err != nil {
		return nil, err
	}
	res.Resumed = calls
	res.Calls = append(res.Calls, calls...)
	if len(held) > 0 {
		return queueUntilMeta(emit, held), nil
	}
	return emit, nil
}

// awaits reports whether a call of the round waits for its user's
// approval: then the run pauses, and the caller's answer continues it.
func awaits(calls []Call) bool {
	for _, c := range calls {
		if c.Status == StatusApprovalRequired {
			return true
		}
	}
	return false
}

// pause ends a run whose round has calls waiting for an approval: the
// round's other calls ran, no further upstream call is made, and the final
// message is the round's without hosted calls.
func (r *Runner) pause(ctx context.Context, run *Run, res *Result, rr RoundResult, hosted map[string]bool, calls []Call, emit Sink) (*Result, error) {
	rr.Calls = calls
	res.Calls = append(res.Calls, calls...)
	res.Rounds = append(res.Rounds, rr)
	res.Final = rr.Response
	res.Message, res.FinishReason, res.HostedRemoved = withoutHosted(rr.Response, hosted)
	r.record(ctx, run, res, rr)
	if err := emit(Event{Kind: EventRoundEnd, Round: rr.Round, Usage: rr.Usage, Cost: rr.Cost, Calls: cloneCalls(calls)}); err != nil {
		return nil, err
	}
	return res, nil
}

// PreviewApprovals fills in the calls of answers in msgs as the run would
// before its first upstream call, without deciding or running anything:
// the approvals' tools and arguments, an empty result for an approved call
// and the declined note for a declined one (count_tokens counts this). An
// unknown approval is the ApprovalError a run would give.
func (r *Runner) PreviewApprovals(ctx context.Context, account string, msgs []Message, answers []ApprovalAnswer, lang catalog.Lang) ([]Message, error) {
	ap, ok := r.exec.(approver)
	if !ok || len(answers) == 0 {
		return msgs, nil
	}
	checked := make([]answered, 0, len(answers))
	var calls []Call
	for _, ans := range answers {
		a, err := readApproval(ctx, ap, account, ans)
		if err != nil {
			return nil, err
		}
		checked = append(checked, answered{ApprovalAnswer: ans, a: a, run: ans.Approve})
		if ans.Approve {
			calls = append(calls, Call{ApprovalID: ans.ID})
		}
	}
	return fillApprovals(msgs, checked, calls, lang), nil
}
