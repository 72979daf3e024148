// Package fakeupstream is a scripted stand-in for an OpenAI-compatible model
// API, for tests of the hosted loop. It serves POST /v1/chat/completions on
// 127.0.0.1 in the real wire format, streaming (SSE chunks, tool-call
// deltas split into pieces, a usage chunk when stream_options.include_usage
// is set) and not, and answers from a script of rounds. The same script
// answers POST /v1/messages (anthropic.go) and POST /v1/responses
// (responses.go).
//
// Which round answers a request is computed from the request itself: the
// conversation is chosen by the first script entry whose Match is contained
// in the last user message, and the round is the number of assistant
// messages after that user message. So one server can serve many
// conversations at once, and a retried request gets the same answer.
//
// GET /v1/requests answers the bodies received so far as a JSON array, in
// arrival order: what the model was sent, for tests outside Go (the
// program in cmd/fakeupstream) that cannot call Server.Requests; GET
// /v1/traceparents the traceparent header each of them carried.
package fakeupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
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
	Reasoning string     `json:"reasoning_content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Items are output items the Responses face sends as they are, after
	// the reasoning item and before the message (the calls of a
	// provider's built-in tools: web_search_call, ...); the other faces
	// leave them out.
	Items []json.RawMessage `json:"items,omitempty"`
	// Annotations go on the content's output_text part on the Responses
	// face (url_citation, ...).
	Annotations []json.RawMessage `json:"annotations,omitempty"`
	// Blocks are content blocks the Messages face sends as they are,
	// after the thinking block and before the text (the server tools'
	// server_tool_use and result blocks, ...): streamed, a block with an
	// input starts with input {} and sends it as input_json_delta pieces,
	// any other starts whole. The other faces leave them out.
	Blocks []json.RawMessage `json:"blocks,omitempty"`
	// Citations go on the content's text block on the Messages face
	// (streamed, as citations_delta before its text).
	Citations    []json.RawMessage `json:"citations,omitempty"`
	FinishReason string            `json:"finish_reason,omitempty"`
	Usage        json.RawMessage   `json:"usage,omitempty"`
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
	// ArgumentsFrom, when set, is a regular expression matched against
	// the text of the conversation's last tool message (Chat
	// Completions): its first group becomes Arguments, as a model copies
	// the arguments a tool result told it to use.
	ArgumentsFrom string `json:"arguments_from,omitempty"`
	// Custom makes the call a custom_tool_call whose input is Arguments
	// on the Responses face (a function call on the others).
	Custom bool `json:"custom,omitempty"`
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
	traceparents []string
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
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("GET /v1/requests", s.listRequests)
	mux.HandleFunc("GET /v1/traceparents", s.listTraceparents)
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

func (s *Server) listRequests(w http.ResponseWriter, _ *http.Request) {
	reqs := s.Requests()
	raws := make([]json.RawMessage, len(reqs))
	for i, b := range reqs {
		raws[i] = b
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(raws)
}

// Authorizations returns the Authorization header of each request, in
// arrival order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Traceparents returns the traceparent header of each model request
// ("" when it had none), in arrival order: what a model's side would see
// of the caller's trace.
func (s *Server) Traceparents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.traceparents...)
}

// listTraceparents answers GET /v1/traceparents: Traceparents as a JSON
// array of strings.
func (s *Server) listTraceparents(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Traceparents())
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
	s.traceparents = append(s.traceparents, r.Header.Get("Traceparent"))
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
		return withCopiedArguments(rd, req.Messages[last+1:])
	}
	return Round{}, fmt.Errorf("fake upstream: no conversation matches %q", text)
}

// withCopiedArguments fills the arguments of rd's calls that copy theirs
// from the last tool message (ToolCall.ArgumentsFrom).
func withCopiedArguments(rd Round, msgs []struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}) (Round, error) {
	rd.ToolCalls = slices.Clone(rd.ToolCalls)
	for i, tc := range rd.ToolCalls {
		if tc.ArgumentsFrom == "" {
			continue
		}
		re, err := regexp.Compile(tc.ArgumentsFrom)
		if err != nil {
			return Round{}, fmt.Errorf("fake upstream: arguments_from of %s: %w", tc.Name, err)
		}
		text := ""
		for j := len(msgs) - 1; j >= 0; j-- {
			if msgs[j].Role == "tool" {
				text = contentText(msgs[j].Content)
				break
			}
		}
		m := re.FindStringSubmatch(text)
		if len(m) < 2 {
			return Round{}, fmt.Errorf("fake upstream: arguments_from of %s matches nothing in the last tool message", tc.Name)
		}
		rd.ToolCalls[i].Arguments = m[1]
	}
	return rd, nil
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

// The Chat Completions shapes the fake writes. Fields are in alphabetical
// order: the bytes are those the maps the fake wrote before gave.
type (
	completionJSON struct {
		Choices           []choiceJSON    `json:"choices"`
		Created           int64           `json:"created"`
		ID                string          `json:"id"`
		Model             string          `json:"model"`
		Object            string          `json:"object"`
		SystemFingerprint string          `json:"system_fingerprint"`
		Usage             json.RawMessage `json:"usage,omitempty"`
	}
	// choiceJSON is a choice of a completion (Message) or of a chunk (Delta).
	choiceJSON struct {
		Delta        *deltaJSON      `json:"delta,omitempty"`
		FinishReason *string         `json:"finish_reason"`
		Index        int             `json:"index"`
		Logprobs     json.RawMessage `json:"logprobs"`
		Message      *messageJSON    `json:"message,omitempty"`
	}
	messageJSON struct {
		Content          *string         `json:"content"`
		ReasoningContent string          `json:"reasoning_content,omitempty"`
		Refusal          json.RawMessage `json:"refusal"`
		Role             string          `json:"role"`
		ToolCalls        []toolCallJSON  `json:"tool_calls,omitempty"`
	}
	toolCallJSON struct {
		Function functionJSON `json:"function"`
		ID       *string      `json:"id,omitempty"`
		Index    *int         `json:"index,omitempty"`
		Type     string       `json:"type,omitempty"`
	}
	functionJSON struct {
		Arguments string  `json:"arguments"`
		Name      *string `json:"name,omitempty"`
	}
	deltaJSON struct {
		Content          *string         `json:"content,omitempty"`
		ReasoningContent string          `json:"reasoning_content,omitempty"`
		Refusal          json.RawMessage `json:"refusal,omitempty"`
		Role             string          `json:"role,omitempty"`
		ToolCalls        []toolCallJSON  `json:"tool_calls,omitempty"`
	}
	errorJSON struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
)

// ref is a pointer to a copy of v, for the optional fields.
func ref[T any](v T) *T { return &v }

func completion(rd Round) completionJSON {
	msg := &messageJSON{Role: "assistant", Content: ref(rd.Content), ReasoningContent: rd.Reasoning}
	if rd.Content == "" && len(rd.ToolCalls) > 0 {
		msg.Content = nil
	}
	for _, tc := range rd.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, toolCallJSON{ID: ref(tc.ID), Type: "function", Function: functionJSON{Name: ref(tc.Name), Arguments: tc.Arguments}})
	}
	return completionJSON{
		ID:                rd.ID,
		Object:            "chat.completion",
		Created:           rd.Created,
		Model:             rd.Model,
		SystemFingerprint: "fp_fake",
		Choices:           []choiceJSON{{Index: 0, Message: msg, FinishReason: ref(finishReason(rd))}},
		Usage:             rd.Usage,
	}
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
	chunk := func(choices []choiceJSON) completionJSON {
		return completionJSON{ID: rd.ID, Object: "chat.completion.chunk", Created: rd.Created, Model: rd.Model, SystemFingerprint: "fp_fake", Choices: choices}
	}
	delta := func(d deltaJSON) []choiceJSON {
		return []choiceJSON{{Index: 0, Delta: &d}}
	}
	send(chunk(delta(deltaJSON{Role: "assistant", Content: ref(""), Refusal: json.RawMessage("null")})))
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
		send(chunk(delta(deltaJSON{ReasoningContent: piece})))
	}
	for _, piece := range splitRunes(rd.Content, n) {
		send(chunk(delta(deltaJSON{Content: ref(piece)})))
	}
	a := rd.ArgsChunk
	if a <= 0 {
		a = 8
	}
	for i, tc := range rd.ToolCalls {
		send(chunk(delta(deltaJSON{ToolCalls: []toolCallJSON{{Index: ref(i), ID: ref(tc.ID), Type: "function", Function: functionJSON{Name: ref(tc.Name)}}}})))
		for _, piece := range splitBytes(tc.Arguments, a) {
			send(chunk(delta(deltaJSON{ToolCalls: []toolCallJSON{{Index: ref(i), Function: functionJSON{Arguments: piece}}}})))
		}
	}
	send(chunk([]choiceJSON{{Index: 0, Delta: &deltaJSON{}, FinishReason: ref(finishReason(rd))}}))
	if includeUsage && len(rd.Usage) > 0 {
		c := chunk([]choiceJSON{})
		c.Usage = rd.Usage
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
	var body errorJSON
	body.Error.Message, body.Error.Type = msg, "invalid_request_error"
	b, _ := json.Marshal(body)
	_, _ = w.Write(b)
}
