package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools/approval"
)

// Reasons of 400 (and 409) answers about approvals.
const (
	// ReasonApprovalInvalid: require_approval is not "always", "never" or
	// the filter object ({"always"|"never": {"tool_names": [...],
	// "read_only": bool}}).
	ReasonApprovalInvalid = "require_approval_invalid"
	// ReasonApprovalAnswerInvalid: an approval answer (an
	// mcp_approval_response item, an entry of the extension field's
	// approvals) is malformed or repeated.
	ReasonApprovalAnswerInvalid = "approval_response_invalid"
	// ReasonApprovalsWithoutHosted: approval answers in a request that
	// declares no hosted tools.
	ReasonApprovalsWithoutHosted = "approvals_without_hosted_tools"
)

// maxApprovalAnswers bounds the approval answers of one request.
const maxApprovalAnswers = 64

// declPolicy is one declaration's require_approval, resolved for the
// tools it enables.
type declPolicy struct {
	// asks says unlisted tools ask (the "always" string or a filter
	// object: OpenAI's default for tools a filter does not name).
	asks  bool
	tools map[string]approval.Policy
}

// parseRequireApproval reads a declaration's require_approval for the
// tools it enables (names). "never" or absent tightens nothing; "always"
// makes every enabled tool ask; a filter object makes the tools it names
// under always ask, those under never not, and the others ask. A name in
// both lists asks. Names must be published tools, like allowed_tools'.
func (h *Handler) parseRequireApproval(raw json.RawMessage, names []string, param string) (declPolicy, error) {
	p := declPolicy{tools: map[string]approval.Policy{}}
	if !present(raw) {
		return p, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "never":
			return p, nil
		case "always":
			p.asks = true
			return p, nil
		}
		return p, badRequest(ReasonApprovalInvalid, param, `require_approval must be "always", "never" or {"always"|"never": {"tool_names": [...]}}`)
	}
	var obj struct {
		Always *approvalFilter `json:"always"`
		Never  *approvalFilter `json:"never"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return p, badRequest(ReasonApprovalInvalid, param, `require_approval must be "always", "never" or {"always"|"never": {"tool_names": [...], "read_only": bool}}: `+err.Error())
	}
	p.asks = true
	for _, f := range []struct {
		key string
		f   *approvalFilter
		pol approval.Policy
	}{{"never", obj.Never, approval.Never}, {"always", obj.Always, approval.Always}} {
		if f.f == nil {
			continue
		}
		if err := h.checkNames(f.f.ToolNames, param+"."+f.key+".tool_names"); err != nil {
			return p, err
		}
		for _, n := range names {
			if f.f.matches(h, n) {
				p.tools[n] = f.pol // always comes last: it wins
			}
		}
	}
	return p, nil
}

// approvalFilter is one list of a require_approval filter object.
type approvalFilter struct {
	ReadOnly  *bool    `json:"read_only"`
	ToolNames []string `json:"tool_names"`
}

// matches is OpenAI's filter: a tool named in tool_names, or whose
// read-only annotation is read_only.
func (f *approvalFilter) matches(h *Handler, name string) bool {
	for _, n := range f.ToolNames {
		if n == name {
			return true
		}
	}
	if f.ReadOnly != nil {
		if s, ok := h.published().Lookup(name); ok && s.Annotations.ReadOnly == *f.ReadOnly {
			return true
		}
	}
	return false
}

// checkNames refuses names that are not published tools.
func (h *Handler) checkNames(names []string, param string) error {
	var unknown []string
	for _, n := range names {
		if _, ok := h.published().Lookup(n); !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	e := badRequest(ReasonUnknownHostedTool, param, fmt.Sprintf("no hosted tool named %s; available: %s", strings.Join(quoteAll(unknown), ", "), strings.Join(h.publishedNames(), ", ")))
	e.names = unknown
	return e
}

// addPolicy merges one declaration's policy into the request's: a tool
// enabled twice takes the stricter.
func addPolicy(into *loop.ApprovalPolicy, p declPolicy, names []string) {
	if into.Tools == nil {
		into.Tools = map[string]approval.Policy{}
	}
	for _, n := range names {
		pol, ok := p.tools[n]
		switch {
		case ok:
		case p.asks:
			pol = approval.Always
		default:
			// Named, so that another declaration's default does not
			// apply; never tightens nothing.
			pol = approval.Never
		}
		if cur := into.Tools[n]; cur != approval.Always {
			into.Tools[n] = pol
		}
	}
	if p.asks {
		// Tools offered during the run (read_result) ask too.
		into.Default = approval.Always
	}
}

// approvalAnswer is one entry of the extension field's approvals.
type approvalAnswer struct {
	ApprovalRequestID *string `json:"approval_request_id"`
	Approve           *bool   `json:"approve"`
	Reason            *string `json:"reason"`
}

// parseApprovalAnswers reads the extension field's approvals: a list of
// {"approval_request_id", "approve", "reason"?}.
func parseApprovalAnswers(raw json.RawMessage, param string) ([]loop.ApprovalAnswer, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest(ReasonApprovalAnswerInvalid, param, "approvals must be a list of {\"approval_request_id\", \"approve\", \"reason\"}")
	}
	if len(items) > maxApprovalAnswers {
		return nil, badRequest(ReasonApprovalAnswerInvalid, param, fmt.Sprintf("approvals holds %d answers; at most %d", len(items), maxApprovalAnswers))
	}
	var out []loop.ApprovalAnswer
	seen := map[string]bool{}
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		var a approvalAnswer
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, badRequest(ReasonApprovalAnswerInvalid, p, "an approval answer is {\"approval_request_id\": string, \"approve\": boolean, \"reason\"?: string}: "+err.Error())
		}
		ans, err := newAnswer(a, p, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, ans)
	}
	return out, nil
}

// newAnswer checks one answer's fields (shared with the Responses
// mcp_approval_response item); seen refuses a second answer to one id.
func newAnswer(a approvalAnswer, param string, seen map[string]bool) (loop.ApprovalAnswer, error) {
	if a.ApprovalRequestID == nil || *a.ApprovalRequestID == "" || a.Approve == nil {
		return loop.ApprovalAnswer{}, badRequest(ReasonApprovalAnswerInvalid, param, "an approval answer needs approval_request_id and approve")
	}
	id := *a.ApprovalRequestID
	if seen[id] {
		e := badRequest(ReasonApprovalAnswerInvalid, param+".approval_request_id", fmt.Sprintf("approval request %q is answered twice", id))
		e.names = []string{id}
		return loop.ApprovalAnswer{}, e
	}
	seen[id] = true
	ans := loop.ApprovalAnswer{ID: id, Approve: *a.Approve, Param: param}
	if a.Reason != nil {
		ans.Reason = *a.Reason
	}
	return ans, nil
}

// approvalRequest is one call waiting for its approval, as the extension
// field's approval_requests lists it (Chat Completions, Messages) and as
// the Responses mcp_approval_request item's fields.
type approvalRequest struct {
	Arguments   string `json:"arguments"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	ServerLabel string `json:"server_label"`
}

