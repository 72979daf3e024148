package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/approval"
)

// ErrAskLater is what a Confirmer returns when its face asks the user
// outside this request and the answer comes back in a later one (MCP on
// protocol 2026-07-28: an input-required result, and a retried
// tools/call that carries the answer). The call ends approval_required
// (authorization_rejected, after awaiting_approval) with its pending
// approval kept for the retry's Proposal.Answer.
var ErrAskLater = errors.New("the face asks its user in a later request")

// CodeApprovalInvalid: a call carried an answer (Proposal.Answer) that
// names no pending approval of its own invocation — changed arguments,
// another session, another account, an approval already decided,
// consumed or expired. Nothing ran; the same call without the answer
// asks again.
const CodeApprovalInvalid = "approval_invalid"

// Answer is the user's decision on an approval a face asked for in an
// earlier request of the same call (its Confirmer returned ErrAskLater),
// carried back by the client. The client is not trusted: the approval
// must be a pending one of the call's account, session and invocation
// digest; it is decided and consumed atomically by this call, so a
// replayed or tampered answer runs nothing.
type Answer struct {
	ApprovalID string
	Decision   approval.Decision
}

// answered is case (b) of confirm across two requests: the call carries
// the decision on the approval an earlier request stored and asked for.
func (pl *pipeline) answered(ctx context.Context, pol approval.Policy) (*Outcome, error) {
	e, c, ans := pl.e, pl.c, pl.p.Answer
	store := e.opts.Approvals
	now := e.opts.Clock()
	invalid := func(why string) (*Outcome, error) {
		return c.reject(ctx, journal.StateAuthorizationRejected, StatusDenied, Errorf(CodeApprovalInvalid,
			"the answer to approval %q does not apply to this call (%s), so %s did not run; make the call again without it to be asked",
			clip.Echo(strings.ToValidUTF8(ans.ApprovalID, "?")), why, pl.p.Tool))
	}
	if !approval.ValidID(ans.ApprovalID) {
		return invalid("not an approval id")
	}
	a, err := store.GetApproval(ctx, c.rec.AccountID, ans.ApprovalID)
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return invalid("no such approval")
	case err != nil:
		return pl.approvalUnavailable(ctx, err)
	}
	if a.Digest != c.rec.ArgsDigest || a.SessionID != c.rec.SessionID {
		return invalid("it was asked for another invocation")
	}
	if st := a.Effective(now); st != approval.Pending {
		return invalid("it is " + string(st))
	}
	d := ans.Decision
	d.Reason = clipReason(d.Reason)
	// Deciding is the atomic step: of two requests carrying the same
	// answer (a replay, on this replica or another), one decides it.
	if _, err := store.DecideApproval(context.WithoutCancel(ctx), a.AccountID, a.ID, d, now); err != nil {
		var se *approval.StateError
		if errors.As(err, &se) {
			return invalid("it is " + string(se.Status))
		}
		return pl.approvalUnavailable(ctx, err)
	}
	if !d.Approve {
		return c.reject(ctx, journal.StateAuthorizationRejected, StatusDenied, pl.declined(a, pol, d.Reason))
	}
	dec, err := store.ConsumeApproval(context.WithoutCancel(ctx), a.AccountID, a.Digest, c.rec.ID, now)
	switch {
	case errors.Is(err, approval.ErrNoneApproved):
		return invalid("another identical call consumed it")
	case err != nil:
		return pl.approvalUnavailable(ctx, err)
	}
	c.confirmation = confirmationOf(dec)
	return nil, nil
}

// declined is the approval_declined error of a call whose user declined.
func (pl *pipeline) declined(a approval.Approval, pol approval.Policy, reason string) *Error {
	msg := fmt.Sprintf("the user declined %s (approval %s); it did not run", pl.p.Tool, a.ID)
	if reason != "" {
		msg += ": " + reason
	}
	return &Error{Code: CodeApprovalDeclined, Message: msg, Details: pl.approvalDetails(a, pol)}
}

// required is the approval_required error of a call that waits for a
// decision on a.
func (pl *pipeline) required(a approval.Approval, pol approval.Policy) *Error {
	return &Error{Code: CodeApprovalRequired,
		Message: fmt.Sprintf("%s needs the user's approval before it runs (approval %s, require_approval %s); once it is approved, make the same call again before %s",
			pl.p.Tool, a.ID, pol, a.ExpiresAt.UTC().Format(time.RFC3339)),
		Details: pl.approvalDetails(a, pol)}
}
