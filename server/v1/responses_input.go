package v1

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
)

// responsesInput turns input (a string or a list of items) into canonical
// messages and the approval answers it carries (responses_approvals.go).
// Function calls and mcp_call items next to each other become one
// assistant message with tool calls followed by the results, the shape Chat
// Completions requires; custom_tool_call items become calls of the custom
// tool's function (responses_tooltypes.go); mcp_list_tools items are
// dropped; reasoning and web_search_call items (and, when native, the other
// items of a provider's built-in tools) ride on their assistant turn as
// native items (responses_native.go), which only a Responses upstream sends.
func (h *Handler) responsesInput(raw json.RawMessage, native bool) ([]loop.Message, []loop.ApprovalAnswer, error) {
	if !present(raw) {
		return nil, nil, badRequest(ReasonInvalidRequest, "input", "input is required: a string or a list of items")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []loop.Message{{Role: loop.RoleUser, Text: s}}, nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, nil, badRequest(ReasonInvalidRequest, "input", "input must be a string or a non-empty list of items")
	}
	b := &inputBuilder{approvals: scanApprovals(items), nativeRoute: native}
	for i, item := range items {
		if err := h.inputItem(b, item, fmt.Sprintf("input[%d]", i)); err != nil {
			return nil, nil, err
		}
	}
	b.flush()
	if len(b.out) == 0 {
		return nil, nil, badRequest(ReasonInvalidRequest, "input", "input holds nothing for the model (only mcp_list_tools or reasoning items)")
	}
	return b.out, b.answers, nil
}

// inputBuilder collects the assistant turn being rebuilt from output items.
type inputBuilder struct {
	out       []loop.Message
	text      strings.Builder
	calls     []loop.ToolCall
	results   []loop.Message
	assistant bool
	// The approval items of the input (responses_approvals.go).
	approvals inputApprovals
	answers   []loop.ApprovalAnswer
	// native are the items with no canonical form waiting for the
	// assistant turn they belong to; nativeRoute says the request goes to
	// a Responses provider (responses_native.go).
	native      []json.RawMessage
	nativeRoute bool
}

// hostedCall adds a call and its result to the assistant turn being
// rebuilt.
func (b *inputBuilder) hostedCall(c loop.ToolCall, res loop.Message) {
	if len(b.results) > 0 && len(b.calls) == 0 {
		b.flush()
	}
	b.assistant = true
	b.calls = append(b.calls, c)
	b.results = append(b.results, res)
}

// callerCall adds a call of one of the caller's tools to the assistant turn
// being rebuilt.
func (b *inputBuilder) callerCall(c loop.ToolCall) {
	if len(b.results) > 0 {
		b.flush()
	}
	b.assistant = true
	b.calls = append(b.calls, c)
}

func (b *inputBuilder) flush() {
	if b.assistant {
		b.out = append(b.out, loop.Message{Role: loop.RoleAssistant, Text: b.text.String(), ToolCalls: b.calls, NativeItems: b.native})
	}
	// Items no assistant turn follows have nothing to ride on.
	b.native = nil
	b.out = append(b.out, b.results...)
	b.text.Reset()
	b.calls, b.results, b.assistant = nil, nil, false
}

