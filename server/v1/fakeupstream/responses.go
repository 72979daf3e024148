package fakeupstream

// The Responses face of the fake: POST /v1/responses, whole and as the
// typed event stream (response.created, response.in_progress,
// response.output_item.added/done, reasoning summary, output_text and
// function_call_arguments deltas, response.completed or
// response.incomplete), answered from the same script as the Chat
// Completions face. A round's reasoning becomes a reasoning item (its
// summary the text, encrypted_content "enc_fake:" and the text), its Items
// follow as they are, then its content as a message item and its tool
// calls as function_call (custom_tool_call) items. Usage written in the
// Chat Completions shape is converted (input_tokens = prompt_tokens,
// input_tokens_details.cached_tokens, output_tokens = completion_tokens);
// usage written with input_tokens is sent as is.
//
// The round is chosen as on the Chat Completions face: each run of output
// items after the last user message counts as one assistant message.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// responsesRequest is what the fake reads of a Responses request.
type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  json.RawMessage `json:"input"`
}

// inputItem is what the fake reads of an input item.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// chatView turns the input into the shape pick reads: user and other
// role messages as they are, tool outputs as tool messages, each run of
// output items as one assistant message.
func (q *responsesRequest) chatView() (*request, error) {
	r := &request{Model: q.Model}
	add := func(role string, content json.RawMessage) {
		r.Messages = append(r.Messages, struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}{Role: role, Content: content})
	}
	var s string
	if json.Unmarshal(q.Input, &s) == nil {
		add("user", q.Input)
		return r, nil
	}
	var items []inputItem
	if err := json.Unmarshal(q.Input, &items); err != nil {
		return nil, fmt.Errorf("input must be a string or a list of items: %w", err)
	}
	inTurn := false
	for _, it := range items {
		switch {
		case (it.Type == "" || it.Type == "message") && it.Role != "assistant":
			add(it.Role, it.Content)
			inTurn = false
		case strings.HasSuffix(it.Type, "_output"):
			add("tool", it.Output)
			inTurn = false
		case !inTurn:
			add("assistant", nil)
			inTurn = true
		}
	}
	return r, nil
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, raw)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.traceparents = append(s.traceparents, r.Header.Get("Traceparent"))
	s.mu.Unlock()
	var req responsesRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	view, err := req.chatView()
	if err == nil {
		var rd Round
		rd, err = s.pick(view)
		if err == nil {
			s.answerResponses(w, r, &req, rd)
			return
		}
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

func (s *Server) answerResponses(w http.ResponseWriter, r *http.Request, req *responsesRequest, rd Round) {
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
			body = json.RawMessage(`{"message":"scripted error","type":"server_error","param":null,"code":null}`)
		}
		_, _ = fmt.Fprintf(w, `{"error":%s}`, body)
		return
	}
	if rd.Model == "" {
		rd.Model = req.Model
	}
	if id, ok := strings.CutPrefix(rd.ID, "chatcmpl-"); ok {
		rd.ID = "resp_" + id
	}
	if req.Stream {
		s.responsesStream(w, r, rd)
		return
	}
	writeJSON(w, responseObject(rd, responsesOutput(rd), true))
}

