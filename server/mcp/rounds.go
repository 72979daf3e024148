package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// ApprovalInputKey names the approval form in an input-required result's
// inputRequests, and the user's answer in the retried call's
// inputResponses.
const ApprovalInputKey = "toolhost/approval"

// rounds asks a client on protocol 2026-07-28 or later, where a server
// may not send requests while it serves one (SEP-2322), to approve a
// call through multi-round-trip requests: the first tools/call stores a
// pending approval and ends with an input-required result carrying the
// approval form (the same message and schema as elicitation/create) and
// the approval id as request state; the client's SDK asks its user and
// retries the call with the answer and the state, which the pipeline
// checks against the store (tools.Answer) — so any replica can take the
// retry, and a changed, replayed or foreign state runs nothing.
type rounds struct {
	asked *tools.ApprovalRequest
}

// confirmer notes what to ask and hands the question to a later request.
// progress, when the call carries a progress token, hears that the call
// now waits for its user.
func (r *rounds) confirmer(progress func(float64, float64, string)) tools.Confirmer {
	return func(_ context.Context, req tools.ApprovalRequest) (approval.Decision, error) {
		if progress != nil {
			progress(0, 0, fmt.Sprintf("asking the user to approve %s (%s)", safeText(req.Approval.Tool), req.Approval.ID))
		}
		r.asked = &req
		return approval.Decision{}, tools.ErrAskLater
	}
}

// result is the input-required result of a call whose approval r asked
// for, or nil when the call ended otherwise.
func (r *rounds) result(out *tools.Outcome) *sdk.CallToolResult {
	if r.asked == nil || !out.IsError || out.Code != tools.CodeApprovalRequired {
		return nil
	}
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{ApprovalInputKey: approvalParams(*r.asked)},
		RequestState:  r.asked.Approval.ID,
		Meta:          sdk.Meta{"toolhost/execution_id": out.ExecutionID},
	}
}

// answerOf is the answer a retried call carries: its request state as
// the approval id and its approval form's answer as the decision, or nil
// when it carries no state (a first call).
func answerOf(params *sdk.CallToolParamsRaw, caller identity.Identity) *tools.Answer {
	if params == nil || params.RequestState == "" {
		return nil
	}
	res, _ := params.InputResponses[ApprovalInputKey].(*sdk.ElicitResult)
	return &tools.Answer{ApprovalID: params.RequestState, Decision: decision(caller, res)}
}
