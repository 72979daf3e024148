package fakeupstream

// The Anthropic Messages face of the fake: POST /v1/messages (JSON and the
// SSE event stream: message_start, ping, content_block_start/delta/stop,
// message_delta, message_stop) and POST /v1/messages/count_tokens, answered
// from the same script as the Chat Completions face. A round's reasoning
// becomes a thinking block (with a signature), its content a text block, its
// tool calls tool_use blocks. Usage written in the Chat Completions shape is
// converted (input_tokens = prompt_tokens - cached_tokens,
// cache_read_input_tokens = cached_tokens, output_tokens =
// completion_tokens); usage written with input_tokens is sent as is.
//
// The round is chosen as on the Chat Completions face: the user turns that
// only carry tool_result blocks count as tool messages, not user messages.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System json.RawMessage `json:"system"`
	Tools  json.RawMessage `json:"tools"`
}

// chatView turns the Messages conversation into the shape pick reads.
func (a *anthropicRequest) chatView() *request {
	r := &request{Model: a.Model}
	for _, m := range a.Messages {
		role := m.Role
		if role == "user" && onlyToolResults(m.Content) {
			role = "tool"
		}
		r.Messages = append(r.Messages, struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}{Role: role, Content: m.Content})
	}
	return r
}

func onlyToolResults(raw json.RawMessage) bool {
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			return false
		}
	}
	return true
}

func (s *Server) readAnthropic(w http.ResponseWriter, r *http.Request) (*anthropicRequest, json.RawMessage, bool) {
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return nil, nil, false
	}
	s.mu.Lock()
	s.requests = append(s.requests, raw)
	s.auth = append(s.auth, r.Header.Get("X-Api-Key"))
	s.mu.Unlock()
	if r.Header.Get("anthropic-version") == "" {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return nil, nil, false
	}
	var req anthropicRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "bad request: "+err.Error())
		return nil, nil, false
	}
	return &req, raw, true
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	req, raw, ok := s.readAnthropic(w, r)
	if !ok {
		return
	}
	var mt struct {
		MaxTokens *int `json:"max_tokens"`
	}
	if json.Unmarshal(raw, &mt) != nil || mt.MaxTokens == nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	}
	rd, err := s.pick(req.chatView())
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if rd.Hang {
		s.hanging <- struct{}{}
		<-r.Context().Done()
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		s.cancelledSig <- struct{}{}
		return
	}
	if rd.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rd.Status)
		body := rd.Error
		if len(body) == 0 {
			body = json.RawMessage(`{"type":"api_error","message":"scripted error"}`)
		}
		_, _ = fmt.Fprintf(w, `{"type":"error","error":%s}`, body)
		return
	}
	if rd.Model == "" {
		rd.Model = req.Model
	}
	if id, ok := strings.CutPrefix(rd.ID, "chatcmpl-"); ok {
		rd.ID = "msg_" + id
	}
	if req.Stream {
		s.anthropicStream(w, r, rd)
		return
	}
	writeJSON(w, anthropicMessage(rd))
}

// countTokens answers with a deterministic stand-in count: a quarter of the
// bytes of system, messages and tools (not a real tokenizer).
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	req, _, ok := s.readAnthropic(w, r)
	if !ok {
		return
	}
	msgs, _ := json.Marshal(req.Messages)
	n := (len(req.System) + len(msgs) + len(req.Tools)) / 4
	writeJSON(w, map[string]int{"input_tokens": n})
}

func stopReason(rd Round) string {
	switch finishReason(rd) {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	}
	return "end_turn"
}

// anthropicUsage converts a scripted usage object.
func anthropicUsage(u json.RawMessage) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(u)))
	dec.UseNumber()
	if len(u) == 0 || dec.Decode(&m) != nil {
		return map[string]any{"input_tokens": 0, "output_tokens": 0}
	}
	if _, ok := m["input_tokens"]; ok {
		return m
	}
	num := func(v any) int64 {
		n, _ := v.(json.Number)
		i, _ := n.Int64()
		return i
	}
	var cached int64
	if d, ok := m["prompt_tokens_details"].(map[string]any); ok {
		cached = num(d["cached_tokens"])
	}
	return map[string]any{
		"input_tokens":                num(m["prompt_tokens"]) - cached,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     cached,
		"output_tokens":               num(m["completion_tokens"]),
		"service_tier":                "standard",
	}
}

func toolInput(args string) json.RawMessage {
	if args == "" || !json.Valid([]byte(args)) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

func anthropicBlocks(rd Round) []map[string]any {
	var blocks []map[string]any
	if rd.Reasoning != "" {
		blocks = append(blocks, map[string]any{"type": "thinking", "thinking": rd.Reasoning, "signature": "sig_fake"})
	}
	if rd.Content != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": rd.Content})
	}
	for _, tc := range rd.ToolCalls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": toolInput(tc.Arguments)})
	}
	if blocks == nil {
		blocks = []map[string]any{}
	}
	return blocks
}

func anthropicMessage(rd Round) map[string]any {
	return map[string]any{
		"id":            rd.ID,
		"type":          "message",
		"role":          "assistant",
		"model":         rd.Model,
		"content":       anthropicBlocks(rd),
		"stop_reason":   stopReason(rd),
		"stop_sequence": nil,
		"usage":         anthropicUsage(rd.Usage),
	}
}

func (s *Server) anthropicStream(w http.ResponseWriter, r *http.Request, rd Round) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		if fl != nil {
			fl.Flush()
		}
	}
	usage := anthropicUsage(rd.Usage)
	startUsage := map[string]any{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	send(map[string]any{"type": "message_start", "message": map[string]any{
		"id": rd.ID, "type": "message", "role": "assistant", "model": rd.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	if rd.Stall {
		s.hanging <- struct{}{}
		<-r.Context().Done()
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		s.cancelledSig <- struct{}{}
		return
	}
	send(map[string]any{"type": "ping"})
	n := rd.ChunkRunes
	if n <= 0 {
		n = 4
	}
	a := rd.ArgsChunk
	if a <= 0 {
		a = 8
	}
	index := 0
	if rd.Reasoning != "" {
		send(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, piece := range splitRunes(rd.Reasoning, n) {
			send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": piece}})
		}
		send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "signature_delta", "signature": "sig_fake"}})
		send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if rd.Content != "" {
		send(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range splitRunes(rd.Content, n) {
			send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tc := range rd.ToolCalls {
		send(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		for _, piece := range splitBytes(string(toolInput(tc.Arguments)), a) {
			send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(rd), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	send(map[string]any{"type": "message_stop"})
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	_, _ = w.Write(b)
}
