package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/approval"
)

// Codes of the confirmation step (§6.6).
const (
	// CodeApprovalRequired: the call needs its user's approval and the
	// face cannot ask; its details carry the approval id, the tool, the
	// normalized arguments and the approval's expiry. The same call
	// (same invocation digest) runs once the approval is approved.
	CodeApprovalRequired = "approval_required"
	// CodeApprovalDeclined: the user declined (or cancelled) the approval
	// the face asked for.
	CodeApprovalDeclined = "approval_declined"
	// CodeApprovalUnavailable: the approval store did not answer.
	CodeApprovalUnavailable = "approval_unavailable"
)

// DefaultApprovalTTL is Options.ApprovalTTL's default: how long an
// approval may wait for its decision, and an approved one for its call.
const DefaultApprovalTTL = 15 * time.Minute

// ApprovalRequest is what a face's Confirmer shows its user: the pending
// approval (its id, tool, normalized arguments, expiry) and what the call
// will do.
type ApprovalRequest struct {
	Approval approval.Approval
	// Description is the tool's description in the proposal's language.
	Description string
	// Policy and PolicyBasis say why the call asks.
	Policy      approval.Policy
	PolicyBasis string
}

// Confirmer asks the call's user to approve a call, on a face that can ask
// (the terminal of `toolhost call`, MCP elicitation). It returns the
// decision, whose By and Via say who decided and how; an error (the user
// cancelled, the face cannot ask after all) declines. A cancelled ctx
// means the caller went away: the call ends cancelled_before_commit.
type Confirmer func(ctx context.Context, req ApprovalRequest) (approval.Decision, error)

