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
	"strconv"
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
	s.traceparents = append(s.traceparents, r.Header.Get("Traceparent"))
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
	writeJSON(w, struct {
		InputTokens int `json:"input_tokens"`
	}{n})
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

// anthropicUsage converts a scripted usage object, by member.
func anthropicUsage(u json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(u) == 0 || json.Unmarshal(u, &m) != nil || m == nil {
		return map[string]json.RawMessage{"input_tokens": json.RawMessage("0"), "output_tokens": json.RawMessage("0")}
	}
	if _, ok := m["input_tokens"]; ok {
		return m
	}
	num := func(raw json.RawMessage) int64 {
		var n json.Number
		if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
			return 0
		}
		i, _ := n.Int64()
		return i
	}
	var details map[string]json.RawMessage
	_ = json.Unmarshal(m["prompt_tokens_details"], &details)
	cached := num(details["cached_tokens"])
	enc := func(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }
	return map[string]json.RawMessage{
		"input_tokens":                enc(num(m["prompt_tokens"]) - cached),
		"cache_creation_input_tokens": enc(0),
		"cache_read_input_tokens":     enc(cached),
		"output_tokens":               enc(num(m["completion_tokens"])),
		"service_tier":                json.RawMessage(`"standard"`),
	}
}

func toolInput(args string) json.RawMessage {
	if args == "" || !json.Valid([]byte(args)) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

// The Messages shapes the fake writes, fields in alphabetical order (the
// bytes the maps it wrote before gave).
type (
	anthropicMessageJSON struct {
		Content      []any                      `json:"content"`
		ID           string                     `json:"id"`
		Model        string                     `json:"model"`
		Role         string                     `json:"role"`
		StopReason   *string                    `json:"stop_reason"`
		StopSequence *string                    `json:"stop_sequence"`
		Type         string                     `json:"type"`
		Usage        map[string]json.RawMessage `json:"usage"`
	}
	thinkingBlock struct {
		Signature string `json:"signature"`
		Thinking  string `json:"thinking"`
		Type      string `json:"type"`
	}
	textBlock struct {
		Citations []json.RawMessage `json:"citations,omitempty"`
		Text      string            `json:"text"`
		Type      string            `json:"type"`
	}
	citationsDelta struct {
		Citation json.RawMessage `json:"citation"`
		Type     string          `json:"type"`
	}
	toolUseBlock struct {
		ID    string          `json:"id"`
		Input json.RawMessage `json:"input"`
		Name  string          `json:"name"`
		Type  string          `json:"type"`
	}
	thinkingDelta struct {
		Thinking string `json:"thinking"`
		Type     string `json:"type"`
	}
	signatureDelta struct {
		Signature string `json:"signature"`
		Type      string `json:"type"`
	}
	inputJSONDelta struct {
		PartialJSON string `json:"partial_json"`
		Type        string `json:"type"`
	}
	stopDelta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	outputUsage struct {
		OutputTokens json.RawMessage `json:"output_tokens"`
	}
	// anthropicEvent is one event of the stream; its type names it.
	anthropicEvent struct {
		ContentBlock any                   `json:"content_block,omitempty"`
		Delta        any                   `json:"delta,omitempty"`
		Index        *int                  `json:"index,omitempty"`
		Message      *anthropicMessageJSON `json:"message,omitempty"`
		Type         string                `json:"type"`
		Usage        *outputUsage          `json:"usage,omitempty"`
	}
	anthropicErrorJSON struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
		Type string `json:"type"`
	}
)

func anthropicBlocks(rd Round) []any {
	blocks := []any{}
	if rd.Reasoning != "" {
		blocks = append(blocks, thinkingBlock{Type: "thinking", Thinking: rd.Reasoning, Signature: "sig_fake"})
	}
	for _, b := range rd.Blocks {
		blocks = append(blocks, b)
	}
	if rd.Content != "" {
		blocks = append(blocks, textBlock{Type: "text", Text: rd.Content, Citations: rd.Citations})
	}
	for _, tc := range rd.ToolCalls {
		blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
	}
	return blocks
}

