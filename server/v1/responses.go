package v1

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// responsesFace serves POST /v1/responses (the OpenAI Responses format with
// hosted tools declared as {"type":"mcp","server_label":LABEL}).
//
// The loop talks Chat Completions (or Messages) to the upstream; this face
// renders a run as Responses output items: an mcp_list_tools item, then for
// each round the model's text as a message item and each executed hosted
// call as an mcp_call item, then the last round's message and function_call
// items (mcp_approval_request for a call waiting for its approval).
// Responses are not stored: a continuation sends the previous output back
// as input (mcp_call items become function call round trips; approval
// items answer a paused run, responses_approvals.go).
type responsesFace struct{ h *Handler }

func (f responsesFace) parse(_ *http.Request, body []byte) (request, error) {
	return f.h.parseResponses(body)
}

func (responsesFace) writeError(w http.ResponseWriter, e *requestError) { writeRequestError(w, e) }

// prepare makes the mcp_list_tools item before the loop runs.
func (rq *responsesRequest) prepare(run *loop.Run) error {
	skip := map[string]bool{}
	if rq.search != nil {
		for n := range rq.search.onlyHere {
			skip[n] = true
		}
	}
	if rq.codeOnly {
		skip[codeToolName] = true
	}
	item, err := rq.h.listToolsItem(run, skip)
	rq.listTools = item
	return err
}

func (rq *responsesRequest) render(run *loop.Run, res *loop.Result) any {
	out := []any{}
	if rq.listTools != nil {
		out = append(out, rq.listTools)
	}
	out = append(out, rq.responsesOutput(res)...)
	return rq.h.responseObject(rq, run, res, out)
}

func (rq *responsesRequest) stream(w http.ResponseWriter) stream {
	return &responsesStream{h: rq.h, sseWriter: sseWriter{w: w}, rq: rq, listTools: rq.listTools, msgIndex: -1}
}

// Output items of a response.
type (
	listToolsItem struct {
		Error       json.RawMessage `json:"error"`
		ID          string          `json:"id"`
		ServerLabel string          `json:"server_label"`
		Tools       []listedTool    `json:"tools"`
		Type        string          `json:"type"`
	}
	listedTool struct {
		Annotations *catalog.Annotations `json:"annotations,omitempty"`
		Description string               `json:"description"`
		InputSchema json.RawMessage      `json:"input_schema"`
		Name        string               `json:"name"`
	}
	messageItem struct {
		Content []outputTextPart `json:"content"`
		ID      string           `json:"id"`
		Role    string           `json:"role"`
		Status  string           `json:"status"`
		Type    string           `json:"type"`
	}
	outputTextPart struct {
		Annotations []urlCitation `json:"annotations"`
		Logprobs    []struct{}    `json:"logprobs"`
		Text        string        `json:"text"`
		Type        string        `json:"type"`
	}
	functionCallItem struct {
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
		Status    string `json:"status"`
		Type      string `json:"type"`
	}
	customToolCallItem struct {
		CallID    string `json:"call_id"`
		ID        string `json:"id"`
		Input     string `json:"input"`
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
		Type      string `json:"type"`
	}
	mcpCallItem struct {
		ApprovalRequestID *string `json:"approval_request_id"`
		Arguments         string  `json:"arguments"`
		Error             *string `json:"error"`
		ID                string  `json:"id"`
		Name              string  `json:"name"`
		Output            *string `json:"output"`
		ServerLabel       string  `json:"server_label"`
		Status            string  `json:"status"`
		Type              string  `json:"type"`
	}
)

