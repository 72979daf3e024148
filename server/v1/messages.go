package v1

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
)

// messagesFace is the Anthropic Messages format (POST /v1/messages, with
// hosted tools declared through the MCP connector).
type messagesFace struct{ h *Handler }

func (f messagesFace) parse(r *http.Request, body []byte) (request, error) {
	return f.h.parseMessages(r, body)
}

func (messagesFace) writeError(w http.ResponseWriter, e *requestError) { writeMessagesError(w, e) }

func (mr *messagesRequest) prepare(*loop.Run) error { return nil }

func (mr *messagesRequest) render(run *loop.Run, res *loop.Result) any {
	return mr.h.messagesResponse(mr, run, res)
}

func (mr *messagesRequest) stream(w http.ResponseWriter) stream {
	return &messagesStream{h: mr.h, sseWriter: sseWriter{w: w}, mr: mr, textOpen: -1, thinkOpen: -1}
}

// message is a Messages message; Extra holds an Anthropic upstream's other
// fields and the extension field.
type message struct {
	Content      []json.RawMessage          `json:"content"`
	ID           string                     `json:"id"`
	Model        string                     `json:"model"`
	Role         string                     `json:"role"`
	StopReason   *string                    `json:"stop_reason"`
	StopSequence json.RawMessage            `json:"stop_sequence"`
	Type         string                     `json:"type"`
	Usage        json.RawMessage            `json:"usage"`
	Extra        map[string]json.RawMessage `json:"-"`
}

func (m message) MarshalJSON() ([]byte, error) {
	type plain message
	return wire.Marshal(plain(m), m.Extra)
}

// messagesResponse renders a finished run as one message: each hosted
// round's blocks (hosted tool_use as mcp_tool_use) and its mcp_tool_result
// blocks, then the last round's blocks without skipped hosted calls.
func (h *Handler) messagesResponse(mr *messagesRequest, run *loop.Run, res *loop.Result) message {
	var extra map[string]json.RawMessage
	if res.Final.Dialect == loop.DialectAnthropic {
		extra = res.Final.Extra
	}
	content := []json.RawMessage{}
	for _, c := range res.Resumed {
		content = append(content, h.mcpToolUse(c.ID, c.Name, c.Args), resultBlock(c))
	}
	paused := len(res.Awaiting()) > 0
	var found []foundItem // web search results, which later texts cite
	for n, rr := range res.Rounds {
		if n == len(res.Rounds)-1 && !paused {
			break
		}
		content = append(content, citeBlocks(h.hostedRoundBlocks(rr, mr.builtins), found)...)
		content = append(content, resultBlocks(rr.Calls, mr.builtins)...)
		found = append(found, mr.builtins.found(rr.Calls)...)
	}
	if !paused {
		content = append(content, citeBlocks(finalBlocks(res), found)...)
	}
	stopReason, stopSeq := messagesStop(res)
	return message{
		ID:           messageID(res.First.ID),
		Type:         "message",
		Role:         "assistant",
		Model:        res.First.Model,
		Content:      content,
		StopReason:   &stopReason,
		StopSequence: stopSeq,
		Usage:        messagesUsage(res, mr.declared),
		Extra:        h.labelled(extra, h.extension(mr.declared, run, res)),
	}
}

// messageID gives ids from an OpenAI upstream the Messages prefix.
func messageID(id string) string {
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + id
}

// messagesStop is the stop reason and stop sequence (JSON) of the run.
func messagesStop(res *loop.Result) (string, json.RawMessage) {
	null := json.RawMessage("null")
	if len(res.Awaiting()) > 0 {
		// The turn is paused until the caller answers the approval
		// requests (the extension field's approval_requests).
		return "pause_turn", null
	}
	if res.Final.Dialect == loop.DialectAnthropic && !(res.HostedRemoved && res.FinishReason == loop.FinishStop) {
		var s string
		if json.Unmarshal(res.Final.Extra["stop_reason"], &s) == nil && s != "" {
			// Whatever the upstream sent, as encoding/json reads it.
			var seq any
			_ = json.Unmarshal(res.Final.Extra["stop_sequence"], &seq)
			if b, err := marshal(seq); err == nil {
				return s, b
			}
			return s, null
		}
	}
	return anthropic.StopReason(res.FinishReason), null
}

