package v1

import (
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// How a Responses continuation answers approvals: the caller sends the
// paused response's output back in input with an mcp_approval_response
// item for each mcp_approval_request it decides. The call then takes the
// place of its mcp_approval_request item in the conversation (of the
// response item when the request was not sent back), and the loop runs
// it, or tells the model it was declined, before the first upstream call.
// Approval items that an mcp_call of the input answers
// (approval_request_id) are history, as is an mcp_approval_request nobody
// answered: they are left out.

// inputApprovals are what the approval items of an input say, found before
// the items are read in order.
type inputApprovals struct {
	// ran are the approval ids mcp_call items name (approval_request_id).
	ran map[string]bool
	// answered are the approval ids mcp_approval_response items name.
	answered map[string]bool
	// echoed are the requests sent back (mcp_approval_request), by id.
	echoed map[string]bool
	// answer is the index in inputBuilder.answers of each id's answer.
	answer map[string]int
	seen   map[string]bool
}

// scanApprovals reads the ids of the input's approval items and mcp_calls.
func scanApprovals(items []json.RawMessage) inputApprovals {
	ia := inputApprovals{ran: map[string]bool{}, answered: map[string]bool{}, echoed: map[string]bool{},
		answer: map[string]int{}, seen: map[string]bool{}}
	for _, item := range items {
		var it struct {
			Type              string  `json:"type"`
			ApprovalRequestID *string `json:"approval_request_id"`
		}
		if json.Unmarshal(item, &it) != nil || it.ApprovalRequestID == nil {
			continue
		}
		switch it.Type {
		case "mcp_call":
			ia.ran[*it.ApprovalRequestID] = true
		case "mcp_approval_response":
			ia.answered[*it.ApprovalRequestID] = true
		}
	}
	return ia
}

// approvalRequestItem is an mcp_approval_request sent back.
type approvalRequestItem struct {
	Arguments *string `json:"arguments"`
	ID        string  `json:"id"`
	Name      string  `json:"name"`
}

// approvalResponseItem is an mcp_approval_response item.
type approvalResponseItem struct {
	approvalAnswer
	ID *string `json:"id"`
}

// approvalItem reads an mcp_approval_request or mcp_approval_response item.
func (b *inputBuilder) approvalItem(typ string, item json.RawMessage, param string) error {
	ia := &b.approvals
	if typ == "mcp_approval_request" {
		var rq approvalRequestItem
		if err := json.Unmarshal(item, &rq); err != nil || rq.ID == "" || rq.Name == "" || rq.Arguments == nil {
			return badRequest(ReasonApprovalAnswerInvalid, param, "an mcp_approval_request item needs id, name and arguments (a JSON string)")
		}
		if ia.echoed[rq.ID] {
			e := badRequest(ReasonApprovalAnswerInvalid, param+".id", fmt.Sprintf("mcp_approval_request %q is sent twice", rq.ID))
			e.names = []string{rq.ID}
			return e
		}
		ia.echoed[rq.ID] = true
		if ia.ran[rq.ID] || !ia.answered[rq.ID] {
			return nil // history, or never answered: the call did not happen here
		}
		args := json.RawMessage(*rq.Arguments)
		if n, ok := ia.answer[rq.ID]; ok {
			// The answer came first: it takes the echo to check.
			a := &b.answers[n]
			a.Echoed, a.Name, a.Args = true, rq.Name, args
			return nil
		}
		b.place(rq.ID, loop.ApprovalAnswer{ID: rq.ID, Echoed: true, Name: rq.Name, Args: args})
		return nil
	}
	var rs approvalResponseItem
	if err := json.Unmarshal(item, &rs); err != nil {
		return badRequest(ReasonApprovalAnswerInvalid, param, "an mcp_approval_response item is {\"approval_request_id\": string, \"approve\": boolean, \"reason\"?: string}: "+err.Error())
	}
	if rs.ApprovalRequestID != nil && ia.ran[*rs.ApprovalRequestID] {
		return nil // history: an mcp_call of the input ran it
	}
	if len(b.answers) == maxApprovalAnswers {
		return badRequest(ReasonApprovalAnswerInvalid, param, fmt.Sprintf("input answers more than %d approval requests", maxApprovalAnswers))
	}
	ans, err := newAnswer(rs.approvalAnswer, param, ia.seen)
	if err != nil {
		return err
	}
	if n, ok := ia.answer[ans.ID]; ok {
		// Its mcp_approval_request came first and placed the call.
		a := &b.answers[n]
		a.Approve, a.Reason, a.Param = ans.Approve, ans.Reason, ans.Param
		return nil
	}
	b.place(ans.ID, ans)
	return nil
}

// place adds the call an approval answer decides, and its result, to the
// turn being rebuilt; the loop fills them in.
func (b *inputBuilder) place(id string, ans loop.ApprovalAnswer) {
	b.approvals.answer[id] = len(b.answers)
	b.answers = append(b.answers, ans)
	callID := loop.ApprovalCallID(id)
	b.hostedCall(loop.ToolCall{ID: callID, ApprovalID: id},
		loop.Message{Role: loop.RoleTool, ToolCallID: callID, ApprovalID: id})
}

// mcpApprovalRequestItem is the output item of a call waiting for its
// approval; its id is the approval's.
type mcpApprovalRequestItem struct {
	Arguments   string `json:"arguments"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	ServerLabel string `json:"server_label"`
	Type        string `json:"type"`
}

func newApprovalRequestItem(label string, c loop.Call) mcpApprovalRequestItem {
	return mcpApprovalRequestItem{Type: "mcp_approval_request", ID: c.ApprovalID, ServerLabel: label, Name: c.Name, Arguments: string(c.Args)}
}