func anthropicMessage(rd Round) anthropicMessageJSON {
	return anthropicMessageJSON{
		ID:         rd.ID,
		Type:       "message",
		Role:       "assistant",
		Model:      rd.Model,
		Content:    anthropicBlocks(rd),
		StopReason: ref(stopReason(rd)),
		Usage:      anthropicUsage(rd.Usage),
	}
}

func (s *Server) anthropicStream(w http.ResponseWriter, r *http.Request, rd Round) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(ev anthropicEvent) {
		b, _ := json.Marshal(ev)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		if fl != nil {
			fl.Flush()
		}
	}
	usage := anthropicUsage(rd.Usage)
	startUsage := map[string]json.RawMessage{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = json.RawMessage("1")
	send(anthropicEvent{Type: "message_start", Message: &anthropicMessageJSON{
		ID: rd.ID, Type: "message", Role: "assistant", Model: rd.Model, Content: []any{}, Usage: startUsage,
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
	send(anthropicEvent{Type: "ping"})
	n := rd.ChunkRunes
	if n <= 0 {
		n = 4
	}
	a := rd.ArgsChunk
	if a <= 0 {
		a = 8
	}
	index := 0
	block := func(start any, deltas []any) {
		send(anthropicEvent{Type: "content_block_start", Index: ref(index), ContentBlock: start})
		for _, d := range deltas {
			send(anthropicEvent{Type: "content_block_delta", Index: ref(index), Delta: d})
		}
		send(anthropicEvent{Type: "content_block_stop", Index: ref(index)})
		index++
	}
	if rd.Reasoning != "" {
		var ds []any
		for _, piece := range splitRunes(rd.Reasoning, n) {
			ds = append(ds, thinkingDelta{Type: "thinking_delta", Thinking: piece})
		}
		block(thinkingBlock{Type: "thinking"}, append(ds, signatureDelta{Type: "signature_delta", Signature: "sig_fake"}))
	}
	for _, b := range rd.Blocks {
		start, input := blockStart(b)
		var ds []any
		if input != "" {
			for _, piece := range splitBytes(input, a) {
				ds = append(ds, inputJSONDelta{Type: "input_json_delta", PartialJSON: piece})
			}
		}
		block(start, ds)
	}
	if rd.Content != "" {
		var ds []any
		for _, c := range rd.Citations {
			ds = append(ds, citationsDelta{Type: "citations_delta", Citation: c})
		}
		for _, piece := range splitRunes(rd.Content, n) {
			ds = append(ds, textBlock{Type: "text_delta", Text: piece})
		}
		block(textBlock{Type: "text"}, ds)
	}
	for _, tc := range rd.ToolCalls {
		var ds []any
		for _, piece := range splitBytes(string(toolInput(tc.Arguments)), a) {
			ds = append(ds, inputJSONDelta{Type: "input_json_delta", PartialJSON: piece})
		}
		block(toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: json.RawMessage(`{}`)}, ds)
	}
	send(anthropicEvent{Type: "message_delta", Delta: stopDelta{StopReason: stopReason(rd)}, Usage: &outputUsage{OutputTokens: usage["output_tokens"]}})
	send(anthropicEvent{Type: "message_stop"})
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := anthropicErrorJSON{Type: "error"}
	body.Error.Type, body.Error.Message = typ, msg
	b, _ := json.Marshal(body)
	_, _ = w.Write(b)
}

// blockStart is how a scripted block starts streaming, and the input it
// sends as deltas ("" for a block without one).
func blockStart(b json.RawMessage) (json.RawMessage, string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m["input"] == nil {
		return b, ""
	}
	input := string(m["input"])
	m["input"] = json.RawMessage(`{}`)
	start, _ := json.Marshal(m)
	return start, input
}
