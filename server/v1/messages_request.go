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
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
	"github.com/toolhost/toolhost/tools/approval"
)

// MCPBeta is the anthropic-beta value that declares the MCP connector
// (mcp_servers + mcp_toolset) this face accepts.
const MCPBeta = "mcp-client-2025-11-20"

// Reasons of 400 answers specific to the Messages format.
const (
	ReasonBetaRequired         = "mcp_beta_required"
	ReasonToolsetWithoutServer = "mcp_toolset_without_server"
	ReasonServerWithoutToolset = "mcp_server_without_toolset"
)

// messagesRequest is a checked Messages request.
type messagesRequest struct {
	hostedRequest
	h *Handler
	// builtins are the declared server tools hosted tools serve
	// (messages_servertools.go); nil when none, or on a route whose
	// upstream runs them.
	builtins serverTools
	// serverDecls are the server tool items of tools, until the route
	// tells whether they pass through.
	serverDecls []serverToolDecl
}

// messagesFields are the members of a Messages request the face consumes;
// the rest go to the upstream untouched (an Anthropic route) or translated
// (an OpenAI one).
type messagesFields struct {
	MCPServers json.RawMessage `json:"mcp_servers"`
	Messages   json.RawMessage `json:"messages"`
	Model      json.RawMessage `json:"model"`
	Stream     json.RawMessage `json:"stream"`
	System     json.RawMessage `json:"system"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Tools      json.RawMessage `json:"tools"`
}

// hasBeta reports whether an anthropic-beta header lists beta.
func hasBeta(r *http.Request, beta string) bool {
	for _, v := range r.Header.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// parseMessages reads and checks a Messages body (also the count_tokens
// body). Every refusal is a *requestError with a machine-readable reason.
func (h *Handler) parseMessages(r *http.Request, body []byte) (*messagesRequest, error) {
	top, err := readMembers(body)
	if err != nil {
		return nil, err
	}
	var in messagesFields
	_ = wire.Fill(top, &in) // raw members always decode
	label := h.opts.Label
	mr := &messagesRequest{h: h}
	mr.loop.OptionsDialect = loop.DialectAnthropic
	mr.loop.Options = h.options(top, in)
	if err := json.Unmarshal(in.Model, &mr.loop.Model); err != nil || mr.loop.Model == "" {
		return nil, badRequest(ReasonInvalidRequest, "model", "model is required and must be a string")
	}
	if s := in.Stream; present(s) {
		if err := json.Unmarshal(s, &mr.loop.Stream); err != nil {
			return nil, badRequest(ReasonInvalidRequest, "stream", "stream must be a boolean")
		}
	}
	if md, ok := top["metadata"]; ok && string(md) != "null" {
		if err := mr.readMetadata(md); err != nil {
			return nil, err
		}
	}

	// The hosted declaration: mcp_servers and mcp_toolset tools items.
	servers, err := h.parseMCPServers(r, in.MCPServers, label)
	if err != nil {
		return nil, err
	}

	enabledSet, toolsets, err := h.parseMessagesTools(in.Tools, servers, label, mr)
	if err != nil {
		return nil, err
	}
	// Server tools: forwarded to an upstream that runs them, else served.
	native := h.nativeServerTools(mr.loop.Model)
	if len(mr.serverDecls) > 0 {
		mr.builtin = true
		if native {
			mr.passServerTools(mr.serverDecls)
		} else if err := mr.serveServerTools(mr.serverDecls, enabledSet); err != nil {
			return nil, err
		}
	}
	for name := range servers {
		if !toolsets[name] {
			return nil, badRequest(ReasonServerWithoutToolset, "mcp_servers", fmt.Sprintf("MCP server %q has no mcp_toolset in tools; add {\"type\":\"mcp_toolset\",\"mcp_server_name\":%q}", name, name))
		}
	}
	if err := h.applyHosted(&mr.hosted, mr.declared, enabledSet, mr.loop.Tools, top[label], label,
		fmt.Sprintf("mcp_servers with %q and its mcp_toolset", label), "tool", "rename it or disable the hosted tool in the mcp_toolset configs", &mr.loop.Approvals); err != nil {
		return nil, err
	}

	// system, then the conversation with our blocks turned back into tool
	// round trips.
	if s := in.System; present(s) {
		text, err := systemText(s)
		if err != nil {
			return nil, badRequest(ReasonInvalidRequest, "system", err.Error())
		}
		mr.loop.Messages = append(mr.loop.Messages, loop.Message{Role: loop.RoleSystem, Text: text, Dialect: loop.DialectAnthropic, Raw: s})
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(in.Messages, &msgs); err != nil || len(msgs) == 0 {
		return nil, badRequest(ReasonInvalidRequest, "messages", "messages is required and must be a non-empty list")
	}
	for i, raw := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		expanded, err := h.expandContinuation(raw, param, !native)
		if err != nil {
			return nil, err
		}
		for _, em := range expanded {
			ms, err := anthropic.DecodeMessage(em)
			if err != nil {
				return nil, badRequest(ReasonInvalidRequest, param, err.Error())
			}
			mr.loop.Messages = append(mr.loop.Messages, ms...)
		}
	}
	mr.loop.Messages = placeAnswers(mr.loop.Messages, mr.loop.Approvals)
	mr.loop.ApprovalVia = approval.ViaV1Messages

	if tc := in.ToolChoice; present(tc) {
		choice, err := messagesToolChoice(tc)
		if err != nil {
			return nil, err
		}
		mr.loop.ToolChoice = mr.builtins.choice(choice)
	}
	return mr, nil
}

// readMetadata keeps metadata's string values for the round log and sends
// on only user_id, the one key the Messages API accepts.
func (mr *messagesRequest) readMetadata(md json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(md, &m); err != nil {
		return badRequest(ReasonInvalidRequest, "metadata", "metadata must be an object")
	}
	mr.metadata = map[string]string{}
	for k, v := range m {
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			mr.metadata[k] = s
		}
	}
	// The Messages API refuses metadata keys other than user_id; ours
	// (session_id, tags for the round log) stay here.
	if raw, ok := m["user_id"]; ok {
		var upstream struct {
			UserID any `json:"user_id"` // as encoding/json reads it
		}
		_ = json.Unmarshal(raw, &upstream.UserID)
		mr.loop.Options["metadata"], _ = json.Marshal(upstream)
	} else {
		delete(mr.loop.Options, "metadata")
	}
	return nil
}

// continuedToolUse is an mcp_tool_use block of our server as the tool_use
// the model made.
func (h *Handler) continuedToolUse(b json.RawMessage, param string) (json.RawMessage, error) {
	var u struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		ServerName string          `json:"server_name"`
		Input      json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, "mcp_tool_use: "+err.Error())
	}
	if u.ServerName != h.opts.Label {
		return nil, badRequest(ReasonServerToolUnsupported, param+".server_name", fmt.Sprintf("mcp_tool_use of server %q cannot be continued here; only %q", u.ServerName, h.opts.Label))
	}
	if len(u.Input) == 0 {
		u.Input = json.RawMessage(`{}`)
	}
	return marshal(toolUseBlock{Type: "tool_use", ID: u.ID, Name: u.Name, Input: u.Input})
}

// continuedToolResult is an mcp_tool_result block as the tool_result the
// model was given.
func continuedToolResult(b json.RawMessage, param string) (json.RawMessage, error) {
	var r struct {
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, "mcp_tool_result: "+err.Error())
	}
	tr := toolResultBlock{Type: "tool_result", ToolUseID: r.ToolUseID, Content: r.Content, IsError: r.IsError}
	if len(r.Content) == 0 {
		tr.Content = json.RawMessage(`""`)
	}
	return marshal(tr)
}

// Shapes of a continuation turned back into tool round trips.
type (
	turnJSON struct {
		Content []json.RawMessage `json:"content"`
		Role    string            `json:"role"`
	}
	toolResultBlock struct {
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error,omitempty"`
		ToolUseID string          `json:"tool_use_id"`
		Type      string          `json:"type"`
	}
)