func (h *Handler) inputItem(b *inputBuilder, item json.RawMessage, param string) error {
	var it struct {
		Type        string          `json:"type"`
		Role        string          `json:"role"`
		Content     json.RawMessage `json:"content"`
		ID          string          `json:"id"`
		CallID      string          `json:"call_id"`
		Name        string          `json:"name"`
		Namespace   string          `json:"namespace"`
		Arguments   string          `json:"arguments"`
		Input       string          `json:"input"`
		Output      json.RawMessage `json:"output"`
		Error       json.RawMessage `json:"error"`
		ServerLabel string          `json:"server_label"`
	}
	if err := json.Unmarshal(item, &it); err != nil {
		return badRequest(ReasonInvalidRequest, param, "each input item must be an object: "+err.Error())
	}
	if it.Type == "" && it.Role != "" {
		it.Type = "message"
	}
	switch it.Type {
	case "message":
		switch it.Role {
		case "assistant":
			text, err := assistantText(it.Content)
			if err != nil {
				return badRequest(ReasonInvalidRequest, param+".content", err.Error())
			}
			if len(b.calls) > 0 || len(b.results) > 0 {
				b.flush()
			}
			b.assistant = true
			b.text.WriteString(text)
			return nil
		case "user", "system", "developer":
			b.flush()
			m, err := chatMessage(it.Role, it.Content)
			if err != nil {
				return badRequest(ReasonInvalidRequest, param+".content", err.Error())
			}
			b.out = append(b.out, m)
			return nil
		}
		return badRequest(ReasonInvalidRequest, param+".role", fmt.Sprintf("unknown role %q", it.Role))
	case "function_call", "custom_tool_call":
		if it.CallID == "" || it.Name == "" {
			return badRequest(ReasonInvalidRequest, param, "a "+it.Type+" item needs call_id and name")
		}
		args := json.RawMessage(it.Arguments)
		if it.Type == "custom_tool_call" {
			// The function a custom tool is upstream (responses_tooltypes.go).
			args = customArgs(it.Input)
		}
		b.callerCall(loop.ToolCall{ID: it.CallID, Name: upstreamName(it.Namespace, it.Name), Args: args})
		return nil
	case "function_call_output", "custom_tool_call_output":
		text, err := outputText(it.Output)
		if err != nil {
			return badRequest(ReasonInvalidRequest, param+".output", err.Error())
		}
		b.results = append(b.results, loop.Message{Role: loop.RoleTool, ToolCallID: it.CallID, Text: text})
		return nil
	case "mcp_call":
		if it.ServerLabel != h.opts.Label {
			return h.otherServer(param, it.ServerLabel)
		}
		res := loop.Message{Role: loop.RoleTool, ToolCallID: it.ID}
		var errText string
		if present(it.Error) && json.Unmarshal(it.Error, &errText) == nil && errText != "" {
			res.Text, res.IsError = errText, true
		} else {
			text, err := outputText(it.Output)
			if err != nil {
				return badRequest(ReasonInvalidRequest, param+".output", err.Error())
			}
			res.Text = text
		}
		b.hostedCall(loop.ToolCall{ID: it.ID, Name: it.Name, Args: json.RawMessage(it.Arguments)}, res)
		return nil
	case "mcp_approval_request", "mcp_approval_response":
		if it.Type == "mcp_approval_request" && it.ServerLabel != h.opts.Label {
			return h.otherServer(param, it.ServerLabel)
		}
		return b.approvalItem(it.Type, item, param)
	case "mcp_list_tools":
		if it.ServerLabel != h.opts.Label {
			return h.otherServer(param, it.ServerLabel)
		}
		return nil
	}
	if b.keepNative(it.Type, item) {
		return nil
	}
	if ok, err := clientToolInput(b, it.Type, item, param); ok {
		return err
	}
	return badRequest(ReasonInputItemUnsupported, param+".type", fmt.Sprintf("input item type %q is not supported here", it.Type))
}

// chatMessage renders a user/system/developer Responses message as a Chat
// Completions one, keeping images and files as content parts.
func chatMessage(role string, content json.RawMessage) (loop.Message, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		raw, _ := marshal(chatInputMessage{Role: role, Content: s})
		return openai.DecodeMessage(raw)
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(content, &parts); err != nil {
		return loop.Message{}, fmt.Errorf("content must be a string or a list of parts")
	}
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		var typ string
		_ = json.Unmarshal(p["type"], &typ)
		switch typ {
		case "input_text", "output_text":
			out = append(out, chatTextPart{Type: "text", Text: p["text"]})
		case "input_image":
			if !present(p["image_url"]) {
				return loop.Message{}, fmt.Errorf("input_image needs image_url (file_id is not supported)")
			}
			img := map[string]json.RawMessage{"url": p["image_url"]}
			if present(p["detail"]) {
				img["detail"] = p["detail"]
			}
			out = append(out, chatImagePart{Type: "image_url", ImageURL: img})
		case "input_file":
			f := map[string]json.RawMessage{}
			for _, k := range []string{"file_data", "file_id", "filename"} {
				if present(p[k]) {
					f[k] = p[k]
				}
			}
			out = append(out, chatFilePart{Type: "file", File: f})
		default:
			return loop.Message{}, fmt.Errorf("content part type %q is not supported", typ)
		}
	}
	raw, _ := marshal(chatInputMessage{Role: role, Content: out})
	return openai.DecodeMessage(raw)
}

// A Responses input message in the Chat Completions form the loop reads;
// its parts keep the caller's values as sent.
type (
	chatInputMessage struct {
		Content any    `json:"content"`
		Role    string `json:"role"`
	}
	chatTextPart struct {
		Text json.RawMessage `json:"text"`
		Type string          `json:"type"`
	}
	chatImagePart struct {
		ImageURL map[string]json.RawMessage `json:"image_url"`
		Type     string                     `json:"type"`
	}
	chatFilePart struct {
		File map[string]json.RawMessage `json:"file"`
		Type string                     `json:"type"`
	}
	jsonSchemaFormat struct {
		JSONSchema map[string]json.RawMessage `json:"json_schema"`
		Type       string                     `json:"type"`
	}
)

// assistantText joins the text of an assistant message's content.
func assistantText(content json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "output_text", "input_text":
			sb.WriteString(p.Text)
		case "refusal":
			sb.WriteString(p.Refusal)
		}
	}
	return sb.String(), nil
}

// outputText reads a tool output: a string or a list of text parts.
func outputText(raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("output must be a string or a list of parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}