// The Responses shapes the fake writes, fields in alphabetical order.
type (
	responseJSON struct {
		CreatedAt         int64                      `json:"created_at"`
		Error             json.RawMessage            `json:"error"`
		ID                string                     `json:"id"`
		IncompleteDetails json.RawMessage            `json:"incomplete_details"`
		Model             string                     `json:"model"`
		Object            string                     `json:"object"`
		Output            []any                      `json:"output"`
		Status            string                     `json:"status"`
		Usage             map[string]json.RawMessage `json:"usage"`
	}
	reasoningItem struct {
		EncryptedContent string        `json:"encrypted_content"`
		ID               string        `json:"id"`
		Summary          []summaryText `json:"summary"`
		Type             string        `json:"type"`
	}
	summaryText struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	messageItem struct {
		Content []outputText `json:"content"`
		ID      string       `json:"id"`
		Role    string       `json:"role"`
		Status  string       `json:"status"`
		Type    string       `json:"type"`
	}
	outputText struct {
		Annotations []any  `json:"annotations"`
		Text        string `json:"text"`
		Type        string `json:"type"`
	}
	functionCallItem struct {
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Status    string `json:"status"`
		Type      string `json:"type"`
	}
	customCallItem struct {
		CallID string `json:"call_id"`
		ID     string `json:"id"`
		Input  string `json:"input"`
		Name   string `json:"name"`
		Type   string `json:"type"`
	}
	// responsesEvent is one event of the stream; its type names it.
	responsesEvent struct {
		ContentIndex   *int          `json:"content_index,omitempty"`
		Delta          *string       `json:"delta,omitempty"`
		Item           any           `json:"item,omitempty"`
		ItemID         string        `json:"item_id,omitempty"`
		OutputIndex    *int          `json:"output_index,omitempty"`
		Part           any           `json:"part,omitempty"`
		Response       *responseJSON `json:"response,omitempty"`
		SequenceNumber int           `json:"sequence_number"`
		SummaryIndex   *int          `json:"summary_index,omitempty"`
		Type           string        `json:"type"`
	}
)

// responsesOutput is a round's output items, finished.
func responsesOutput(rd Round) []any {
	out := []any{}
	if rd.Reasoning != "" {
		out = append(out, reasoningItem{Type: "reasoning", ID: "rs_" + rd.ID, EncryptedContent: "enc_fake:" + rd.Reasoning,
			Summary: []summaryText{{Type: "summary_text", Text: rd.Reasoning}}})
	}
	for _, it := range rd.Items {
		out = append(out, it)
	}
	if rd.Content != "" {
		notes := []any{}
		for _, a := range rd.Annotations {
			notes = append(notes, a)
		}
		out = append(out, messageItem{Type: "message", ID: "msg_" + rd.ID, Role: "assistant", Status: "completed",
			Content: []outputText{{Type: "output_text", Text: rd.Content, Annotations: notes}}})
	}
	for _, tc := range rd.ToolCalls {
		if tc.Custom {
			out = append(out, customCallItem{Type: "custom_tool_call", ID: "ctc_" + tc.ID, CallID: tc.ID, Name: tc.Name, Input: tc.Arguments})
			continue
		}
		out = append(out, functionCallItem{Type: "function_call", ID: "fc_" + tc.ID, CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Status: "completed"})
	}
	return out
}

// responseObject is the response of a round; done says whether it has
// finished (status, usage) or is the in-progress object of the first
// events.
func responseObject(rd Round, output []any, done bool) *responseJSON {
	r := &responseJSON{ID: rd.ID, Object: "response", CreatedAt: rd.Created, Model: rd.Model, Status: "in_progress",
		Output: output, Error: json.RawMessage("null"), IncompleteDetails: json.RawMessage("null")}
	if !done {
		return r
	}
	r.Status, r.Usage = "completed", responsesUsage(rd.Usage)
	if finishReason(rd) == "length" {
		r.Status, r.IncompleteDetails = "incomplete", json.RawMessage(`{"reason":"max_output_tokens"}`)
	}
	return r
}

// responsesUsage converts a scripted usage object, by member.
func responsesUsage(u json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(u) == 0 || json.Unmarshal(u, &m) != nil || m == nil {
		return nil
	}
	if _, ok := m["input_tokens"]; ok {
		return m
	}
	a := anthropicUsage(u) // input_tokens without the cached ones
	var in, cached, out int64
	_, _ = fmt.Sscan(string(a["input_tokens"]), &in)
	_, _ = fmt.Sscan(string(a["cache_read_input_tokens"]), &cached)
	_, _ = fmt.Sscan(string(a["output_tokens"]), &out)
	var reasoning int64
	var details struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	}
	if json.Unmarshal(m["completion_tokens_details"], &details) == nil {
		reasoning = details.ReasoningTokens
	}
	enc := func(format string, args ...any) json.RawMessage { return json.RawMessage(fmt.Sprintf(format, args...)) }
	return map[string]json.RawMessage{
		"input_tokens":          enc("%d", in+cached),
		"input_tokens_details":  enc(`{"cached_tokens":%d}`, cached),
		"output_tokens":         enc("%d", out),
		"output_tokens_details": enc(`{"reasoning_tokens":%d}`, reasoning),
		"total_tokens":          enc("%d", in+cached+out),
	}
}

