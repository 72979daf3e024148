package v1

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
)

// Reasons of 400 answers specific to the Responses format.
const (
	// ReasonToolTypeUnsupported: a tools item other than function or mcp
	// (OpenAI's own built-in tools are not served here).
	ReasonToolTypeUnsupported = "tool_type_unsupported"
	// ReasonInputItemUnsupported: an input item we cannot give the model.
	ReasonInputItemUnsupported = "input_item_unsupported"
	// ReasonStatefulUnsupported: previous_response_id, conversation,
	// background or prompt, which need responses stored by the server.
	ReasonStatefulUnsupported = "stateful_responses_unsupported"
)

// responsesRequest is a checked Responses request.
type responsesRequest struct {
	hostedRequest
	h *Handler
	// fields are the request's fields a response echoes.
	fields responsesEcho
	// listTools is the mcp_list_tools item (nil without hosted tools).
	listTools *listToolsItem
}

// responsesEcho are the fields of a request a response repeats as sent.
type responsesEcho struct {
	Instructions      json.RawMessage `json:"instructions"`
	MaxOutputTokens   json.RawMessage `json:"max_output_tokens"`
	MaxToolCalls      json.RawMessage `json:"max_tool_calls"`
	Metadata          json.RawMessage `json:"metadata"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	Reasoning         json.RawMessage `json:"reasoning"`
	ServiceTier       json.RawMessage `json:"service_tier"`
	Temperature       json.RawMessage `json:"temperature"`
	Text              json.RawMessage `json:"text"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	Tools             json.RawMessage `json:"tools"`
	TopLogprobs       json.RawMessage `json:"top_logprobs"`
	TopP              json.RawMessage `json:"top_p"`
	User              json.RawMessage `json:"user"`
}

// responsesFields are the members of a Responses request the face consumes
// or translates itself; the rest go to the (Chat Completions) upstream as
// written.
type responsesFields struct {
	Background         json.RawMessage `json:"background"`
	Conversation       json.RawMessage `json:"conversation"`
	Include            json.RawMessage `json:"include"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	Metadata           json.RawMessage `json:"metadata"`
	Model              json.RawMessage `json:"model"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Prompt             json.RawMessage `json:"prompt"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Store              json.RawMessage `json:"store"`
	Stream             json.RawMessage `json:"stream"`
	StreamOptions      json.RawMessage `json:"stream_options"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopLogprobs        json.RawMessage `json:"top_logprobs"`
	Truncation         json.RawMessage `json:"truncation"`
}

// parseResponses reads and checks a Responses body. The conversation is
// translated to Chat Completions messages (the dialect of the loop's
// canonical Raw fields); every refusal is a *requestError.
func (h *Handler) parseResponses(body []byte) (*responsesRequest, error) {
	top, err := readMembers(body)
	if err != nil {
		return nil, err
	}
	var in responsesFields
	_ = wire.Fill(top, &in) // raw members always decode
	label := h.opts.Label
	rr := &responsesRequest{h: h}
	// Raw messages always decode.
	_ = wire.Fill(top, &rr.fields)
	rr.loop.OptionsDialect = loop.DialectOpenAI
	rr.loop.Options = h.options(top, in)
	if err := json.Unmarshal(in.Model, &rr.loop.Model); err != nil || rr.loop.Model == "" {
		return nil, badRequest(ReasonInvalidRequest, "model", "model is required and must be a string")
	}
	for _, k := range []string{"previous_response_id", "conversation", "prompt"} {
		if present(top[k]) {
			return nil, badRequest(ReasonStatefulUnsupported, k, k+" is not supported: responses are not stored here; send the previous output as input instead")
		}
	}
	if string(in.Background) == "true" {
		return nil, badRequest(ReasonStatefulUnsupported, "background", "background responses are not supported: responses are not stored here")
	}
	if s := in.Stream; present(s) {
		if err := json.Unmarshal(s, &rr.loop.Stream); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "stream", "stream must be a boolean")
		}
	}
	if md := in.Metadata; present(md) {
		if err := json.Unmarshal(md, &rr.metadata); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "metadata", "metadata must be an object of strings")
		}
	}
	if err := translateResponsesOptions(&in, rr.loop.Options); err != nil {
		return nil, err
	}

	// The conversation.
	if present(in.Instructions) {
		var s string
		if err := json.Unmarshal(in.Instructions, &s); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "instructions", "instructions must be a string")
		}
		if s != "" {
			rr.loop.Messages = append(rr.loop.Messages, loop.Message{Role: loop.RoleSystem, Text: s})
		}
	}
	msgs, err := h.responsesInput(in.Input)
	if err != nil {
		return nil, err
	}
	rr.loop.Messages = append(rr.loop.Messages, msgs...)

	// tools: the caller's functions and our declaration.
	enabledSet, err := h.parseResponsesTools(in.Tools, rr, label)
	if err != nil {
		return nil, err
	}
	if err := h.applyHosted(&rr.hosted, rr.declared, enabledSet, rr.loop.Tools, top[label], label,
		fmt.Sprintf("a tools item {\"type\":\"mcp\",\"server_label\":%q}", label), "function", "rename it or leave the hosted tool out of allowed_tools"); err != nil {
		return nil, err
	}

	if tc := in.ToolChoice; present(tc) {
		choice, err := h.parseResponsesToolChoice(tc, enabledSet)
		if err != nil {
			return nil, err
		}
		rr.loop.ToolChoice = choice
	}
	return rr, nil
}

