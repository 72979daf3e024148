package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"toolhost/identity"
	"toolhost/loop"
	"toolhost/server"
)

// responses serves POST /v1/responses (the OpenAI Responses format with
// hosted tools declared as {"type":"mcp","server_label":LABEL}).
//
// The loop talks Chat Completions (or Messages) to the upstream; this face
// renders a run as Responses output items: an mcp_list_tools item, then for
// each round the model's text as a message item and each executed hosted
// call as an mcp_call item, then the last round's message and function_call
// items. Responses are not stored: a continuation sends the previous output
// back as input (mcp_call items become function call round trips).
func (h *Handler) responses(w http.ResponseWriter, r *http.Request) {
	body, rerr := h.readBody(w, r)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	h.withIdempotency(w, r, body, func(w http.ResponseWriter) {
		h.serveResponses(w, r, body)
	})
}

func (h *Handler) serveResponses(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx := r.Context()
	rq, err := h.parseResponses(body)
	if err != nil {
		var re *requestError
		if !errors.As(err, &re) {
			re = badRequest(ReasonInvalidRequest, "", err.Error())
		}
		writeRequestError(w, re)
		return
	}
	route, err := h.opts.Router.Pick(rq.loop.Model, rq.declared)
	if err != nil {
		writeRequestError(w, h.runError(ctx, err))
		return
	}
	id, _ := identity.FromContext(ctx)
	run := &loop.Run{
		Request: rq.loop,
		Hosted:  rq.hosted,
		Route:   route,
		Lang:    lang(r),
		Caller: loop.Caller{
			RequestID:      requestID(ctx),
			SessionID:      sessionID(r, rq.metadata),
			Slot:           r.Header.Get(SlotHeader),
			Identity:       id,
			TraceID:        server.TraceID(r.Header),
			IdempotencyKey: r.Header.Get("Idempotency-Key"),
			Metadata:       rq.metadata,
		},
	}
	listTools, err := h.listToolsItem(run)
	if err != nil {
		writeRequestError(w, h.runError(ctx, err))
		return
	}
	if !rq.loop.Stream {
		res, err := h.opts.Runner.Run(ctx, run)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			writeRequestError(w, h.runError(ctx, err))
			return
		}
		out := []any{}
		if listTools != nil {
			out = append(out, listTools)
		}
		out = append(out, responsesOutput(h.opts.Label, res)...)
		server.WriteJSON(w, http.StatusOK, h.responseObject(rq, run, res, out))
		return
	}
	rs := &responsesStream{h: h, sseWriter: sseWriter{w: w}, rq: rq, listTools: listTools, msgIndex: -1}
	run.Sink = rs.event
	res, err := h.opts.Runner.Run(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		re := h.runError(ctx, err)
		if !rs.started {
			writeRequestError(w, re)
			return
		}
		if d, ok := w.(interface{ discard() }); ok {
			d.discard()
		}
		rs.fail(re)
		return
	}
	rs.finish(run, res)
}

// listToolsItem is the mcp_list_tools item: the hosted tools given to the
// model with their input schemas and annotations (nil without hosted tools).
func (h *Handler) listToolsItem(run *loop.Run) (map[string]any, error) {
	if len(run.Hosted.Tools) == 0 {
		return nil, nil
	}
	defs, err := h.opts.Runner.Definitions(run.Hosted.Tools, run.Lang)
	if err != nil {
		return nil, err
	}
	list := make([]map[string]any, 0, len(defs))
	for _, d := range defs {
		t := map[string]any{"name": d.Name, "description": d.Description, "input_schema": d.Parameters}
		if s, ok := h.opts.Runner.Catalog().Lookup(d.Name); ok {
			t["annotations"] = s.Annotations
		}
		list = append(list, t)
	}
	return map[string]any{
		"id": "mcpl_" + run.Caller.RequestID, "type": "mcp_list_tools",
		"server_label": h.opts.Label, "tools": list, "error": nil,
	}, nil
}