// modelBlocks are the content blocks of an upstream answer: the raw blocks
// from an Anthropic upstream, else text then tool_use blocks.
func modelBlocks(resp *loop.UpstreamResponse, msg loop.Message) []json.RawMessage {
	if resp.Dialect == loop.DialectAnthropic {
		var w struct {
			Content []json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Raw, &w) == nil && msg.Raw != nil {
			return w.Content
		}
	}
	var out []json.RawMessage
	if msg.Text != "" {
		b, _ := marshal(textBlock{Type: "text", Text: msg.Text})
		out = append(out, b)
	}
	for _, c := range msg.ToolCalls {
		b, _ := marshal(toolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: objectOrEmpty(c.Args)})
		out = append(out, b)
	}
	return out
}

// hostedRoundBlocks: the round's blocks with its hosted tool_use blocks as
// mcp_tool_use, or server_tool_use for those serving a server tool.
func (h *Handler) hostedRoundBlocks(rr loop.RoundResult, bt serverTools) []json.RawMessage {
	// Calls skipped for a budget are left out, as in the last round.
	hosted, skipped := map[string]bool{}, map[string]bool{}
	for _, c := range rr.Calls {
		hosted[c.ID] = true
		skipped[c.ID] = c.Status == loop.StatusSkipped
	}
	var out []json.RawMessage
	for _, b := range modelBlocks(rr.Response, rr.Response.Message) {
		var u struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(b, &u) == nil && u.Type == "tool_use" && skipped[u.ID] {
			continue
		}
		if u.Type == "tool_use" && hosted[u.ID] {
			if t, ok := bt.serves(u.Name); ok {
				b = serverToolUse(t, loop.Call{ID: u.ID}, objectOrEmpty(u.Input))
			} else {
				b = h.mcpToolUse(u.ID, u.Name, u.Input)
			}
		}
		out = append(out, b)
	}
	return out
}

// Content blocks of a Messages answer.
type (
	textBlock struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	thinkingBlock struct {
		Signature string `json:"signature"`
		Thinking  string `json:"thinking"`
		Type      string `json:"type"`
	}
	// toolUseBlock is tool_use, and mcp_tool_use with ServerName.
	toolUseBlock struct {
		ID         string          `json:"id"`
		Input      json.RawMessage `json:"input"`
		Name       string          `json:"name"`
		ServerName string          `json:"server_name,omitempty"`
		Type       string          `json:"type"`
	}
	mcpToolResultBlock struct {
		Content   []textBlock `json:"content"`
		IsError   bool        `json:"is_error"`
		ToolUseID string      `json:"tool_use_id"`
		Type      string      `json:"type"`
	}
)

// objectOrEmpty is a tool input as given, or {} when it is not JSON.
func objectOrEmpty(input []byte) json.RawMessage {
	if len(input) == 0 || !json.Valid(input) {
		return json.RawMessage(`{}`)
	}
	return input
}

func (h *Handler) mcpToolUse(id, name string, input json.RawMessage) json.RawMessage {
	b, _ := marshal(toolUseBlock{Type: "mcp_tool_use", ID: id, Name: name, ServerName: h.opts.Label, Input: objectOrEmpty(input)})
	return b
}

func mcpToolResult(c loop.Call) mcpToolResultBlock {
	return mcpToolResultBlock{Type: "mcp_tool_result", ToolUseID: c.ID, IsError: c.IsError, Content: []textBlock{{Type: "text", Text: c.Result}}}
}

func resultBlock(c loop.Call) json.RawMessage {
	b, _ := marshal(mcpToolResult(c))
	return b
}

// resultBlocks are the results of a round's calls: mcp_tool_result, or
// the server tool's result block for a call serving one.
func resultBlocks(calls []loop.Call, bt serverTools) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(calls))
	for _, c := range calls {
		if c.Status == loop.StatusSkipped {
			continue
		}
		if t, ok := bt.serves(c.Name); ok {
			out = append(out, serverResult(t, c))
			continue
		}
		out = append(out, resultBlock(c))
	}
	return out
}