// responsesStream sends a round as the Responses event stream: each item
// added, its deltas, done; then the terminal event with the whole
// response.
func (s *Server) responsesStream(w http.ResponseWriter, r *http.Request, rd Round) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	seq := 0
	send := func(ev responsesEvent) {
		ev.SequenceNumber = seq
		seq++
		b, _ := json.Marshal(ev)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send(responsesEvent{Type: "response.created", Response: responseObject(rd, []any{}, false)})
	if rd.Stall {
		s.hanging <- struct{}{}
		<-r.Context().Done()
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		s.cancelledSig <- struct{}{}
		return
	}
	send(responsesEvent{Type: "response.in_progress", Response: responseObject(rd, []any{}, false)})
	output := responsesOutput(rd)
	for i, item := range output {
		streamItem(send, rd, i, item)
	}
	final := responseObject(rd, output, true)
	send(responsesEvent{Type: "response." + final.Status, Response: final})
}

// streamItem sends one output item: added (without its content), the
// deltas of its text or arguments, done.
func streamItem(send func(responsesEvent), rd Round, i int, item any) {
	n, a := rd.ChunkRunes, rd.ArgsChunk
	if n <= 0 {
		n = 4
	}
	if a <= 0 {
		a = 8
	}
	idx := ref(i)
	switch it := item.(type) {
	case reasoningItem:
		send(responsesEvent{Type: "response.output_item.added", OutputIndex: idx, Item: reasoningItem{Type: it.Type, ID: it.ID, Summary: []summaryText{}}})
		for _, piece := range splitRunes(it.Summary[0].Text, n) {
			send(responsesEvent{Type: "response.reasoning_summary_text.delta", OutputIndex: idx, ItemID: it.ID, SummaryIndex: ref(0), Delta: ref(piece)})
		}
	case messageItem:
		send(responsesEvent{Type: "response.output_item.added", OutputIndex: idx, Item: messageItem{Type: it.Type, ID: it.ID, Role: it.Role, Status: "in_progress", Content: []outputText{}}})
		send(responsesEvent{Type: "response.content_part.added", OutputIndex: idx, ItemID: it.ID, ContentIndex: ref(0), Part: outputText{Type: "output_text", Annotations: []any{}}})
		for _, piece := range splitRunes(it.Content[0].Text, n) {
			send(responsesEvent{Type: "response.output_text.delta", OutputIndex: idx, ItemID: it.ID, ContentIndex: ref(0), Delta: ref(piece)})
		}
		send(responsesEvent{Type: "response.content_part.done", OutputIndex: idx, ItemID: it.ID, ContentIndex: ref(0), Part: it.Content[0]})
	case functionCallItem:
		send(responsesEvent{Type: "response.output_item.added", OutputIndex: idx, Item: functionCallItem{Type: it.Type, ID: it.ID, CallID: it.CallID, Name: it.Name, Status: "in_progress"}})
		for _, piece := range splitBytes(it.Arguments, a) {
			send(responsesEvent{Type: "response.function_call_arguments.delta", OutputIndex: idx, ItemID: it.ID, Delta: ref(piece)})
		}
	case customCallItem:
		send(responsesEvent{Type: "response.output_item.added", OutputIndex: idx, Item: customCallItem{Type: it.Type, ID: it.ID, CallID: it.CallID, Name: it.Name}})
		for _, piece := range splitBytes(it.Input, a) {
			send(responsesEvent{Type: "response.custom_tool_call_input.delta", OutputIndex: idx, ItemID: it.ID, Delta: ref(piece)})
		}
	default:
		send(responsesEvent{Type: "response.output_item.added", OutputIndex: idx, Item: item})
	}
	send(responsesEvent{Type: "response.output_item.done", OutputIndex: idx, Item: item})
}
