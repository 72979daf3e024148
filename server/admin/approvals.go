package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools/approval"
)

// Approvals serves /approvals: the account's confirmation records
// (tools/approval), listed, read and decided by id. A call that ended
// approval_required names its approval; approving it lets the same call
// (same invocation digest) run once.
type Approvals struct {
	Store approval.Store
	// Decide approves or declines on the executor's clock
	// (tools.Executor.DecideApproval).
	Decide func(ctx context.Context, account, id string, d approval.Decision) (approval.Approval, error)
	// Clock decides which approvals count as expired (nil: the wall clock).
	Clock func() time.Time
	// Account returns the account a request acts for; nil means the
	// caller's identity.Identity (accountOf).
	Account func(*http.Request) string
}

// Routes returns the routes for server.Options.Routes (scope tools).
func (a *Approvals) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /approvals":               http.HandlerFunc(a.list),
		"GET /approvals/{id}":          http.HandlerFunc(a.one),
		"POST /approvals/{id}/approve": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.decide(w, r, true) }),
		"POST /approvals/{id}/decline": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.decide(w, r, false) }),
	}
}

// ApprovalView is an approval on the wire: times in Unix milliseconds,
// null until set; status is the effective one (expired once past
// expires_at while pending or approved).
type ApprovalView struct {
	ID                     string          `json:"id"`
	Status                 string          `json:"status"`
	ToolName               string          `json:"tool_name"`
	ToolVersion            string          `json:"tool_version"`
	SideEffectLevel        string          `json:"side_effect_level"`
	Arguments              json.RawMessage `json:"arguments"`
	InvocationDigest       string          `json:"invocation_digest"`
	SessionID              *string         `json:"session_id"`
	Face                   *string         `json:"face"`
	RequestedByExecutionID string          `json:"requested_by_execution_id"`
	RequestedAt            int64           `json:"requested_at"`
	ExpiresAt              int64           `json:"expires_at"`
	DecidedBy              *string         `json:"decided_by"`
	DecidedAt              *int64          `json:"decided_at"`
	DecidedVia             *string         `json:"decided_via"`
	Reason                 *string         `json:"reason"`
	ConsumedBy             *string         `json:"consumed_by"`
	ConsumedAt             *int64          `json:"consumed_at"`
}

// Approval renders a at now.
func Approval(a approval.Approval, now time.Time) ApprovalView {
	args := a.Args
	if !json.Valid(args) {
		args = json.RawMessage(`null`)
	}
	return ApprovalView{ID: a.ID, Status: string(a.Effective(now)), ToolName: a.Tool, ToolVersion: a.ToolVersion,
		SideEffectLevel: a.SideEffectLevel, Arguments: args, InvocationDigest: a.Digest, SessionID: str(a.SessionID),
		Face: str(a.Face), RequestedByExecutionID: a.ExecutionID, RequestedAt: a.RequestedAt.UnixMilli(),
		ExpiresAt: a.ExpiresAt.UnixMilli(), DecidedBy: str(a.DecidedBy), DecidedAt: millis(a.DecidedAt),
		DecidedVia: str(a.DecidedVia), Reason: str(a.Reason), ConsumedBy: str(a.ConsumedBy), ConsumedAt: millis(a.ConsumedAt)}
}

var approvalStatuses = func() []string {
	out := make([]string, len(approval.Statuses))
	for i, s := range approval.Statuses {
		out[i] = string(s)
	}
	return out
}()

func (a *Approvals) list(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, "status", "session_id", "tool_name", "limit", "offset", "account")
	var q approval.Query
	var status, account string
	if err == nil {
		account, err = a.account(r, v)
	}
	if err == nil {
		status, err = oneOf(v, "status", approvalStatuses, "")
	}
	if err == nil {
		err = texts(v, filter{"session_id", &q.SessionID}, filter{"tool_name", &q.Tool})
	}
	var jq journal.Query
	if err == nil {
		err = paging(v, &jq)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	now := nowOf(a.Clock)
	q.AccountID, q.Status, q.Now, q.Limit, q.Offset = account, approval.Status(status), now, jq.Limit, jq.Offset
	as, total, err := a.Store.ListApprovals(r.Context(), q)
	if err != nil {
		writeApprovalErr(w, err)
		return
	}
	data := make([]ApprovalView, len(as))
	for i, ap := range as {
		data[i] = Approval(ap, now)
	}
	server.WriteJSON(w, http.StatusOK, page[ApprovalView]{Data: data, Meta: pageMeta{Total: total, Limit: q.Limit, Offset: q.Offset,
		HasMore: q.Offset+len(as) < total, SortBy: "requested_at", SortOrder: "desc"}})
}

func (a *Approvals) one(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, "account")
	var account string
	if err == nil {
		account, err = a.account(r, v)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("id")
	if !approval.ValidID(id) {
		writeApprovalErr(w, approval.ErrNotFound)
		return
	}
	ap, err := a.Store.GetApproval(r.Context(), account, id)
	if err != nil {
		writeApprovalErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, struct {
		Data ApprovalView `json:"data"`
	}{Approval(ap, nowOf(a.Clock))})
}

// decisionBody is the optional body of approve and decline.
type decisionBody struct {
	Reason *string `json:"reason"`
}

func (a *Approvals) decide(w http.ResponseWriter, r *http.Request, approve bool) {
	v, err := params(r, "account")
	var account string
	if err == nil {
		account, err = a.account(r, v)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	var body decisionBody
	if r.ContentLength != 0 {
		if err := readBody(r, &body); err != nil && !strings.Contains(err.Error(), "the request body is empty") {
			writeErr(w, err)
			return
		}
	}
	d := approval.Decision{Approve: approve, Via: approval.ViaREST, By: decider(r, accountOf(r, a.Account))}
	if body.Reason != nil {
		if len(*body.Reason) > approval.MaxReasonBytes {
			writeErr(w, fieldError("reason", "%d bytes; at most %d are allowed", len(*body.Reason), approval.MaxReasonBytes))
			return
		}
		d.Reason = *body.Reason
	}
	ap, err := a.Decide(r.Context(), account, r.PathValue("id"), d)
	if err != nil {
		writeApprovalErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, struct {
		Data ApprovalView `json:"data"`
	}{Approval(ap, nowOf(a.Clock))})
}

// account is the account a request acts on (namedAccount).
func (a *Approvals) account(r *http.Request, v url.Values) (string, error) {
	return namedAccount(r, v, a.Account)
}

// decider is the deciding identity: the API key the request was
// authenticated with, else the account (no keys in front).
func decider(r *http.Request, account string) string {
	if id, ok := identity.FromContext(r.Context()); ok && id.KeyID != "" {
		return "key:" + id.KeyID
	}
	return "account:" + account
}

func writeApprovalErr(w http.ResponseWriter, err error) {
	var se *approval.StateError
	switch {
	case errors.Is(err, errOtherAccount):
		server.WriteError(w, http.StatusForbidden, "insufficient_scope", err.Error())
	case errors.Is(err, approval.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no such approval")
	case errors.As(err, &se):
		code, msg := "approval_not_pending", "the approval is "+string(se.Status)+"; only a pending approval can be decided"
		if se.Status == approval.Expired {
			code, msg = "approval_expired", "the approval expired before it was decided; make the call again for a new one"
		}
		obj := wire.ErrorObject{Code: code, Message: msg}
		_ = obj.SetDetails(struct {
			Status string `json:"status"`
		}{string(se.Status)})
		server.WriteErrorObject(w, http.StatusConflict, obj)
	default:
		writeErr(w, err)
	}
}