// approvalDetails are an approval_required's or approval_declined's own
// fields.
type approvalDetails struct {
	ApprovalID string          `json:"approval_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	ExpiresAt  string          `json:"expires_at"`
	Policy     approval.Policy `json:"require_approval"`
}

// confirmationDetail is what the journal records of the approval a call
// runs under (the prepared event) or waits for.
type confirmationDetail struct {
	ApprovalID string `json:"approval_id"`
	DecidedAt  string `json:"decided_at,omitempty"`
	DecidedBy  string `json:"decided_by,omitempty"`
	DecidedVia string `json:"decided_via,omitempty"`
	ExpiresAt  string `json:"expires_at,omitempty"`
	Status     string `json:"status"`
}

func confirmationOf(a approval.Approval) *confirmationDetail {
	d := &confirmationDetail{ApprovalID: a.ID, DecidedBy: a.DecidedBy, DecidedVia: a.DecidedVia,
		ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339Nano), Status: string(a.Status)}
	if !a.DecidedAt.IsZero() {
		d.DecidedAt = a.DecidedAt.UTC().Format(time.RFC3339Nano)
	}
	return d
}

// policy is the call's effective approval policy and its basis: the
// tool's (a remote tool's override or server default, else the
// platform's), made stricter by the session's.
func (pl *pipeline) policy() (approval.Policy, string) {
	var p approval.Policy
	basis := ""
	if op, ok := pl.e.opts.Policies[pl.ent.spec.Name]; ok {
		p, basis = op, approval.BasisConfig
	}
	if pl.remote != nil && pl.remote.RequireApproval != "" {
		p, basis = pl.remote.RequireApproval, pl.remote.ApprovalBasis
	}
	p, basis = approval.Resolve(p, basis, pl.sessionPolicy)
	return approval.Tighten(p, basis, pl.p.RequireApproval, approval.BasisRequest)
}

// confirm is the confirmation part of the authorize step, after the
// session and the key allowed the call. With a policy that asks (§6.6):
// (a) an approved approval of the same account and invocation digest is
// consumed and the call runs under it; else (b) a face that can ask
// (Proposal.Confirm) asks, the call waiting in awaiting_approval; else
// (c) a pending approval is stored and the call ends approval_required.
func (pl *pipeline) confirm(ctx context.Context) (*Outcome, error) {
	e, c := pl.e, pl.c
	pol, basis := pl.policy()
	if !pol.Confirms(string(pl.ent.spec.SideEffect)) {
		return nil, nil
	}
	if pl.p.Answer != nil {
		return pl.answered(ctx, pol)
	}
	store := e.opts.Approvals
	now := e.opts.Clock()
	a, err := store.ConsumeApproval(ctx, c.rec.AccountID, c.rec.ArgsDigest, c.rec.ID, now)
	switch {
	case err == nil:
		pl.c.confirmation = confirmationOf(a)
		return nil, nil
	case !errors.Is(err, approval.ErrNoneApproved):
		return pl.approvalUnavailable(ctx, err)
	}
	a = approval.Approval{
		ID: approval.NewID(), AccountID: c.rec.AccountID, SessionID: c.rec.SessionID, Face: c.rec.Face,
		Tool: pl.ent.spec.Name, ToolVersion: pl.ent.spec.Version, SideEffectLevel: string(pl.ent.spec.SideEffect),
		Digest: c.rec.ArgsDigest, Args: c.rec.Args, ExecutionID: c.rec.ID, Status: approval.Pending,
		RequestedAt: now, ExpiresAt: now.Add(e.opts.ApprovalTTL),
	}
	if err := store.CreateApproval(ctx, a); err != nil {
		return pl.approvalUnavailable(ctx, err)
	}
	if pl.p.Confirm == nil {
		return c.reject(ctx, journal.StateAuthorizationRejected, StatusDenied, pl.required(a, pol))
	}
	return pl.await(ctx, a, pol, basis)
}

// await asks the face's Confirmer, the call journaled in
// awaiting_approval while it waits (case b of confirm).
func (pl *pipeline) await(ctx context.Context, a approval.Approval, pol approval.Policy, basis string) (*Outcome, error) {
	e, c := pl.e, pl.c
	if err := c.move(journal.StateAwaitingApproval, confirmationOf(a)); err != nil {
		return nil, err
	}
	// A call with an idempotency key is written when it claims its key
	// (open); its wait is in its trail, not visible while it waits.
	if pl.p.IdempotencyKey == "" {
		if err := e.journal.Await(context.WithoutCancel(ctx), c.rec, c.tr.Take()); err != nil {
			return nil, fmt.Errorf("record the wait of %s: %w", pl.p.Tool, err)
		}
		c.opened = true
	}
	d, askErr := pl.p.Confirm(ctx, ApprovalRequest{Approval: a, Policy: pol, PolicyBasis: basis,
		Description: pl.ent.spec.Description.In(pl.p.Lang)})
	if ctx.Err() != nil {
		return pl.endWait(ctx, journal.StateCancelledBeforeCommit, StatusError,
			Errorf(CodeCancelled, "%s was cancelled by the caller while it waited for its approval (%s)", pl.p.Tool, a.ID))
	}
	if errors.Is(askErr, ErrAskLater) {
		return pl.endWait(ctx, journal.StateAuthorizationRejected, StatusDenied, pl.required(a, pol))
	}
	if askErr != nil {
		d = approval.Decision{By: "", Via: "", Reason: clipReason(askErr.Error())}
	}
	d.Reason = clipReason(d.Reason)
	if d.By == "" {
		d.By = "user"
	}
	now := e.opts.Clock()
	if _, err := e.opts.Approvals.DecideApproval(context.WithoutCancel(ctx), a.AccountID, a.ID, d, now); err != nil {
		var se *approval.StateError
		if !errors.As(err, &se) {
			e.opts.Logger.ErrorContext(ctx, "approval store failed", "tool", pl.p.Tool, "execution_id", c.rec.ID, "err", err)
			return pl.endWait(ctx, journal.StateAuthorizationRejected, StatusError, Errorf(CodeApprovalUnavailable,
				"the approval store did not answer, so the decision on %s could not be recorded; retry shortly", a.ID))
		}
		// Decided elsewhere meanwhile (REST) or expired while asking.
		d.Approve = false
	}
	if !d.Approve {
		return pl.endWait(ctx, journal.StateAuthorizationRejected, StatusDenied, pl.declined(a, pol, d.Reason))
	}
	// Approved for this call: consume it, so it never runs another.
	dec, err := e.opts.Approvals.ConsumeApproval(context.WithoutCancel(ctx), a.AccountID, a.Digest, c.rec.ID, now)
	if err != nil {
		e.opts.Logger.ErrorContext(ctx, "approval consume failed", "tool", pl.p.Tool, "execution_id", c.rec.ID, "err", err)
		return pl.endWait(ctx, journal.StateAuthorizationRejected, StatusError, Errorf(CodeApprovalUnavailable,
			"the approval of %s could not be consumed; make the same call again", pl.p.Tool))
	}
	c.confirmation = confirmationOf(dec)
	return nil, nil
}

// endWait ends a call that waited: as a rejection when nothing was written
// yet, else as the finish of its opened record.
func (pl *pipeline) endWait(ctx context.Context, state journal.State, status Status, te *Error) (*Outcome, error) {
	c := pl.c
	if !c.opened {
		return c.reject(ctx, state, status, te)
	}
	c.e.fail(c.out, status, te)
	c.e.tel.refused(ctx, state, te.Code)
	if err := c.move(state, rejectedDetail{Code: te.Code, Message: te.Message}); err != nil {
		return nil, err
	}
	c.settle(journal.CommitDiscarded)
	if err := c.e.journal.Finish(context.WithoutCancel(ctx), c.rec, c.tr.Take()); err != nil {
		return nil, fmt.Errorf("record the end of the wait of %s: %w", c.rec.ToolName, err)
	}
	return c.out, nil
}

func (pl *pipeline) approvalUnavailable(ctx context.Context, err error) (*Outcome, error) {
	pl.e.opts.Logger.ErrorContext(ctx, "approval store failed", "tool", pl.p.Tool, "execution_id", pl.c.rec.ID, "err", err)
	return pl.c.reject(ctx, journal.StateAuthorizationRejected, StatusError, Errorf(CodeApprovalUnavailable,
		"the approval store did not answer, so %s's approval could not be checked; retry shortly", pl.p.Tool))
}

func (pl *pipeline) approvalDetails(a approval.Approval, pol approval.Policy) approvalDetails {
	return approvalDetails{ApprovalID: a.ID, Tool: a.Tool, Arguments: a.Args,
		ExpiresAt: a.ExpiresAt.UTC().Format(time.RFC3339Nano), Policy: pol}
}

func clipReason(s string) string {
	if len(s) <= approval.MaxReasonBytes {
		return s
	}
	cut := approval.MaxReasonBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "")
}

// Approvals returns the approval store.
func (e *Executor) Approvals() approval.Store { return e.opts.Approvals }

// ApprovalTTL is how long an approval lives.
func (e *Executor) ApprovalTTL() time.Duration { return e.opts.ApprovalTTL }

// DecideApproval approves or declines a pending approval of the account,
// on the executor's clock: what every face that decides an approval by id
// calls (REST now). d.By is the deciding identity, d.Via the face.
// Errors: approval.ErrNotFound (not the account's), a *approval.StateError
// (no longer pending: decided, consumed or expired).
// An empty account is the executor's own (Options.AccountID), as for a
// call whose Caller names none.
func (e *Executor) DecideApproval(ctx context.Context, account, id string, d approval.Decision) (approval.Approval, error) {
	if !approval.ValidID(id) {
		return approval.Approval{}, approval.ErrNotFound
	}
	d.Reason = clipReason(d.Reason)
	return e.opts.Approvals.DecideApproval(ctx, e.account(account), id, d, e.opts.Clock())
}

// GetApproval returns one approval of the account (the executor's own
// when empty) with its status at the executor's clock (expired once its
// expiry has come); approval.ErrNotFound when it is not the account's.
func (e *Executor) GetApproval(ctx context.Context, account, id string) (approval.Approval, error) {
	if !approval.ValidID(id) {
		return approval.Approval{}, approval.ErrNotFound
	}
	a, err := e.opts.Approvals.GetApproval(ctx, e.account(account), id)
	if err != nil {
		return approval.Approval{}, err
	}
	a.Status = a.Effective(e.opts.Clock())
	return a, nil
}

func (e *Executor) account(a string) string {
	if a == "" {
		return e.opts.AccountID
	}
	return a
}

// Clock is the executor's clock (Options.Clock), the one approvals expire
// on.
func (e *Executor) Clock() func() time.Time { return e.opts.Clock }
