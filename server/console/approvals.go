package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// approval is one approval in the GET /approvals shape.
type approval struct {
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	ToolName         string          `json:"tool_name"`
	ToolVersion      string          `json:"tool_version"`
	SideEffectLevel  string          `json:"side_effect_level"`
	Arguments        json.RawMessage `json:"arguments"`
	InvocationDigest string          `json:"invocation_digest"`
	SessionID        string          `json:"session_id"`
	Face             string          `json:"face"`
	ExecutionID      string          `json:"requested_by_execution_id"`
	RequestedAt      *int64          `json:"requested_at"`
	ExpiresAt        *int64          `json:"expires_at"`
	DecidedBy        *string         `json:"decided_by"`
	DecidedAt        *int64          `json:"decided_at"`
	DecidedVia       *string         `json:"decided_via"`
	Reason           *string         `json:"reason"`
}

type approvalList struct {
	Data []approval `json:"data"`
}

type approvalsData struct {
	Pending, History []approval
}

// approvalsAccount is the ?account= (or form field) to hand the REST
// route: empty for the viewer's own account. The route itself decides
// whether the key may name it (the admin scope), as for a request from
// outside.
func approvalsAccount(r *http.Request, rq *request) string {
	if a := r.FormValue("account"); a != rq.AccountID {
		return a
	}
	return ""
}

// withAccount appends account to a REST path as ?account= (or &).
func withAccount(path, account string) string {
	if account == "" {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + url.Values{"account": {account}}.Encode()
}

// approvals lists the account's pending approvals and the latest decided
// ones, through GET /approvals (tools scope); an admin names another
// account with ?account=, which the route checks.
func (c *Console) approvals(w http.ResponseWriter, r *http.Request, rq *request) {
	c.showApprovals(w, r, rq, http.StatusOK, "", "")
}

func (c *Console) showApprovals(w http.ResponseWriter, r *http.Request, rq *request, status int, notice, errMsg string) {
	d := &approvalsData{}
	account := approvalsAccount(r, rq)
	vw := view{Title: "Approvals", Nav: "approvals", Notice: notice, Error: errMsg, Data: d, Account: rq.AccountID}
	if account != "" {
		vw.Account = account
	}
	var pending, all approvalList
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodGet, withAccount("/approvals?status=pending&limit=100", account), nil, &pending)
	if err == nil && msg == "" {
		st, msg, err = c.apiCall(r.Context(), rq, http.MethodGet, withAccount("/approvals?limit=50", account), nil, &all)
	}
	if err != nil {
		c.o.Logger.Error("console: approvals", "err", err)
		st, msg = http.StatusServiceUnavailable, "approvals cannot be read right now"
	}
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "approvals", rq, vw)
		return
	}
	d.Pending = pending.Data
	for _, a := range all.Data {
		if a.Status != "pending" {
			d.History = append(d.History, a)
		}
	}
	c.render(w, status, "approvals", rq, vw)
}

// decide approves or declines one approval through
// POST /approvals/{id}/approve or /decline: another account's id is the
// route's 404.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, rq *request) {
	id := r.PathValue("id")
	action := r.PostForm.Get("action")
	if action != "approve" && action != "decline" {
		c.showApprovals(w, r, rq, http.StatusBadRequest, "", "the action must be approve or decline")
		return
	}
	var body any
	if reason := strings.TrimSpace(r.PostForm.Get("reason")); reason != "" {
		body = map[string]string{"reason": reason}
	}
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodPost, withAccount("/approvals/"+url.PathEscape(id)+"/"+action, approvalsAccount(r, rq)), body, nil)
	if err != nil {
		c.o.Logger.Error("console: decide", "err", err)
		st, msg = http.StatusServiceUnavailable, "the approval cannot be decided right now"
	}
	if msg != "" {
		c.showApprovals(w, r, rq, st, "", msg)
		return
	}
	c.showApprovals(w, r, rq, http.StatusOK, "Approval "+id+": "+action+"d.", "")
}