// approvalRequests are the calls of a paused run (nil when none).
func (h *Handler) approvalRequests(res *loop.Result) *[]approvalRequest {
	calls := res.Awaiting()
	if len(calls) == 0 {
		return nil
	}
	out := make([]approvalRequest, 0, len(calls))
	for _, c := range calls {
		out = append(out, approvalRequest{ID: c.ApprovalID, ServerLabel: h.opts.Label, Name: c.Name, Arguments: string(c.Args)})
	}
	return &out
}

// approvalError renders the loop's refusal of the request's answers.
func approvalError(ae *loop.ApprovalError) *requestError {
	e := &requestError{status: ae.Status, code: ae.Reason, reason: ae.Reason, param: ae.Param, message: ae.Message}
	if e.status == 0 {
		e.status = http.StatusBadRequest
	}
	return e
}

// placeAnswers puts the calls of a Chat Completions or Messages request's
// approval answers into the conversation: a new assistant turn at the end
// with one call per answer, then their results (the loop fills in names,
// arguments and results). A trailing assistant turn without content or
// calls (the paused response sent back) is dropped first.
func placeAnswers(msgs []loop.Message, answers []loop.ApprovalAnswer) []loop.Message {
	if len(answers) == 0 {
		return msgs
	}
	calls := make([]loop.ToolCall, 0, len(answers))
	for _, a := range answers {
		calls = append(calls, loop.ToolCall{ID: loop.ApprovalCallID(a.ID), ApprovalID: a.ID})
	}
	out := append([]loop.Message(nil), msgs...)
	if n := len(out); n > 0 && out[n-1].Role == loop.RoleAssistant && len(out[n-1].ToolCalls) == 0 &&
		strings.TrimSpace(out[n-1].Text) == "" && len(out[n-1].Parts) == 0 {
		out = out[:n-1]
	}
	out = append(out, loop.Message{Role: loop.RoleAssistant, ToolCalls: calls})
	for _, a := range answers {
		out = append(out, loop.Message{Role: loop.RoleTool, ToolCallID: loop.ApprovalCallID(a.ID), ApprovalID: a.ID})
	}
	return out
}
