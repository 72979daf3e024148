// Package fakeupstream is a scripted stand-in for an OpenAI-compatible model
// API, for tests of the hosted loop. It serves POST /v1/chat/completions on
// 127.0.0.1 in the real wire format, streaming (SSE chunks, tool-call deltas
// split into pieces, a usage chunk when stream_options.include_usage is set)
// and not, and answers from a script of rounds.
//
// Which round answers a request is computed from the request itself: the
// conversation is chosen by the first script entry whose Match is contained
// in the last user message, and the round is the number of assistant
// messages after that user message. So one server can serve many
// conversations at once, and a retried request gets the same answer.
package fakeupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Script is what the fake answers.
type Script struct {
	Conversations []Conversation `json:"conversations"`
}

// Conversation is the rounds answered to conversations whose last user
// message contains Match ("" matches every conversation).
type Conversation struct {
	Match  string  `json:"match"`
	Rounds []Round `json:"rounds"`
}

// Round is one scripted model answer.
type Round struct {
	ID      string `json:"id,omitempty"`
	Created int64  `json:"created,omitempty"`
	Model   string `json:"model,omitempty"`
	Content string `json:"content,omitempty"`
	// Reasoning is sent as reasoning_content (the field some
	// OpenAI-compatible APIs use for thinking text).
	Reasoning    string          `json:"reasoning_content,omitempty"`
	ToolCalls    []ToolCall      `json:"tool_calls,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        json.RawMessage `json:"usage,omitempty"`
	// ChunkRunes is how many runes of content each stream chunk carries
	// (default 4); ArgsChunk how many bytes of arguments (default 8).
	ChunkRunes int `json:"chunk_runes,omitempty"`
	ArgsChunk  int `json:"args_chunk,omitempty"`
	// Status and Error make the round an HTTP error answer.
	Status int             `json:"status,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// Hang holds the request open until the client goes away (for
	// cancellation tests); Cancelled() counts such requests.
	Hang bool `json:"hang,omitempty"`
	// Stall sends the first stream chunk, then holds the stream open until
	// the client goes away (idle-timeout tests); counted like Hang.
	Stall bool `json:"stall,omitempty"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// LoadScript reads a JSON script file.
func LoadScript(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, err
	}
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("script %s: %w", path, err)
	}
	return s, nil
}

// Server is a running fake upstream.
type Server struct {
	script Script
	ln     net.Listener
	hs     *http.Server

	mu           sync.Mutex
	requests     [][]byte
	auth         []string
	cancelled    int
	hanging      chan struct{}
	cancelledSig chan struct{}
}

// Start serves script on a new 127.0.0.1 port.
func Start(script Script) (*Server, error) { return Listen("127.0.0.1:0", script) }

// Listen serves script on addr, which must be a loopback address.
func Listen(addr string, script Script) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("fake upstream listens on loopback only, not %q", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{script: script, ln: ln, hanging: make(chan struct{}, 64), cancelledSig: make(chan struct{}, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.hs.Serve(ln) }()
	return s, nil
}

// URL is the base URL to configure a route with (ends in /v1).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.hs.Shutdown(ctx)
}

// Requests returns the bodies received so far, in arrival order.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

// Authorizations returns the Authorization header of each request, in
// arrival order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Hanging receives a value each time a Hang round starts waiting.
func (s *Server) Hanging() <-chan struct{} { return s.hanging }

// CancelSeen receives a value each time a Hang round saw its client go
// away.
func (s *Server) CancelSeen() <-chan struct{} { return s.cancelledSig }

// Cancelled is how many Hang rounds saw their client go away.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

type request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, raw)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	rd, err := s.pick(&req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
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
			body = json.RawMessage(`{"message":"scripted error","type":"server_error"}`)
		}
		_, _ = fmt.Fprintf(w, `{"error":%s}`, body)
		return
	}
	if rd.Model == "" {
		rd.Model = req.Model
	}
	if req.Stream {
		s.stream(w, r, rd, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	writeJSON(w, completion(rd))
}

func (s *Server) pick(req *request) (Round, error) {
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return Round{}, errors.New("fake upstream: no user message")
	}
	text := contentText(req.Messages[last].Content)
	round := 0
	for _, m := range req.Messages[last+1:] {
		if m.Role == "assistant" {
			round++
		}
	}
	for _, c := range s.script.Conversations {
		if !strings.Contains(text, c.Match) {
			continue
		}
		if round >= len(c.Rounds) {
			return Round{}, fmt.Errorf("fake upstream: conversation %q has %d rounds, asked for round %d", c.Match, len(c.Rounds), round)
		}
		rd := c.Rounds[round]
		if rd.ID == "" {
			rd.ID = fmt.Sprintf("chatcmpl-fake-%d", round)
		}
		if rd.Created == 0 {
			rd.Created = 1767225600
		}
		return rd, nil
	}
	return Round{}, fmt.Errorf("fake upstream: no conversation matches %q", text)
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

func finishReason(rd Round) string {
	if rd.FinishReason != "" {
		return rd.FinishReason
	}
	if len(rd.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func completion(rd Round) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rd.Content, "refusal": nil}
	if rd.Reasoning != "" {
		msg["reasoning_content"] = rd.Reasoning
	}
	if rd.Content == "" && len(rd.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if len(rd.ToolCalls) > 0 {
		calls := make([]map[string]any, len(rd.ToolCalls))
		for i, tc := range rd.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "type": "function", "function": map[string]string{"name": tc.Name, "arguments": tc.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id":                 rd.ID,
		"object":             "chat.completion",
		"created":            rd.Created,
		"model":              rd.Model,
		"system_fingerprint": "fp_fake",
		"choices":            []map[string]any{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(rd)}},
	}
	if len(rd.Usage) > 0 {
		out["usage"] = rd.Usage
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, rd Round, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(choices any) map[string]any {
		return map[string]any{"id": rd.ID, "object": "chat.completion.chunk", "created": rd.Created, "model": rd.Model, "system_fingerprint": "fp_fake", "choices": choices}
	}
	delta := func(d map[string]any) []map[string]any {
		return []map[string]any{{"index": 0, "delta": d, "logprobs": nil, "finish_reason": nil}}
	}
	send(chunk(delta(map[string]any{"role": "assistant", "content": "", "refusal": nil})))
	if rd.Stall {
		s.hanging <- struct{}{}
		<-r.Context().Done()
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		s.cancelledSig <- struct{}{}
		return
	}
	n := rd.ChunkRunes
	if n <= 0 {
		n = 4
	}
	for _, piece := range splitRunes(rd.Reasoning, n) {
		send(chunk(delta(map[string]any{"reasoning_content": piece})))
	}
	for _, piece := range splitRunes(rd.Content, n) {
		send(chunk(delta(map[string]any{"content": piece})))
	}
	a := rd.ArgsChunk
	if a <= 0 {
		a = 8
	}
	for i, tc := range rd.ToolCalls {
		send(chunk(delta(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": tc.ID, "type": "function", "function": map[string]string{"name": tc.Name, "arguments": ""}}}})))
		for _, piece := range splitBytes(tc.Arguments, a) {
			send(chunk(delta(map[string]any{"tool_calls": []map[string]any{{"index": i, "function": map[string]string{"arguments": piece}}}})))
		}
	}
	send(chunk([]map[string]any{{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": finishReason(rd)}}))
	if includeUsage && len(rd.Usage) > 0 {
		c := chunk([]any{})
		c["usage"] = rd.Usage
		send(c)
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

func splitRunes(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, c := 0, 0
		for i < len(s) && c < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			c++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func splitBytes(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	_, _ = w.Write(b)
}