// finalBlocks: the last round's blocks without its skipped hosted calls.
func finalBlocks(res *loop.Result) []json.RawMessage {
	skipped := map[string]bool{}
	for _, c := range res.Rounds[len(res.Rounds)-1].Calls {
		skipped[c.ID] = true
	}
	var out []json.RawMessage
	for _, b := range modelBlocks(res.Final, res.Final.Message) {
		var u struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(b, &u) == nil && u.Type == "tool_use" && skipped[u.ID] {
			continue
		}
		out = append(out, b)
	}
	return out
}

// roundUsage is one usage in Messages form, by member: an Anthropic
// upstream's own usage object as it came, else the counts.
func roundUsage(u loop.Usage) map[string]json.RawMessage {
	if u.Dialect == loop.DialectAnthropic && u.Detail != nil {
		out := make(map[string]json.RawMessage, len(u.Detail))
		for k, v := range u.Detail {
			out[k], _ = marshal(v)
		}
		return out
	}
	num := func(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }
	return map[string]json.RawMessage{
		"input_tokens":                num(u.InputTokens - u.CachedInputTokens),
		"cache_creation_input_tokens": num(0),
		"cache_read_input_tokens":     num(u.CachedInputTokens),
		"output_tokens":               num(u.OutputTokens),
	}
}

// messagesUsageJSON is the usage of a message: the summed usage's members
// (Extra) and, with hosted tools declared, each round's as iterations.
type messagesUsageJSON struct {
	Iterations *[]usageIteration          `json:"iterations,omitempty"`
	Extra      map[string]json.RawMessage `json:"-"`
}

func (u messagesUsageJSON) MarshalJSON() ([]byte, error) {
	type plain messagesUsageJSON
	return wire.Marshal(plain(u), u.Extra)
}

// usageIteration is one BetaMessageIterationUsage: one upstream call.
type usageIteration struct {
	CacheCreation            json.RawMessage `json:"cache_creation"`
	CacheCreationInputTokens json.RawMessage `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     json.RawMessage `json:"cache_read_input_tokens,omitempty"`
	InputTokens              json.RawMessage `json:"input_tokens,omitempty"`
	Model                    string          `json:"model"`
	OutputTokens             json.RawMessage `json:"output_tokens,omitempty"`
	Type                     string          `json:"type"`
}

// messagesUsage is the summed usage; with hosted tools declared it also
// lists each round's usage as iterations.
func messagesUsage(res *loop.Result, declared bool) json.RawMessage {
	out := messagesUsageJSON{Extra: roundUsage(res.Usage)}
	if declared {
		its := make([]usageIteration, 0, len(res.Rounds))
		for _, rr := range res.Rounds {
			u := roundUsage(rr.Usage)
			it := usageIteration{
				Type: "message", Model: rr.Response.Model, CacheCreation: u["cache_creation"],
				InputTokens: u["input_tokens"], OutputTokens: u["output_tokens"],
				CacheCreationInputTokens: u["cache_creation_input_tokens"], CacheReadInputTokens: u["cache_read_input_tokens"],
			}
			if it.CacheCreation == nil {
				it.CacheCreation = json.RawMessage("null")
			}
			its = append(its, it)
		}
		out.Iterations = &its
	}
	b, _ := marshal(out)
	return b
}

// messagesError is the Anthropic error shape with our details:
// {"type":"error","error":{"type","message","param","code","details"}}.
type messagesError struct {
	Error errorObject `json:"error"`
	Type  string      `json:"type"`
}

func messagesErrorBody(e *requestError) messagesError {
	typ := "invalid_request_error"
	switch {
	case e.status == http.StatusUnauthorized:
		typ = "authentication_error"
	case e.status == http.StatusForbidden:
		typ = "permission_error"
	case e.status == http.StatusNotFound:
		typ = "not_found_error"
	case e.status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case e.status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case e.status >= 500:
		typ = "api_error"
	}
	inner := e.body().Error
	inner.Type = typ
	return messagesError{Type: "error", Error: inner}
}

func writeMessagesError(w http.ResponseWriter, e *requestError) {
	server.WriteJSON(w, e.status, messagesErrorBody(e))
}
