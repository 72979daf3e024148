package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
)

// chatRequest is a checked Chat Completions request.
type chatRequest struct {
	hostedRequest
	h *Handler
	// includeUsage: stream_options.include_usage.
	includeUsage bool
	// toolChoice is the caller's tool_choice verbatim (echoed).
	toolChoice json.RawMessage
}

// chatFields are the members of a Chat Completions request the face
// consumes itself; the rest are passed to the upstream untouched.
type chatFields struct {
	MaxToolCalls  json.RawMessage `json:"max_tool_calls"`
	Messages      json.RawMessage `json:"messages"`
	Model         json.RawMessage `json:"model"`
	Stream        json.RawMessage `json:"stream"`
	StreamOptions json.RawMessage `json:"stream_options"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Tools         json.RawMessage `json:"tools"`
}

// parseChat reads and checks a Chat Completions body. Every refusal is a
// *requestError with a machine-readable reason.
func (h *Handler) parseChat(body []byte) (*chatRequest, error) {
	top, err := readMembers(body)
	if err != nil {
		return nil, err
	}
	var in chatFields
	_ = wire.Fill(top, &in) // raw members always decode
	label := h.opts.Label
	cr := &chatRequest{h: h}
	cr.loop.OptionsDialect = loop.DialectOpenAI
	cr.loop.Options = h.options(top, in)

	if err := json.Unmarshal(in.Model, &cr.loop.Model); err != nil || cr.loop.Model == "" {
		return nil, badRequest(ReasonInvalidRequest, "model", "model is required and must be a string")
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(in.Messages, &msgs); err != nil || len(msgs) == 0 {
		return nil, badRequest(ReasonInvalidRequest, "messages", "messages is required and must be a non-empty list")
	}
	for i, raw := range msgs {
		m, err := openai.DecodeMessage(raw)
		if err != nil {
			return nil, badRequest(ReasonInvalidRequest, fmt.Sprintf("messages[%d]", i), err.Error())
		}
		cr.loop.Messages = append(cr.loop.Messages, m)
	}
	if s := in.Stream; present(s) {
		if err := json.Unmarshal(s, &cr.loop.Stream); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "stream", "stream must be a boolean")
		}
	}
	if so := in.StreamOptions; present(so) {
		var opts struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(so, &opts); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "stream_options", "stream_options must be an object")
		}
		cr.includeUsage = opts.IncludeUsage
	}
	if md, ok := top["metadata"]; ok && string(md) != "null" {
		if err := json.Unmarshal(md, &cr.metadata); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "metadata", "metadata must be an object of strings")
		}
		// metadata is ours (session_id, the round log); upstream it means
		// stored-completion metadata, so it goes there only with store.
		if string(top["store"]) != "true" {
			delete(cr.loop.Options, "metadata")
		}
	}

	// tools: the caller's functions and our declaration.
	enabledSet, err := h.parseChatTools(in.Tools, cr)
	if err != nil {
		return nil, err
	}
	if err := cr.webSearchOptions(top["web_search_options"], enabledSet); err != nil {
		return nil, err
	}
	// Publishing order, whatever order the declarations named them in.
	if err := h.applyHosted(&cr.hosted, cr.declared, enabledSet, cr.loop.Tools, top[label], label,
		fmt.Sprintf("a tools item {\"type\":\"mcp\",\"server_label\":%q}", label), "function", "rename it or leave the hosted tool out of allowed_tools", &cr.loop.Approvals); err != nil {
		return nil, err
	}
	cr.loop.Messages = placeAnswers(cr.loop.Messages, cr.loop.Approvals)
	cr.loop.ApprovalVia = approval.ViaV1Chat
	if cr.declared {
		if n, ok := top["n"]; ok {
			var v int
			if json.Unmarshal(n, &v) == nil && v > 1 {
				return nil, badRequest(ReasonMultipleChoices, "n", "n greater than 1 cannot be combined with hosted tools: the loop follows one answer")
			}
		}
	}

	// tool_choice.
	if tc := in.ToolChoice; present(tc) {
		cr.toolChoice = tc
		choice, err := h.parseToolChoice(tc, enabledSet)
		if err != nil {
			return nil, err
		}
		cr.loop.ToolChoice = choice
	}
	return cr, nil
}

// parseChatTools reads tools: the caller's functions go to the loop
// request, each {"type":"mcp"} item declares hosted tools; it returns the
// hosted tools enabled.
func (h *Handler) parseChatTools(t json.RawMessage, cr *chatRequest) (map[string]bool, error) {
	enabledSet := map[string]bool{}
	if len(t) == 0 || string(t) == "null" {
		return enabledSet, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, badRequest(ReasonInvalidRequest, "tools", "tools must be a list")
	}
	for i, item := range items {
		var head struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, badRequest(ReasonInvalidRequest, fmt.Sprintf("tools[%d]", i), "each tool must be an object")
		}
		if head.Type != "mcp" {
			name := head.Function.Name
			if name == "" {
				name = head.Name
			}
			cr.loop.Tools = append(cr.loop.Tools, loop.Function{
				Name: name, Description: head.Function.Description, Parameters: head.Function.Parameters,
				Dialect: loop.DialectOpenAI, Raw: item,
			})
			continue
		}
		names, pol, err := h.parseDeclaration(item, fmt.Sprintf("tools[%d]", i))
		if err != nil {
			return nil, err
		}
		addPolicy(&cr.hosted.Approval, pol, names)
		cr.declared = true
		for _, n := range names {
			enabledSet[n] = true
		}
	}
	return enabledSet, nil
}

// parseDeclaration checks one {"type":"mcp",...} tools item and returns the
// hosted tools it enables and its require_approval (approvals.go).
func (h *Handler) parseDeclaration(item json.RawMessage, param string) ([]string, declPolicy, error) {
	names, err := h.declaredNames(item, param)
	if err != nil {
		return nil, declPolicy{}, err
	}
	var d struct {
		RequireApproval json.RawMessage `json:"require_approval"`
	}
	_ = json.Unmarshal(item, &d) // declaredNames decoded it
	pol, err := h.parseRequireApproval(d.RequireApproval, names, param+".require_approval")
	return names, pol, err
}

// declaredNames checks one {"type":"mcp",...} tools item and returns the
// hosted tools it enables.
func (h *Handler) declaredNames(item json.RawMessage, param string) ([]string, error) {
	var d struct {
		ServerLabel  string          `json:"server_label"`
		AllowedTools json.RawMessage `json:"allowed_tools"`
	}
	if err := json.Unmarshal(item, &d); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, "mcp tool: "+err.Error())
	}
	if d.ServerLabel != h.opts.Label {
		return nil, h.otherServer(param, d.ServerLabel)
	}
	if !h.opts.Enabled {
		return nil, badRequest(ReasonHostedDisabled, param, "hosted tools are not enabled in this deployment")
	}
	published := h.published()
	if len(d.AllowedTools) == 0 || string(d.AllowedTools) == "null" {
		var all []string
		for _, s := range published.List() {
			all = append(all, s.Name)
		}
		return all, nil
	}
	var names []string
	if err := json.Unmarshal(d.AllowedTools, &names); err != nil {
		var filter struct {
			ToolNames []string `json:"tool_names"`
		}
		if err2 := json.Unmarshal(d.AllowedTools, &filter); err2 != nil {
			return nil, badRequest(ReasonInvalidRequest, param+".allowed_tools", "allowed_tools must be a list of tool names or {\"tool_names\":[...]}")
		}
		names = filter.ToolNames
	}
	if len(names) == 0 {
		return nil, badRequest(ReasonNoHostedToolEnabled, param+".allowed_tools", "allowed_tools is empty: name at least one hosted tool, or leave allowed_tools out to enable all")
	}
	if err := h.checkNames(names, param+".allowed_tools"); err != nil {
		return nil, err
	}
	return names, nil
}

// otherServer refuses an item (param) that names a server label other than
// ours.
func (h *Handler) otherServer(param, label string) *requestError {
	return badRequest(ReasonServerToolUnsupported, param+".server_label", fmt.Sprintf("server_label %q is not supported; the hosted tools here are declared with server_label %q", label, h.opts.Label))
}

func (h *Handler) publishedNames() []string {
	var out []string
	for _, s := range h.published().List() {
		out = append(out, s.Name)
	}
	return out
}

// extensionFields are the members of the request's extension field.
type extensionFields struct {
	rounds    int
	hasRounds bool
	// approvals are the answers to a paused response's approval_requests
	// (Chat Completions and Messages only).
	approvals []loop.ApprovalAnswer
}

// parseExtension checks the top-level extension field: an object whose
// keys are max_tool_rounds and, where withApprovals, approvals.
func (h *Handler) parseExtension(raw json.RawMessage, withApprovals bool) (extensionFields, error) {
	var out extensionFields
	label := h.opts.Label
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var ext map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ext); err != nil {
		return out, badRequest(ReasonInvalidExtension, label, fmt.Sprintf("%s must be an object such as {\"max_tool_rounds\": 6}", label))
	}
	accepted := "max_tool_rounds"
	if withApprovals {
		accepted = "max_tool_rounds and approvals"
	}
	var unknown []string
	for k := range ext {
		if k != "max_tool_rounds" && (k != "approvals" || !withApprovals) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		e := badRequest(ReasonUnknownExtensionKey, label+"."+unknown[0], fmt.Sprintf("%s accepts only %s; unknown key %s", label, accepted, strings.Join(quoteAll(unknown), ", ")))
		e.keys = unknown
		return out, e
	}
	if a, ok := ext["approvals"]; ok {
		answers, err := parseApprovalAnswers(a, label+".approvals")
		if err != nil {
			return out, err
		}
		out.approvals = answers
	}
	rounds, has, err := h.parseRounds(ext)
	out.rounds, out.hasRounds = rounds, has
	return out, err
}

// parseRounds reads the extension field's max_tool_rounds.
func (h *Handler) parseRounds(ext map[string]json.RawMessage) (rounds int, has bool, err error) {
	label := h.opts.Label
	v, ok := ext["max_tool_rounds"]
	if !ok {
		return 0, false, nil
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return 0, false, badRequest(ReasonInvalidMaxToolRounds, label+".max_tool_rounds", "max_tool_rounds must be an integer")
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > int64(h.opts.MaxToolRoundsLimit) {
		return 0, false, badRequest(ReasonInvalidMaxToolRounds, label+".max_tool_rounds", fmt.Sprintf("max_tool_rounds must be an integer from 0 to %d", h.opts.MaxToolRoundsLimit))
	}
	return int(i), true, nil
}

// parseToolChoice reads tool_choice; the mcp form names our hosted tools.
func (h *Handler) parseToolChoice(raw json.RawMessage, enabled map[string]bool) (loop.ToolChoice, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return loop.ToolChoice{Mode: loop.ToolChoiceMode(s), Dialect: loop.DialectOpenAI, Raw: raw}, nil
		}
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice", `tool_choice must be "auto", "none", "required" or an object`)
	}
	var obj struct {
		Type        string `json:"type"`
		ServerLabel string `json:"server_label"`
		Name        string `json:"name"`
		Function    struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice", "tool_choice must be a string or an object")
	}
	switch obj.Type {
	case "mcp":
		if obj.ServerLabel != h.opts.Label {
			return loop.ToolChoice{}, badRequest(ReasonServerToolUnsupported, "tool_choice.server_label", fmt.Sprintf("server_label %q is not supported; use %q", obj.ServerLabel, h.opts.Label))
		}
		if len(enabled) == 0 {
			return loop.ToolChoice{}, badRequest(ReasonToolChoiceNotEnabled, "tool_choice", "tool_choice asks for a hosted tool but the request enables none")
		}
		if obj.Name == "" {
			return loop.ToolChoice{Mode: loop.ToolChoiceRequired}, nil
		}
		if !enabled[obj.Name] {
			e := badRequest(ReasonToolChoiceNotEnabled, "tool_choice.name", fmt.Sprintf("tool_choice names %q, which is not a hosted tool enabled in this request", obj.Name))
			e.names = []string{obj.Name}
			return loop.ToolChoice{}, e
		}
		return loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: obj.Name}, nil
	case "function":
		return loop.ToolChoice{Mode: loop.ToolChoiceFunction, Name: obj.Function.Name, Dialect: loop.DialectOpenAI, Raw: raw}, nil
	default:
		// allowed_tools and future forms: passed through as written.
		return loop.ToolChoice{Mode: loop.ToolChoiceAuto, Dialect: loop.DialectOpenAI, Raw: raw}, nil
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// SlotHeader declares the caller slot of a request's hosted calls (the
// seed's extension field takes only max_tool_rounds). An unknown slot is
// refused before the request reaches the handlers (internal/toolhost), and by
// the pipeline.
const SlotHeader = "X-Toolhost-Slot"

// PageHeader names the caller's page of the request's floor (tools/page.go):
// the page its hosted calls' results go into. metadata.page_id says the
// same; given both, they must agree.
const PageHeader = "X-Toolhost-Page-Id"

// pageID is the page a request names: metadata.page_id, else the
// X-Toolhost-Page-Id header (once); "" when neither is given. A value
// outside the rule of page ids, a repeated header or two sources that
// disagree are refused before any model round.
func pageID(r *http.Request, md map[string]string) (string, *requestError) {
	hdr := r.Header.Values(PageHeader)
	if len(hdr) > 1 {
		return "", badRequest(ReasonInvalidRequest, PageHeader, fmt.Sprintf("%s is given %d times; give it once", PageHeader, len(hdr)))
	}
	meta, inMeta := md["page_id"]
	if inMeta {
		if te := tools.CheckPageID("metadata.page_id", meta); te != nil {
			return "", badRequest(ReasonInvalidRequest, "metadata.page_id", te.Message)
		}
	}
	if len(hdr) == 0 {
		return meta, nil
	}
	if te := tools.CheckPageID(PageHeader, hdr[0]); te != nil {
		return "", badRequest(ReasonInvalidRequest, PageHeader, te.Message)
	}
	if inMeta && meta != hdr[0] {
		return "", badRequest(ReasonInvalidRequest, PageHeader, fmt.Sprintf("%s and metadata.page_id name different pages; give one", PageHeader))
	}
	return hdr[0], nil
}

// SessionHeader names the session of a hosted request when its metadata
// does not (metadata.session_id).
const SessionHeader = "X-Session-Id"

// sessionID is metadata.session_id, else the X-Session-Id header; "" when
// that value breaks the rule of session ids (checkSessionID refuses the
// request), so no store is ever asked for it.
func sessionID(r *http.Request, md map[string]string) string {
	s, _ := sessionSource(r, md)
	if session.ValidID(s) != nil {
		return ""
	}
	return s
}

// sessionSource is the session id a request names and where it came from.
func sessionSource(r *http.Request, md map[string]string) (id, from string) {
	if s := md["session_id"]; s != "" {
		return s, "metadata.session_id"
	}
	return r.Header.Get(SessionHeader), SessionHeader
}

// checkSessionID refuses, before any model round, a session id outside
// the rule of session ids (1–128 characters of A-Z a-z 0-9 . _ : -): a
// huge, control-character or look-alike id would otherwise reach the
// session store and the journal.
func checkSessionID(r *http.Request, md map[string]string) *requestError {
	id, from := sessionSource(r, md)
	if id == "" {
		return nil
	}
	if err := session.ValidID(id); err != nil {
		return badRequest(ReasonInvalidRequest, from, fmt.Sprintf("%s is refused: %v", from, err))
	}
	return nil
}

// applyHosted does the steps every format shares once its declaration is
// read: the enabled hosted tools in catalog order, max_tool_rounds from the
// extension field (refused without a declaration; declareHint says how this
// format declares), and the refusal of a caller tool named like an enabled
// hosted tool (renameHint says how to avoid it in this format). Where
// answers is not nil, the extension field may carry approval answers,
// which go there.
func (h *Handler) applyHosted(hosted *loop.Hosted, declared bool, enabledSet map[string]bool, callerTools []loop.Function,
	ext json.RawMessage, label, declareHint, noun, renameHint string, answers *[]loop.ApprovalAnswer) error {
	if declared {
		for _, s := range h.published().List() {
			if enabledSet[s.Name] {
				hosted.Tools = append(hosted.Tools, s.Name)
			}
		}
	}
	fields, err := h.parseExtension(ext, answers != nil)
	if err != nil {
		return err
	}
	rounds, hasRounds := fields.rounds, fields.hasRounds
	if len(fields.approvals) > 0 {
		if !declared {
			return badRequest(ReasonApprovalsWithoutHosted, label+".approvals", fmt.Sprintf("%s.approvals answers approval requests of hosted tools, but the request declares none (%s)", label, declareHint))
		}
		*answers = fields.approvals
	}
	if hasRounds && !declared {
		return badRequest(ReasonRoundsWithoutHosted, label+".max_tool_rounds", fmt.Sprintf("%s.max_tool_rounds is set but the request declares no hosted tools (%s)", label, declareHint))
	}
	hosted.MaxToolRounds = h.opts.DefaultMaxToolRounds
	if hasRounds {
		hosted.MaxToolRounds = rounds
	}
	if !declared {
		return nil
	}
	var clash []string
	for _, f := range callerTools {
		if enabledSet[f.Name] {
			clash = append(clash, f.Name)
		}
	}
	if len(clash) > 0 {
		e := badRequest(ReasonToolNameConflict, "tools", fmt.Sprintf("your %s %s has the name of an enabled hosted tool; %s", noun, strings.Join(quoteAll(clash), ", "), renameHint))
		e.names = clash
		return e
	}
	return nil
}
