package v1

import (
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools/approval"
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
	// names maps the upstream names of namespaced and custom tools back
	// (responses_tooltypes.go).
	names callerNames
	// interpreter says a code_interpreter tool was declared, served by
	// run_code; codeOnly that run_code is enabled only for it
	// (responses_codeinterpreter.go).
	interpreter, codeOnly bool
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
// written (prompt_cache_key, prompt_cache_retention, safety_identifier,
// service_tier, user, temperature, top_p, parallel_tool_calls, ...).
// Responses-only members with no Chat Completions form are accepted and
// not sent: client_metadata, context_management, include, moderation,
// prompt_cache_options, store, stream_options and truncation.
type responsesFields struct {
	Background         json.RawMessage `json:"background"`
	ClientMetadata     json.RawMessage `json:"client_metadata"`
	ContextManagement  json.RawMessage `json:"context_management"`
	Conversation       json.RawMessage `json:"conversation"`
	Include            json.RawMessage `json:"include"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	Metadata           json.RawMessage `json:"metadata"`
	Model              json.RawMessage `json:"model"`
	Moderation         json.RawMessage `json:"moderation"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Prompt             json.RawMessage `json:"prompt"`
	PromptCacheOptions json.RawMessage `json:"prompt_cache_options"`
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
	if h.nativeRoute(rr.loop.Model) {
		rr.loop.Native = h.nativeRequest(top)
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
	msgs, answers, err := h.responsesInput(in.Input, rr.loop.Native != nil)
	if err != nil {
		return nil, err
	}
	rr.loop.Messages = append(rr.loop.Messages, msgs...)
	rr.loop.Approvals, rr.loop.ApprovalVia = answers, approval.ViaV1Responses

	// tools: the caller's functions and our declaration.
	enabledSet, err := h.parseResponsesTools(in.Tools, rr, label)
	if err != nil {
		return nil, err
	}
	rr.enableWebSearch(enabledSet)
	rr.enableInterpreter(enabledSet)
	if err := h.applyHosted(&rr.hosted, rr.declared, enabledSet, rr.loop.Tools, top[label], label,
		fmt.Sprintf("a tools item {\"type\":\"mcp\",\"server_label\":%q}", label), "function", "rename it or leave the hosted tool out of allowed_tools", nil); err != nil {
		return nil, err
	}
	if len(answers) > 0 && !rr.declared {
		return nil, badRequest(ReasonApprovalsWithoutHosted, answers[0].Param, fmt.Sprintf("an mcp_approval_response answers an approval request of hosted tools, but the request declares none (a tools item {\"type\":\"mcp\",\"server_label\":%q})", label))
	}

	if tc := in.ToolChoice; present(tc) {
		choice, err := h.parseResponsesToolChoice(tc, enabledSet)
		if isAllowedTools(tc) {
			choice, err = rr.allowedTools(tc)
		}
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
		var head functionHead
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, badRequest(ReasonInvalidRequest, param, "each tool must be an object")
		}
		if rr.providerTool(head.Type, item) {
			continue
		}
		switch typ := head.Type; {
		case typ == "function":
			if head.Name == "" {
				return nil, badRequest(ReasonInvalidRequest, param+".name", "a function tool needs a name")
			}
			fn, err := chatTool(head.Name, head.Description, head.Parameters, head.Strict, param)
			if err == nil {
				err = rr.addCallerTool(fn, callerTool{Name: head.Name}, param)
			}
			if err != nil {
				return nil, err
			}
		case typ == "custom":
			fn, ct, err := customFunction(item, "", param)
			if err == nil {
				err = rr.addCallerTool(fn, ct, param)
			}
			if err != nil {
				return nil, err
			}
		case typ == "namespace":
			fns, cts, err := namespaceFunctions(item, param)
			for j := 0; err == nil && j < len(fns); j++ {
				err = rr.addCallerTool(fns[j], cts[j], param)
			}
			if err != nil {
				return nil, err
			}
		case typ == "mcp":
			names, pol, err := h.parseDeclaration(item, param)
			if err != nil {
				return nil, err
			}
			addPolicy(&rr.hosted.Approval, pol, names)
			rr.declared = true
			for _, n := range names {
				enabledSet[n] = true
			}
		case clientTools[typ].schema != "":
			fn, ct, err := clientToolFunction(typ, param)
			if err == nil {
				err = rr.addCallerTool(fn, ct, param)
			}
			if err != nil {
				return nil, err
			}
		case typ == "tool_search":
			// Deferred tools are given to the model with the others.
		case typ == "code_interpreter":
			if err := rr.codeInterpreterTool(item, param); err != nil {
				return nil, err
			}
		case isWebSearchTool(typ):
			if err := rr.webSearchTool(item, param); err != nil {
				return nil, err
			}
		case builtinRefusals[typ] != "":
			return nil, badRequest(ReasonToolTypeUnsupported, param+".type", fmt.Sprintf("tool type %q is not supported here: %s", typ, builtinRefusals[typ]))
		default:
			return nil, badRequest(ReasonToolTypeUnsupported, param+".type", fmt.Sprintf("tool type %q is not a Responses tool type; use function, custom, namespace or the hosted tools ({\"type\":\"mcp\",\"server_label\":%q})", typ, label))
		}
	}
	return enabledSet, nil
}

// parseResponsesToolChoice: the string forms and the mcp form are the Chat
// Completions ones; a function is named flat ({"type":"function","name"}).
func (h *Handler) parseResponsesToolChoice(raw json.RawMessage, enabled map[string]bool) (loop.ToolChoice, error) {
	var obj struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		// A string (or nonsense, which the chat parser refuses).
		return h.parseToolChoice(raw, enabled)
	}
	if served, tool := builtinChoice(obj.Type); served != "" {
		// A built-in tool's own choice: the hosted tool serving it is
		// the one the model is then made to call.
		if !enabled[served] {
			return loop.ToolChoice{}, badRequest(ReasonToolChoiceNotEnabled, "tool_choice.type", fmt.Sprintf("tool_choice %q needs a %s tool in tools", obj.Type, tool))
		}
		return loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: served}, nil
	}
	switch obj.Type {
	case "mcp":
		return h.parseToolChoice(raw, enabled)
	case "function", "custom":
		if obj.Name == "" {
			return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.name", "a "+obj.Type+" tool_choice needs a name")
		}
		return loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: upstreamName(obj.Namespace, obj.Name)}, nil
	}
	return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.type", fmt.Sprintf("tool_choice type %q is not supported here; use \"auto\", \"none\", \"required\", a function, a custom tool, the web search or code_interpreter tool or the mcp form", obj.Type))
}

// builtinChoice is the hosted tool serving the built-in tool a tool_choice
// type names, and what to call that tool in a refusal; "" for other types.
func builtinChoice(typ string) (served, tool string) {
	switch {
	case isWebSearchTool(typ):
		return searchToolName, "web search"
	case typ == "code_interpreter":
		return codeToolName, "code_interpreter"
	}
	return "", ""
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

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}