// listToolsItem is the mcp_list_tools item: the hosted tools given to the
// model with their input schemas and annotations, except those skip names
// (enabled only to serve a web search tool); nil when none is left.
func (h *Handler) listToolsItem(run *loop.Run, skip map[string]bool) (*listToolsItem, error) {
	var names []string
	for _, n := range run.Hosted.Tools {
		if !skip[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	defs, err := loop.DefinitionsFrom(h.published(), names, run.Lang)
	if err != nil {
		return nil, err
	}
	list := make([]listedTool, 0, len(defs))
	for _, d := range defs {
		t := listedTool{Name: d.Name, Description: d.Description, InputSchema: d.Parameters}
		if s, ok := h.published().Lookup(d.Name); ok {
			t.Annotations = &s.Annotations
		}
		list = append(list, t)
	}
	return &listToolsItem{ID: "mcpl_" + run.Caller.RequestID, Type: "mcp_list_tools", ServerLabel: h.opts.Label, Tools: list}, nil
}

// responsesOutput renders the calls answered approvals ran, then the
// rounds of a run after mcp_list_tools: each round's text and executed
// calls (mcp_call, web_search_call for those serving web search;
// mcp_approval_request for a call waiting for its approval), then the last
// round's caller calls (function_call, custom_tool_call; skipped hosted
// calls are left out). A text cites the web search results before it.
func (rq *responsesRequest) responsesOutput(res *loop.Result) []any {
	label := rq.h.opts.Label
	var out []any
	for _, c := range res.Resumed {
		out = append(out, newMCPCallItem(label, c, true))
	}
	base := trimID(res.First.ID)
	last := len(res.Rounds) - 1
	var found []searchResult
	for n, rr := range res.Rounds {
		// A Responses provider's reasoning and built-in tool items, as it
		// wrote them (responses_native.go).
		for _, it := range rr.Response.Message.NativeItems {
			out = append(out, it)
		}
		text, status := rr.Response.Message.Text, "completed"
		if n == last {
			text = res.Message.Text
			if responseStatus(res.FinishReason) == "incomplete" {
				status = "incomplete"
			}
		}
		if text != "" {
			item := newMessageItem(roundItemID(base, rr.Round), text, status)
			item.Content[0].Annotations = append(citations(text, found), providerCitations(rr.Response.Message.Raw)...)
			out = append(out, item)
		}
		out = rq.roundCalls(out, rr, &found)
	}
	for _, c := range res.Message.ToolCalls {
		out = append(out, rq.names.callItem(c.ID, c.Name, string(c.Args), "completed"))
	}
	return out
}

// roundCalls adds the items of a round's executed hosted calls, and the
// web search results they found.
func (rq *responsesRequest) roundCalls(out []any, rr loop.RoundResult, found *[]searchResult) []any {
	for _, c := range rr.Calls {
		if item := rq.hostedItem(c); item != nil {
			out = append(out, item)
		}
		if rq.servesSearch(c.Name) {
			*found = append(*found, searchResults(c)...)
		}
	}
	return out
}

// hostedItem is the output item of a finished hosted call: nil for a
// skipped one, mcp_approval_request for one waiting for its approval,
// web_search_call for one serving web search, else mcp_call.
func (rq *responsesRequest) hostedItem(c loop.Call) any {
	label := rq.h.opts.Label
	switch {
	case c.Status == loop.StatusSkipped:
		return nil
	case c.Status == loop.StatusApprovalRequired:
		return newApprovalRequestItem(label, c)
	case rq.servesSearch(c.Name):
		return newWebSearchCallItem(c, true)
	case rq.servesCode(c.Name):
		return newCodeInterpreterItem(c, true)
	}
	return newMCPCallItem(label, c, true)
}

// callItem is the output item of a call to one of the caller's tools:
// function_call (with its namespace apart) or custom_tool_call.
func (n callerNames) callItem(callID, upstream, args, status string) any {
	t := n.lookup(upstream)
	if t.Kind != "" {
		return clientToolItem(t.Kind, callID, args, status)
	}
	if t.Custom {
		return customToolCallItem{ID: itemID(t, callID), Type: "custom_tool_call", CallID: callID, Name: t.Name, Namespace: t.Namespace, Input: customInputOf(args)}
	}
	it := newFunctionCallItem(callID, t.Name, args, status)
	it.Namespace = t.Namespace
	return it
}

// trimID is an upstream id without the prefix of its own format, the stem
// of our item ids.
func trimID(id string) string {
	for _, p := range []string{"chatcmpl-", "msg_", "resp_"} {
		id = strings.TrimPrefix(id, p)
	}
	return id
}

// responseID is the response id: the first round's upstream id.
func responseID(first string) string { return "resp_" + trimID(first) }

// roundItemID is the id of a round's message item, unique in the response
// and known as soon as the round starts streaming.
func roundItemID(base string, round int) string { return fmt.Sprintf("msg_%s_%d", base, round) }

func newMessageItem(id, text, status string) messageItem {
	return messageItem{ID: id, Type: "message", Role: "assistant", Status: status, Content: []outputTextPart{newOutputTextPart(text)}}
}

func newOutputTextPart(text string) outputTextPart {
	return outputTextPart{Type: "output_text", Text: text, Annotations: []urlCitation{}, Logprobs: []struct{}{}}
}

func newFunctionCallItem(callID, name, args, status string) functionCallItem {
	return functionCallItem{ID: "fc_" + callID, Type: "function_call", CallID: callID, Name: name, Arguments: args, Status: status}
}

// newMCPCallItem renders a hosted call; done says whether it has finished
// (status completed or failed, with output or error).
func newMCPCallItem(label string, c loop.Call, done bool) mcpCallItem {
	it := mcpCallItem{ID: c.ID, Type: "mcp_call", ServerLabel: label, Name: c.Name, Status: "in_progress"}
	if c.ApprovalID != "" {
		id := c.ApprovalID
		it.ApprovalRequestID = &id
	}
	if !done {
		return it
	}
	it.Arguments = string(c.Args)
	result := c.Result
	if c.Status == loop.StatusFailed {
		it.Status, it.Error = "failed", &result
	} else {
		it.Status, it.Output = "completed", &result
	}
	return it
}

// responseStatus maps the final finish reason to the response status.
func responseStatus(finish string) string {
	switch finish {
	case loop.FinishLength, "content_filter":
		return "incomplete"
	}
	return "completed"
}

// incompleteReason is the reason of an incomplete response.
type incompleteReason struct {
	Reason string `json:"reason"`
}

func incompleteDetails(finish string) *incompleteReason {
	switch finish {
	case loop.FinishLength:
		return &incompleteReason{Reason: "max_output_tokens"}
	case "content_filter":
		return &incompleteReason{Reason: "content_filter"}
	}
	return nil
}

// response is a Responses response object; the request's fields are echoed
// as sent (or their defaults), Extra holds the extension field.
type response struct {
	Background         bool                       `json:"background"`
	CreatedAt          int64                      `json:"created_at"`
	Error              json.RawMessage            `json:"error"`
	ID                 string                     `json:"id"`
	IncompleteDetails  *incompleteReason          `json:"incomplete_details"`
	Instructions       json.RawMessage            `json:"instructions"`
	MaxOutputTokens    json.RawMessage            `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage            `json:"max_tool_calls"`
	Metadata           json.RawMessage            `json:"metadata"`
	Model              string                     `json:"model"`
	Object             string                     `json:"object"`
	Output             []any                      `json:"output"`
	ParallelToolCalls  json.RawMessage            `json:"parallel_tool_calls"`
	PreviousResponseID json.RawMessage            `json:"previous_response_id"`
	Reasoning          json.RawMessage            `json:"reasoning"`
	ServiceTier        json.RawMessage            `json:"service_tier"`
	Status             string                     `json:"status"`
	Store              bool                       `json:"store"`
	Temperature        json.RawMessage            `json:"temperature"`
	Text               json.RawMessage            `json:"text"`
	ToolChoice         json.RawMessage            `json:"tool_choice"`
	Tools              any                        `json:"tools"`
	TopLogprobs        json.RawMessage            `json:"top_logprobs"`
	TopP               json.RawMessage            `json:"top_p"`
	Truncation         string                     `json:"truncation"`
	Usage              *responsesUsageJSON        `json:"usage"`
	User               json.RawMessage            `json:"user"`
	Extra              map[string]json.RawMessage `json:"-"`
}

func (r response) MarshalJSON() ([]byte, error) {
	type plain response
	return wire.Marshal(plain(r), r.Extra)
}

// responseObject is the response: request fields echoed as sent, output,
// status, summed usage and the extension field. res nil renders the
// in-progress object of response.created (without the extension field).
func (h *Handler) responseObject(rq *responsesRequest, run *loop.Run, res *loop.Result, output []any) response {
	echo := func(raw json.RawMessage, def string) json.RawMessage {
		if present(raw) {
			return raw
		}
		return json.RawMessage(def)
	}
	f := &rq.fields
	out := response{
		Object:             "response",
		Error:              json.RawMessage("null"),
		Instructions:       echo(f.Instructions, "null"),
		MaxOutputTokens:    echo(f.MaxOutputTokens, "null"),
		MaxToolCalls:       echo(f.MaxToolCalls, "null"),
		Metadata:           echo(f.Metadata, "{}"),
		Output:             output,
		ParallelToolCalls:  echo(f.ParallelToolCalls, "true"),
		PreviousResponseID: json.RawMessage("null"),
		Reasoning:          echo(f.Reasoning, `{"effort":null,"summary":null}`),
		ServiceTier:        echo(f.ServiceTier, "null"),
		Temperature:        echo(f.Temperature, "null"),
		Text:               echo(f.Text, `{"format":{"type":"text"}}`),
		ToolChoice:         echo(f.ToolChoice, `"auto"`),
		Tools:              echoTools(f.Tools),
		TopLogprobs:        echo(f.TopLogprobs, "null"),
		TopP:               echo(f.TopP, "null"),
		Truncation:         "disabled",
		User:               echo(f.User, "null"),
	}
	if res == nil {
		out.Status = "in_progress"
		return out
	}
	out.ID = responseID(res.First.ID)
	out.CreatedAt = res.First.Created
	out.Model = res.First.Model
	if res.First.Model == "" {
		out.Model = rq.loop.Model
	}
	out.Status = responseStatus(res.FinishReason)
	out.IncompleteDetails = incompleteDetails(res.FinishReason)
	out.Usage = responsesUsage(res.Usage)
	out.Extra = h.labelled(nil, h.extension(rq.declared, run, res))
	return out
}

// echoTools is the request's tools as sent, except the credentials of mcp
// items (authorization, headers), which are never used and not repeated.
func echoTools(raw json.RawMessage) any {
	var items []map[string]json.RawMessage
	if !present(raw) || json.Unmarshal(raw, &items) != nil {
		return []any{}
	}
	for _, it := range items {
		if string(it["type"]) == `"mcp"` {
			delete(it, "authorization")
			delete(it, "headers")
		}
	}
	return items
}

// responsesUsageJSON is usage in Responses form.
type responsesUsageJSON struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// responsesUsage renders summed usage in Responses form.
func responsesUsage(u loop.Usage) *responsesUsageJSON {
	if !u.Present {
		return nil
	}
	out := &responsesUsageJSON{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	out.InputTokensDetails.CachedTokens = u.CachedInputTokens
	switch u.Dialect {
	case loop.DialectOpenAI:
		out.OutputTokensDetails.ReasoningTokens = u.Detail.Object("completion_tokens_details").Number("reasoning_tokens")
	case loop.DialectResponses:
		out.OutputTokensDetails.ReasoningTokens = u.Detail.Object("output_tokens_details").Number("reasoning_tokens")
	}
	return out
}