// responsesOutput renders the rounds of a run after mcp_list_tools: each
// hosted round's text and executed calls, then the last round's text and
// caller function calls (skipped hosted calls are left out).
func responsesOutput(label string, res *loop.Result) []any {
	var out []any
	base := trimID(res.First.ID)
	for _, rr := range res.Rounds[:len(res.Rounds)-1] {
		if t := rr.Response.Message.Text; t != "" {
			out = append(out, messageItem(roundItemID(base, rr.Round), t, "completed"))
		}
		for _, c := range rr.Calls {
			out = append(out, mcpCallItem(label, c, true))
		}
	}
	last := res.Rounds[len(res.Rounds)-1]
	status := "completed"
	if responseStatus(res.FinishReason) == "incomplete" {
		status = "incomplete"
	}
	if res.Message.Text != "" {
		out = append(out, messageItem(roundItemID(base, last.Round), res.Message.Text, status))
	}
	for _, c := range res.Message.ToolCalls {
		out = append(out, functionCallItem(c.ID, c.Name, string(c.Args), "completed"))
	}
	return out
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

func messageItem(id, text, status string) map[string]any {
	return map[string]any{
		"id": id, "type": "message", "role": "assistant", "status": status,
		"content": []any{outputTextPart(text)},
	}
}

func outputTextPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func functionCallItem(callID, name, args, status string) map[string]any {
	return map[string]any{"id": "fc_" + callID, "type": "function_call", "call_id": callID, "name": name, "arguments": args, "status": status}
}

// mcpCallItem renders a hosted call; done says whether it has finished
// (status completed or failed, with output or error).
func mcpCallItem(label string, c loop.Call, done bool) map[string]any {
	it := map[string]any{
		"id": c.ID, "type": "mcp_call", "server_label": label, "name": c.Name,
		"arguments": string(c.Args), "approval_request_id": nil,
		"status": "in_progress", "output": nil, "error": nil,
	}
	if !done {
		it["arguments"] = ""
		return it
	}
	if c.Status == loop.StatusFailed {
		it["status"] = "failed"
		it["error"] = c.Result
	} else {
		it["status"] = "completed"
		it["output"] = c.Result
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

func incompleteDetails(finish string) any {
	switch finish {
	case loop.FinishLength:
		return map[string]string{"reason": "max_output_tokens"}
	case "content_filter":
		return map[string]string{"reason": "content_filter"}
	}
	return nil
}

// responseObject is the response: request fields echoed as sent, output,
// status, summed usage and the extension field. res nil renders the
// in-progress object of response.created.
func (h *Handler) responseObject(rq *responsesRequest, run *loop.Run, res *loop.Result, output []any) map[string]any {
	echo := func(k string, def any) any {
		if v := rq.top[k]; present(v) {
			return v
		}
		return def
	}
	out := map[string]any{
		"object":               "response",
		"background":           false,
		"error":                nil,
		"incomplete_details":   nil,
		"instructions":         echo("instructions", nil),
		"max_output_tokens":    echo("max_output_tokens", nil),
		"max_tool_calls":       echo("max_tool_calls", nil),
		"metadata":             echo("metadata", map[string]any{}),
		"output":               output,
		"parallel_tool_calls":  echo("parallel_tool_calls", true),
		"previous_response_id": nil,
		"reasoning":            echo("reasoning", map[string]any{"effort": nil, "summary": nil}),
		"service_tier":         echo("service_tier", nil),
		"store":                false,
		"temperature":          echo("temperature", nil),
		"text":                 echo("text", map[string]any{"format": map[string]string{"type": "text"}}),
		"tool_choice":          echo("tool_choice", "auto"),
		"tools":                echoTools(rq.top["tools"]),
		"top_logprobs":         echo("top_logprobs", nil),
		"top_p":                echo("top_p", nil),
		"truncation":           "disabled",
		"usage":                nil,
		"user":                 echo("user", nil),
	}
	if res == nil {
		out["status"] = "in_progress"
		return out
	}
	out["id"] = responseID(res.First.ID)
	out["created_at"] = res.First.Created
	out["model"] = res.First.Model
	if res.First.Model == "" {
		out["model"] = rq.loop.Model
	}
	out["status"] = responseStatus(res.FinishReason)
	out["incomplete_details"] = incompleteDetails(res.FinishReason)
	out["usage"] = responsesUsage(res.Usage)
	out[h.opts.Label] = h.extension(&chatRequest{declared: rq.declared}, run, res)
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

// responsesUsage renders summed usage in Responses form.
func responsesUsage(u loop.Usage) any {
	if !u.Present {
		return nil
	}
	var reasoning int64
	if u.Dialect == loop.DialectOpenAI {
		if d, ok := u.Detail["completion_tokens_details"].(map[string]any); ok {
			if n, ok := d["reasoning_tokens"].(json.Number); ok {
				reasoning, _ = n.Int64()
			}
		}
	}
	return map[string]any{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CachedInputTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
		"total_tokens":          u.InputTokens + u.OutputTokens,
	}
}