// chatFunctionTool is a Responses function tool in the Chat Completions
// form the upstream reads. Fields are in alphabetical order: the bytes are
// those a map gave before, which the golden upstream bodies pin.
type (
	chatFunctionTool struct {
		Function chatFunction `json:"function"`
		Type     string       `json:"type"`
	}
	chatFunction struct {
		Description string          `json:"description,omitempty"`
		Name        string          `json:"name"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      json.RawMessage `json:"strict,omitempty"`
	}
)

// parseResponsesTools reads tools: function tools are translated to the
// Chat Completions form for the loop request, {"type":"mcp"} items declare
// hosted tools, other types are refused. It returns the hosted tools
// enabled.
func (h *Handler) parseResponsesTools(t json.RawMessage, rr *responsesRequest, label string) (map[string]bool, error) {
	enabledSet := map[string]bool{}
	if !present(t) {
		return enabledSet, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, badRequest(ReasonInvalidRequest, "tools", "tools must be a list")
	}
	for i, item := range items {
		param := fmt.Sprintf("tools[%d]", i)
		var head struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      json.RawMessage `json:"strict"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, badRequest(ReasonInvalidRequest, param, "each tool must be an object")
		}
		switch head.Type {
		case "function":
			if head.Name == "" {
				return nil, badRequest(ReasonInvalidRequest, param+".name", "a function tool needs a name")
			}
			fn := chatFunction{Name: head.Name, Description: head.Description}
			if present(head.Parameters) {
				fn.Parameters = head.Parameters
			}
			if present(head.Strict) {
				fn.Strict = head.Strict
			}
			raw, err := marshal(chatFunctionTool{Type: "function", Function: fn})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", param, err)
			}
			rr.loop.Tools = append(rr.loop.Tools, loop.Function{
				Name: head.Name, Description: head.Description, Parameters: head.Parameters,
				Dialect: loop.DialectOpenAI, Raw: raw,
			})
		case "mcp":
			names, err := h.parseDeclaration(item, param)
			if err != nil {
				return nil, err
			}
			rr.declared = true
			for _, n := range names {
				enabledSet[n] = true
			}
		default:
			return nil, badRequest(ReasonToolTypeUnsupported, param+".type", fmt.Sprintf("tool type %q is not supported here; use function tools and the hosted tools ({\"type\":\"mcp\",\"server_label\":%q})", head.Type, label))
		}
	}
	return enabledSet, nil
}

// parseResponsesToolChoice: the string forms and the mcp form are the Chat
// Completions ones; a function is named flat ({"type":"function","name"}).
func (h *Handler) parseResponsesToolChoice(raw json.RawMessage, enabled map[string]bool) (loop.ToolChoice, error) {
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		// A string (or nonsense, which the chat parser refuses).
		return h.parseToolChoice(raw, enabled)
	}
	switch obj.Type {
	case "mcp":
		return h.parseToolChoice(raw, enabled)
	case "function":
		if obj.Name == "" {
			return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.name", "a function tool_choice needs a name")
		}
		return loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: obj.Name}, nil
	}
	return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.type", fmt.Sprintf("tool_choice type %q is not supported here; use \"auto\", \"none\", \"required\", a function or the mcp form", obj.Type))
}

