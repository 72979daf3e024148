package v1

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"toolhost/identity"
	"toolhost/loop"
	"toolhost/loop/upstream/anthropic"
	"toolhost/server"
)

// messages serves POST /v1/messages (the Anthropic Messages format with
// hosted tools declared through the MCP connector).
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	body, rerr := h.readBody(w, r)
	if rerr != nil {
		writeMessagesError(w, rerr)
		return
	}
	h.withIdempotency(w, r, body, func(w http.ResponseWriter) {
		h.serveMessages(w, r, body)
	})
}

func (h *Handler) serveMessages(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx := r.Context()
	mr, err := h.parseMessages(r, body)
	if err != nil {
		var re *requestError
		if !errors.As(err, &re) {
			re = badRequest(ReasonInvalidRequest, "", err.Error())
		}
		writeMessagesError(w, re)
		return
	}
	route, err := h.opts.Router.Pick(mr.loop.Model, mr.declared)
	if err != nil {
		writeMessagesError(w, h.runError(ctx, err))
		return
	}
	id, _ := identity.FromContext(ctx)
	run := &loop.Run{
		Request: mr.loop,
		Hosted:  mr.hosted,
		Route:   route,
		Lang:    lang(r),
		Caller: loop.Caller{
			RequestID:      requestID(ctx),
			SessionID:      sessionID(r, mr.metadata),
			Slot:           r.Header.Get(SlotHeader),
			Identity:       id,
			TraceID:        server.TraceID(r.Header),
			IdempotencyKey: r.Header.Get("Idempotency-Key"),
			Metadata:       mr.metadata,
		},
	}
	if !mr.loop.Stream {
		res, err := h.opts.Runner.Run(ctx, run)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			writeMessagesError(w, h.runError(ctx, err))
			return
		}
		server.WriteJSON(w, http.StatusOK, h.messagesResponse(mr, run, res))
		return
	}
	ms := &messagesStream{h: h, sseWriter: sseWriter{w: w}, mr: mr, textOpen: -1, thinkOpen: -1}
	run.Sink = ms.event
	res, err := h.opts.Runner.Run(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		re := h.runError(ctx, err)
		if !ms.started {
			writeMessagesError(w, re)
			return
		}
		if d, ok := w.(interface{ discard() }); ok {
			d.discard()
		}
		_ = ms.send("error", messagesErrorBody(re))
		return
	}
	ms.finish(run, res)
}

// messagesResponse renders a finished run as one message: each hosted
// round's blocks (hosted tool_use as mcp_tool_use) and its mcp_tool_result
// blocks, then the last round's blocks without skipped hosted calls.
func (h *Handler) messagesResponse(mr *messagesRequest, run *loop.Run, res *loop.Result) map[string]any {
	out := map[string]any{}
	if res.Final.Dialect == loop.DialectAnthropic {
		for k, v := range res.Final.Extra {
			out[k] = v
		}
	}
	content := []json.RawMessage{}
	for _, rr := range res.Rounds[:len(res.Rounds)-1] {
		content = append(content, h.hostedRoundBlocks(rr)...)
		content = append(content, resultBlocks(rr.Calls)...)
	}
	content = append(content, finalBlocks(res)...)
	stopReason, stopSeq := messagesStop(res)
	out["id"] = messageID(res.First.ID)
	out["type"] = "message"
	out["role"] = "assistant"
	out["model"] = res.First.Model
	out["content"] = content
	out["stop_reason"] = stopReason
	out["stop_sequence"] = stopSeq
	out["usage"] = messagesUsage(res, mr.declared)
	out[h.opts.Label] = h.extension(&chatRequest{declared: mr.declared}, run, res)
	return out
}

// messageID gives ids from an OpenAI upstream the Messages prefix.
func messageID(id string) string {
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + id
}

func messagesStop(res *loop.Result) (string, any) {
	if res.Final.Dialect == loop.DialectAnthropic && !(res.HostedRemoved && res.FinishReason == loop.FinishStop) {
		var s string
		if json.Unmarshal(res.Final.Extra["stop_reason"], &s) == nil && s != "" {
			var seq any
			_ = json.Unmarshal(res.Final.Extra["stop_sequence"], &seq)
			return s, seq
		}
	}
	return anthropic.StopReason(res.FinishReason), nil
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
		b, _ := marshal(map[string]string{"type": "text", "text": msg.Text})
		out = append(out, b)
	}
	for _, c := range msg.ToolCalls {
		input := json.RawMessage(c.Args)
		if !json.Valid(input) || len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		b, _ := marshal(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		out = append(out, b)
	}
	return out
}

// hostedRoundBlocks: the round's blocks with its hosted tool_use blocks as
// mcp_tool_use.
func (h *Handler) hostedRoundBlocks(rr loop.RoundResult) []json.RawMessage {
	hosted := map[string]bool{}
	for _, c := range rr.Calls {
		hosted[c.ID] = true
	}
	var out []json.RawMessage
	for _, b := range modelBlocks(rr.Response, rr.Response.Message) {
		var u struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(b, &u) == nil && u.Type == "tool_use" && hosted[u.ID] {
			b = h.mcpToolUse(u.ID, u.Name, u.Input)
		}
		out = append(out, b)
	}
	return out
}

func (h *Handler) mcpToolUse(id, name string, input json.RawMessage) json.RawMessage {
	if len(input) == 0 || !json.Valid(input) {
		input = json.RawMessage(`{}`)
	}
	b, _ := marshal(map[string]any{"type": "mcp_tool_use", "id": id, "name": name, "server_name": h.opts.Label, "input": input})
	return b
}

func resultBlock(c loop.Call) json.RawMessage {
	b, _ := marshal(map[string]any{
		"type": "mcp_tool_result", "tool_use_id": c.ID, "is_error": c.IsError,
		"content": []map[string]string{{"type": "text", "text": c.Result}},
	})
	return b
}

func resultBlocks(calls []loop.Call) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(calls))
	for _, c := range calls {
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

// roundUsage renders one usage in Messages form.
func roundUsage(u loop.Usage) map[string]any {
	if u.Dialect == loop.DialectAnthropic && u.Detail != nil {
		out := make(map[string]any, len(u.Detail))
		for k, v := range u.Detail {
			out[k] = v
		}
		return out
	}
	return map[string]any{
		"input_tokens":                u.InputTokens - u.CachedInputTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     u.CachedInputTokens,
		"output_tokens":               u.OutputTokens,
	}
}

// messagesUsage is the summed usage; with hosted tools declared it also
// lists each round's usage as iterations.
func messagesUsage(res *loop.Result, declared bool) map[string]any {
	out := roundUsage(res.Usage)
	if declared {
		// One BetaMessageIterationUsage per upstream call.
		its := make([]map[string]any, 0, len(res.Rounds))
		for _, rr := range res.Rounds {
			u := roundUsage(rr.Usage)
			it := map[string]any{"type": "message", "model": rr.Response.Model, "cache_creation": nil}
			for _, k := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"} {
				if v, ok := u[k]; ok {
					it[k] = v
				}
			}
			its = append(its, it)
		}
		out["iterations"] = its
	}
	return out
}

// messagesErrorBody is the Anthropic error shape with our details:
// {"type":"error","error":{"type","message","param","code","details"}}.
func messagesErrorBody(e *requestError) map[string]any {
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
	inner := e.body()["error"].(map[string]any)
	inner["type"] = typ
	return map[string]any{"type": "error", "error": inner}
}

func writeMessagesError(w http.ResponseWriter, e *requestError) {
	server.WriteJSON(w, e.status, messagesErrorBody(e))
}