// parseMCPServers reads mcp_servers: only our own server, of type url,
// once, with the MCP beta header, in a deployment with hosted tools.
func (h *Handler) parseMCPServers(r *http.Request, ms json.RawMessage, label string) (map[string]bool, error) {
	servers := map[string]bool{}
	if len(ms) == 0 || string(ms) == "null" {
		return servers, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(ms, &items); err != nil {
		return nil, badRequest(ReasonInvalidRequest, "mcp_servers", "mcp_servers must be a list")
	}
	for i, item := range items {
		param := fmt.Sprintf("mcp_servers[%d]", i)
		var s struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(item, &s); err != nil {
			return nil, badRequest(ReasonInvalidRequest, param, "each MCP server must be an object")
		}
		if s.Name != label {
			return nil, badRequest(ReasonServerToolUnsupported, param+".name", fmt.Sprintf("MCP server %q is not supported; the hosted tools here are declared with the server name %q", s.Name, label))
		}
		if s.Type != "url" {
			return nil, badRequest(ReasonInvalidRequest, param+".type", `an MCP server's type must be "url"`)
		}
		if servers[s.Name] {
			return nil, badRequest(ReasonInvalidRequest, param+".name", fmt.Sprintf("MCP server %q is declared twice", s.Name))
		}
		servers[s.Name] = true
	}
	if len(items) > 0 && !hasBeta(r, MCPBeta) {
		return nil, badRequest(ReasonBetaRequired, "mcp_servers", "mcp_servers needs the header anthropic-beta: "+MCPBeta)
	}
	if len(items) > 0 && !h.opts.Enabled {
		return nil, badRequest(ReasonHostedDisabled, "mcp_servers", "hosted tools are not enabled in this deployment")
	}
	return servers, nil
}

// messagesToolChoice reads a Messages tool_choice, keeping its raw form.
func messagesToolChoice(tc json.RawMessage) (loop.ToolChoice, error) {
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(tc, &c); err != nil {
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice", "tool_choice must be an object")
	}
	choice := loop.ToolChoice{Dialect: loop.DialectAnthropic, Raw: tc}
	switch c.Type {
	case "auto":
		choice.Mode = loop.ToolChoiceAuto
	case "none":
		choice.Mode = loop.ToolChoiceNone
	case "any":
		choice.Mode = loop.ToolChoiceRequired
	case "tool":
		choice.Mode, choice.Name = loop.ToolChoiceFunction, c.Name
	default:
		return loop.ToolChoice{}, badRequest(ReasonInvalidRequest, "tool_choice.type", `tool_choice.type must be "auto", "any", "tool" or "none"`)
	}
	return choice, nil
}

// parseMessagesTools reads tools: the caller's functions go to the loop
// request, each mcp_toolset (one per declared server) enables hosted tools.
// It returns the enabled hosted tools and the servers that have a toolset.
func (h *Handler) parseMessagesTools(t json.RawMessage, servers map[string]bool, label string, mr *messagesRequest) (enabledSet, toolsets map[string]bool, err error) {
	enabledSet, toolsets = map[string]bool{}, map[string]bool{}
	if len(t) == 0 || string(t) == "null" {
		return enabledSet, toolsets, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(t, &items); err != nil {
		return nil, nil, badRequest(ReasonInvalidRequest, "tools", "tools must be a list")
	}
	for i, item := range items {
		param := fmt.Sprintf("tools[%d]", i)
		var head struct {
			Type          string          `json:"type"`
			Name          string          `json:"name"`
			Description   string          `json:"description"`
			InputSchema   json.RawMessage `json:"input_schema"`
			MCPServerName string          `json:"mcp_server_name"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, nil, badRequest(ReasonInvalidRequest, param, "each tool must be an object")
		}
		if kind, ok := serverToolKindOf(head.Type); ok {
			if len(mr.serverDecls) >= len(serverToolKinds) {
				return nil, nil, badRequest(ReasonInvalidRequest, param, "declare each server tool (web_search, web_fetch, code_execution) once")
			}
			mr.serverDecls = append(mr.serverDecls, serverToolDecl{kind: kind, typ: head.Type, item: item, param: param})
			continue
		}
		if head.Type != "mcp_toolset" {
			mr.loop.Tools = append(mr.loop.Tools, loop.Function{
				Name: head.Name, Description: head.Description, Parameters: head.InputSchema,
				Dialect: loop.DialectAnthropic, Raw: item,
			})
			continue
		}
		if !servers[head.MCPServerName] {
			if head.MCPServerName != label {
				return nil, nil, badRequest(ReasonServerToolUnsupported, param+".mcp_server_name", fmt.Sprintf("MCP server %q is not supported; the hosted tools here are declared with the server name %q", head.MCPServerName, label))
			}
			return nil, nil, badRequest(ReasonToolsetWithoutServer, param+".mcp_server_name", fmt.Sprintf("the mcp_toolset names server %q, which is not in mcp_servers", head.MCPServerName))
		}
		if toolsets[head.MCPServerName] {
			return nil, nil, badRequest(ReasonInvalidRequest, param, fmt.Sprintf("server %q has more than one mcp_toolset", head.MCPServerName))
		}
		toolsets[head.MCPServerName] = true
		names, err := h.parseToolset(item, param)
		if err != nil {
			return nil, nil, err
		}
		mr.declared = true
		for _, n := range names {
			enabledSet[n] = true
		}
	}
	return enabledSet, toolsets, nil
}

// parseToolset reads an mcp_toolset: default_config.enabled (default true)
// and per-tool configs decide which published tools are enabled.
func (h *Handler) parseToolset(item json.RawMessage, param string) ([]string, error) {
	type config struct {
		Enabled *bool `json:"enabled"`
	}
	var ts struct {
		DefaultConfig config            `json:"default_config"`
		Configs       map[string]config `json:"configs"`
	}
	if err := json.Unmarshal(item, &ts); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, "mcp_toolset: "+err.Error())
	}
	published := h.published()
	var unknown []string
	for n := range ts.Configs {
		if _, ok := published.Lookup(n); !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		e := badRequest(ReasonUnknownHostedTool, param+".configs", fmt.Sprintf("no hosted tool named %s; available: %s", strings.Join(quoteAll(unknown), ", "), strings.Join(h.publishedNames(), ", ")))
		e.names = unknown
		return nil, e
	}
	def := ts.DefaultConfig.Enabled == nil || *ts.DefaultConfig.Enabled
	var names []string
	for _, s := range published.List() {
		on := def
		if c, ok := ts.Configs[s.Name]; ok && c.Enabled != nil {
			on = *c.Enabled
		}
		if on {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return nil, badRequest(ReasonNoHostedToolEnabled, param, "the mcp_toolset enables no tool: set default_config.enabled or enable tools in configs")
	}
	return names, nil
}

// systemText is the text of a system value (a string or text blocks).
func systemText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("system must be a string or a list of text blocks")
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n"), nil
}

// expandContinuation turns an assistant message holding our mcp_tool_use /
// mcp_tool_result blocks (a previous response sent back) into the tool
// round trips the model made: assistant [..., tool_use] → user
// [tool_result] → assistant [...]; with servers, the server tools' blocks
// too (messages_serverblocks.go). Other messages pass unchanged.
func (h *Handler) expandContinuation(raw json.RawMessage, param string, servers bool) ([]json.RawMessage, error) {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param, "each message must be an object")
	}
	c := bytes.TrimSpace(w.Content)
	if w.Role != "assistant" || len(c) == 0 || c[0] != '[' {
		return []json.RawMessage{raw}, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(c, &blocks); err != nil {
		return nil, badRequest(ReasonInvalidRequest, param+".content", "content must be a string or a list of blocks")
	}
	ours := false
	for _, b := range blocks {
		t := anthropic.BlockType(b)
		if t == "mcp_tool_use" || t == "mcp_tool_result" || servers && isServerBlock(t) {
			ours = true
			break
		}
	}
	if !ours {
		return []json.RawMessage{raw}, nil
	}
	var out []json.RawMessage
	var asst, results []json.RawMessage
	flush := func() error {
		for _, turn := range []struct {
			role   string
			blocks *[]json.RawMessage
		}{{"assistant", &asst}, {"user", &results}} {
			if len(*turn.blocks) == 0 {
				continue
			}
			b, err := marshal(turnJSON{Role: turn.role, Content: *turn.blocks})
			if err != nil {
				return err
			}
			out = append(out, b)
			*turn.blocks = nil
		}
		return nil
	}
	for i, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", param, i)
		typ := anthropic.BlockType(b)
		if servers && isServerBlock(typ) {
			typ = "server:" + typ
		}
		switch typ {
		case "mcp_tool_use", "server:server_tool_use":
			nb, err := h.continuedToolUse(b, bp)
			if typ != "mcp_tool_use" {
				nb, err = continuedServerUse(b, bp)
			}
			if err != nil {
				return nil, err
			}
			if len(results) > 0 {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			asst = append(asst, nb)
		case "mcp_tool_result", "server:web_search_tool_result", "server:web_fetch_tool_result", "server:code_execution_tool_result", "server:bash_code_execution_tool_result":
			nb, err := continuedToolResult(b, bp)
			if typ != "mcp_tool_result" {
				nb, err = continuedServerResult(b, bp)
			}
			if err != nil {
				return nil, err
			}
			results = append(results, nb)
		default:
			if len(results) > 0 {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			asst = append(asst, b)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