// translateResponsesOptions adds to opts the Chat Completions spelling of
// the Responses options that are spelled differently.
func translateResponsesOptions(in *responsesFields, opts map[string]json.RawMessage) error {
	if v := in.MaxOutputTokens; present(v) {
		// max_tokens rather than max_completion_tokens: every
		// OpenAI-compatible API reads it.
		opts["max_tokens"] = v
	}
	if v := in.TopLogprobs; present(v) {
		opts["top_logprobs"] = v
		opts["logprobs"] = json.RawMessage("true")
	}
	if v := in.Reasoning; present(v) {
		var r struct {
			Effort *string `json:"effort"`
		}
		if err := json.Unmarshal(v, &r); err != nil {
			return badRequest(ReasonInvalidRequest, "reasoning", "reasoning must be an object")
		}
		if r.Effort != nil {
			opts["reasoning_effort"], _ = json.Marshal(*r.Effort)
		}
	}
	if v := in.Text; present(v) {
		var t struct {
			Format    map[string]json.RawMessage `json:"format"`
			Verbosity json.RawMessage            `json:"verbosity"`
		}
		if err := json.Unmarshal(v, &t); err != nil {
			return badRequest(ReasonInvalidRequest, "text", "text must be an object")
		}
		if present(t.Verbosity) {
			opts["verbosity"] = t.Verbosity
		}
		var typ string
		_ = json.Unmarshal(t.Format["type"], &typ)
		switch typ {
		case "", "text":
		case "json_object":
			opts["response_format"] = json.RawMessage(`{"type":"json_object"}`)
		case "json_schema":
			schema := map[string]json.RawMessage{}
			for _, k := range []string{"name", "description", "schema", "strict"} {
				if present(t.Format[k]) {
					schema[k] = t.Format[k]
				}
			}
			opts["response_format"], _ = marshal(jsonSchemaFormat{Type: "json_schema", JSONSchema: schema})
		default:
			return badRequest(ReasonInvalidRequest, "text.format.type", fmt.Sprintf("text format %q is not supported", typ))
		}
	}
	return nil
}

// responsesInput turns input (a string or a list of items) into canonical
// messages. Function calls and mcp_call items next to each other become one
// assistant message with tool calls followed by the results, the shape Chat
// Completions requires; mcp_list_tools and reasoning items are dropped.
func (h *Handler) responsesInput(raw json.RawMessage) ([]loop.Message, error) {
	if !present(raw) {
		return nil, badRequest(ReasonInvalidRequest, "input", "input is required: a string or a list of items")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []loop.Message{{Role: loop.RoleUser, Text: s}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, badRequest(ReasonInvalidRequest, "input", "input must be a string or a non-empty list of items")
	}
	b := &inputBuilder{}
	for i, item := range items {
		if err := h.inputItem(b, item, fmt.Sprintf("input[%d]", i)); err != nil {
			return nil, err
		}
	}
	b.flush()
	if len(b.out) == 0 {
		return nil, badRequest(ReasonInvalidRequest, "input", "input holds nothing for the model (only mcp_list_tools or reasoning items)")
	}
	return b.out, nil
}

// inputBuilder collects the assistant turn being rebuilt from output items.
type inputBuilder struct {
	out       []loop.Message
	text      strings.Builder
	calls     []loop.ToolCall
	results   []loop.Message
	assistant bool
}

func (b *inputBuilder) flush() {
	if b.assistant {
		b.out = append(b.out, loop.Message{Role: loop.RoleAssistant, Text: b.text.String(), ToolCalls: b.calls})
	}
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
		Arguments   string          `json:"arguments"`
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
	case "function_call":
		if it.CallID == "" || it.Name == "" {
			return badRequest(ReasonInvalidRequest, param, "a function_call item needs call_id and name")
		}
		if len(b.results) > 0 {
			b.flush()
		}
		b.assistant = true
		b.calls = append(b.calls, loop.ToolCall{ID: it.CallID, Name: it.Name, Args: json.RawMessage(it.Arguments)})
		return nil
	case "function_call_output":
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
		if len(b.results) > 0 && len(b.calls) == 0 {
			b.flush()
		}
		b.assistant = true
		b.calls = append(b.calls, loop.ToolCall{ID: it.ID, Name: it.Name, Args: json.RawMessage(it.Arguments)})
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
		b.results = append(b.results, res)
		return nil
	case "mcp_list_tools":
		if it.ServerLabel != h.opts.Label {
			return h.otherServer(param, it.ServerLabel)
		}
		return nil
	case "reasoning":
		// Reasoning items have no Chat Completions form.
		return nil
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

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
