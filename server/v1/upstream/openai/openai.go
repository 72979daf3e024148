// Package openai is the client of an OpenAI-compatible Chat Completions
// API for the hosted-tool loop: it translates the canonical conversation of
// package loop into a Chat Completions body and assembles the answer, whole
// or streamed, into a loop.UpstreamResponse and loop.Deltas. The transport
// (timeouts, size limits, event stream, errors) is server/v1/upstream's.
//
// It is written against the wire format rather than an SDK because the loop
// must pass the caller's fields through byte for byte (messages, sampling
// options, usage details) and an SDK's typed structs would drop what they do
// not know.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// Client is a loop.Upstream speaking Chat Completions.
type Client struct {
	http *upstream.Client
}

// Config configures a Client.
type Config struct {
	// Name is the route name, for errors and logs.
	Name string
	// BaseURL is the API root that /chat/completions is appended to
	// (".../v1").
	BaseURL  string
	APIKey   string
	Timeouts upstream.Timeouts
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
	// Propagator writes the call's trace context (traceparent) into
	// each request; nil sends none.
	Propagator propagation.TextMapPropagator
}

// New returns a client.
func New(cfg Config) *Client {
	h := http.Header{}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &Client{http: upstream.New(upstream.Config{
		Name: cfg.Name, BaseURL: cfg.BaseURL, Dialect: loop.DialectOpenAI,
		Header: h, Timeouts: cfg.Timeouts, Transport: cfg.Transport, Propagator: cfg.Propagator,
	})}
}

// Call implements loop.Upstream.
func (c *Client) Call(ctx context.Context, req *loop.UpstreamRequest, onDelta func(loop.Delta) error) (*loop.UpstreamResponse, error) {
	body, err := encodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: encode request: %w", c.http.Name(), err)
	}
	return c.http.Call(ctx, upstream.Exchange{
		Path: "/chat/completions", Body: body, Stream: req.Stream,
		Decode: decodeResponse, Decoder: newStreamAssembler(), OnDelta: onDelta,
	})
}

// requestJSON is a Chat Completions request body; Extra holds the
// caller's options, which the fields we set win over.
type requestJSON struct {
	Messages      []json.RawMessage          `json:"messages"`
	Model         string                     `json:"model"`
	Stream        bool                       `json:"stream,omitempty"`
	StreamOptions *streamOptions             `json:"stream_options,omitempty"`
	ToolChoice    json.RawMessage            `json:"tool_choice,omitempty"`
	Tools         []json.RawMessage          `json:"tools,omitempty"`
	Extra         map[string]json.RawMessage `json:"-"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// functionTool is a function in the tools of a request.
type functionTool struct {
	Function openAIFunction `json:"function"`
	Type     string         `json:"type"`
}

// encodeRequest renders the canonical request as a Chat Completions body.
func encodeRequest(req *loop.UpstreamRequest) ([]byte, error) {
	body := requestJSON{Model: req.Model, Extra: req.Options}
	if req.OptionsDialect != loop.DialectOpenAI && req.OptionsDialect != "" {
		body.Extra = translateOptionsToOpenAI(req.Options)
	}
	body.Messages = make([]json.RawMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		b, err := EncodeMessage(m)
		if err != nil {
			return nil, err
		}
		body.Messages = append(body.Messages, b)
	}
	if len(req.Tools) > 0 {
		body.Tools = make([]json.RawMessage, 0, len(req.Tools))
		for _, f := range req.Tools {
			if f.Dialect == loop.DialectOpenAI && len(f.Raw) > 0 {
				body.Tools = append(body.Tools, f.Raw)
				continue
			}
			b, err := json.Marshal(functionTool{Type: "function", Function: openAIFunction{Name: f.Name, Description: f.Description, Parameters: f.Parameters}})
			if err != nil {
				return nil, err
			}
			body.Tools = append(body.Tools, b)
		}
		body.ToolChoice = encodeOpenAIToolChoice(req.ToolChoice)
	}
	if req.Stream {
		body.Stream = true
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	} else if hasAny(body.Extra, "stream", "stream_options") {
		// Options may say stream; this call does not.
		opts := make(map[string]json.RawMessage, len(body.Extra))
		for k, v := range body.Extra {
			if k != "stream" && k != "stream_options" {
				opts[k] = v
			}
		}
		body.Extra = opts
	}
	return wire.Marshal(body, body.Extra)
}

func hasAny(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// toolChoiceFunction is the tool_choice that names a function.
type toolChoiceFunction struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
	Type string `json:"type"`
}

// encodeOpenAIToolChoice is the tool_choice of a request (nil for none).
func encodeOpenAIToolChoice(tc loop.ToolChoice) json.RawMessage {
	if tc.Dialect == loop.DialectOpenAI && len(tc.Raw) > 0 {
		return tc.Raw
	}
	var v any
	switch tc.Mode {
	case loop.ToolChoiceDefault:
		return nil
	case loop.ToolChoiceFunction:
		f := toolChoiceFunction{Type: "function"}
		f.Function.Name = tc.Name
		v = f
	default:
		v = string(tc.Mode)
	}
	b, _ := upstream.Marshal(v) // a struct or a string: it always encodes
	return b
}

// translateOptionsToOpenAI carries the sampling options another dialect
// spells differently; the rest has no Chat Completions meaning and is dropped.
func translateOptionsToOpenAI(opts map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range []string{"temperature", "top_p", "max_tokens"} {
		if v, ok := opts[k]; ok {
			out[k] = v
		}
	}
	if v, ok := opts["stop_sequences"]; ok {
		out["stop"] = v
	}
	return out
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// EncodeMessage renders a canonical message as a Chat Completions message:
// its Raw form when it is already in that dialect.
func EncodeMessage(m loop.Message) (json.RawMessage, error) {
	if m.Dialect == loop.DialectOpenAI && len(m.Raw) > 0 {
		return m.Raw, nil
	}
	out := messageJSON{Role: string(m.Role)}
	switch {
	case m.Role == loop.RoleTool:
		text := m.Text
		if m.IsError {
			text = "[tool error] " + text
		}
		out.Content = text
		out.ToolCallID = &m.ToolCallID
	case len(m.Parts) > 0 && m.Role != loop.RoleAssistant:
		parts := make([]textPart, 0, len(m.Parts))
		for _, p := range m.Parts {
			if p.Type == "text" {
				parts = append(parts, textPart{Type: "text", Text: p.Text})
			}
		}
		out.Content = parts
	case m.Text == "" && len(m.ToolCalls) > 0:
		out.Content = nil
	default:
		out.Content = m.Text
	}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]openAIToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			out.ToolCalls[i].ID = tc.ID
			out.ToolCalls[i].Type = "function"
			out.ToolCalls[i].Function.Name = tc.Name
			out.ToolCalls[i].Function.Arguments = string(tc.Args)
		}
	}
	return upstream.Marshal(out)
}

// messageJSON is a message we write; Content is a string, a list of
// textPart or nil.
type messageJSON struct {
	Content    any              `json:"content"`
	Role       string           `json:"role"`
	ToolCallID *string          `json:"tool_call_id,omitempty"`
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
}

type textPart struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// DecodeMessage reads one Chat Completions message into canonical
// form, keeping its raw bytes. Wire formats use it for caller messages.
func DecodeMessage(raw json.RawMessage) (loop.Message, error) {
	var w struct {
		Role       string           `json:"role"`
		Content    json.RawMessage  `json:"content"`
		ToolCalls  []openAIToolCall `json:"tool_calls"`
		ToolCallID string           `json:"tool_call_id"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return loop.Message{}, fmt.Errorf("message: %w", err)
	}
	m := loop.Message{Role: loop.Role(w.Role), ToolCallID: w.ToolCallID, Dialect: loop.DialectOpenAI, Raw: raw}
	text, parts, err := decodeContent(w.Content)
	if err != nil {
		return loop.Message{}, err
	}
	m.Text, m.Parts = text, parts
	for _, tc := range w.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, loop.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
	}
	return m, nil
}

func decodeContent(raw json.RawMessage) (string, []loop.Part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, fmt.Errorf("message content: %w", err)
		}
		return s, nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", nil, fmt.Errorf("message content must be a string or a list of parts: %w", err)
	}
	var sb strings.Builder
	parts := make([]loop.Part, 0, len(items))
	for _, it := range items {
		var p struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(it, &p); err != nil {
			return "", nil, fmt.Errorf("message content part: %w", err)
		}
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
		parts = append(parts, loop.Part{Type: p.Type, Text: p.Text, Raw: it})
	}
	return sb.String(), parts, nil
}

func decodeResponse(b []byte) (*loop.UpstreamResponse, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	out := &loop.UpstreamResponse{Dialect: loop.DialectOpenAI, Extra: map[string]json.RawMessage{}}
	var choices []map[string]json.RawMessage
	for k, v := range top {
		var err error
		switch k {
		case "id":
			err = json.Unmarshal(v, &out.ID)
		case "created":
			err = json.Unmarshal(v, &out.Created)
		case "model":
			err = json.Unmarshal(v, &out.Model)
		case "choices":
			err = json.Unmarshal(v, &choices)
		case "usage":
			out.Usage, err = decodeUsage(v)
		case "object":
		default:
			out.Extra[k] = v
		}
		if err != nil {
			return nil, fmt.Errorf("response field %s: %w", k, err)
		}
	}
	if len(choices) == 0 {
		return nil, errors.New("response has no choices")
	}
	ch := choices[0]
	out.ChoiceExtra = map[string]json.RawMessage{}
	for k, v := range ch {
		switch k {
		case "index", "message":
		case "finish_reason":
			if err := json.Unmarshal(v, &out.FinishReason); err != nil {
				return nil, fmt.Errorf("response field choices[0].finish_reason: %w", err)
			}
		default:
			out.ChoiceExtra[k] = v
		}
	}
	msg, err := DecodeMessage(ch["message"])
	if err != nil {
		return nil, err
	}
	if msg.Role == "" {
		msg.Role = loop.RoleAssistant
	}
	out.Message = msg
	return out, nil
}

func decodeUsage(raw json.RawMessage) (loop.Usage, error) {
	d, err := loop.DecodeUsageDetail(raw)
	if err != nil || d == nil {
		return loop.Usage{}, err
	}
	u := loop.Usage{Dialect: loop.DialectOpenAI, Detail: d, Present: true,
		InputTokens:  d.Number("prompt_tokens"),
		OutputTokens: d.Number("completion_tokens"),
	}
	u.CachedInputTokens = d.Object("prompt_tokens_details").Number("cached_tokens")
	return u, nil
}

// assembledMessage is the message a stream adds up to; Extra holds the
// other string fields of its deltas (refusal, reasoning_content).
type assembledMessage struct {
	Content   *string                    `json:"content"`
	Role      string                     `json:"role"`
	ToolCalls []openAIToolCall           `json:"tool_calls,omitempty"`
	Extra     map[string]json.RawMessage `json:"-"`
}

// streamAssembler builds the complete response from Chat Completions chunks.
type streamAssembler struct {
	started      bool
	meta         loop.Meta
	text         strings.Builder
	other        map[string]*strings.Builder // other string delta fields (refusal, reasoning_content)
	calls        map[int]*openAIToolCall
	finishReason string
	usage        loop.Usage
	extra        map[string]json.RawMessage
	choiceExtra  map[string]json.RawMessage
}

func newStreamAssembler() *streamAssembler {
	return &streamAssembler{other: map[string]*strings.Builder{}, calls: map[int]*openAIToolCall{}, extra: map[string]json.RawMessage{}, choiceExtra: map[string]json.RawMessage{}}
}

type openAIChunk struct {
	ID      string          `json:"id"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Usage   json.RawMessage `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Index        int             `json:"index"`
		Delta        json.RawMessage `json:"delta"`
		FinishReason *string         `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
}

type openAIDelta struct {
	Content   *string `json:"content"`
	ToolCalls []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Add implements upstream.Decoder.
func (a *streamAssembler) Add(data []byte) ([]loop.Delta, error) {
	var ch openAIChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return nil, fmt.Errorf("chunk is not JSON: %w", err)
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return nil, &loop.UpstreamError{Status: http.StatusBadGateway, Body: data, Dialect: loop.DialectOpenAI}
	}
	var out []loop.Delta
	if !a.started {
		a.started = true
		a.meta = loop.Meta{ID: ch.ID, Created: ch.Created, Model: ch.Model}
		m := a.meta
		out = append(out, loop.Delta{Meta: &m})
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			return nil, fmt.Errorf("chunk: %w", err)
		}
		for k, v := range top {
			switch k {
			case "id", "created", "model", "object", "choices", "usage":
			default:
				a.extra[k] = v
			}
		}
	}
	if len(ch.Usage) > 0 && string(ch.Usage) != "null" {
		u, err := decodeUsage(ch.Usage)
		if err != nil {
			return nil, fmt.Errorf("chunk usage: %w", err)
		}
		a.usage = u
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finishReason = *c.FinishReason
		}
		if len(c.Logprobs) > 0 && string(c.Logprobs) != "null" {
			a.choiceExtra["logprobs"] = c.Logprobs
		}
		if len(c.Delta) == 0 {
			continue
		}
		var d openAIDelta
		if err := json.Unmarshal(c.Delta, &d); err != nil {
			return nil, fmt.Errorf("chunk delta: %w", err)
		}
		if d.Content != nil && *d.Content != "" {
			a.text.WriteString(*d.Content)
			out = append(out, loop.Delta{Text: *d.Content})
		}
		for _, tc := range d.ToolCalls {
			call, ok := a.calls[tc.Index]
			if !ok {
				call = &openAIToolCall{Type: "function"}
				a.calls[tc.Index] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
			out = append(out, loop.Delta{Tool: &loop.ToolDelta{Index: tc.Index, ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}})
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(c.Delta, &fields); err != nil {
			return nil, fmt.Errorf("chunk delta: %w", err)
		}
		if d, ok := a.otherFields(fields); ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// otherFields keeps a delta's fields the loop does not read (refusal,
// reasoning_content, ...): string ones are accumulated for the final
// message, all are passed on as one Extra delta.
func (a *streamAssembler) otherFields(fields map[string]json.RawMessage) (loop.Delta, bool) {
	var extra map[string]json.RawMessage
	for k, v := range fields {
		if k == "content" || k == "tool_calls" || k == "role" || string(v) == "null" || string(v) == `""` {
			continue
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[k] = v
		// Only string fields accumulate; others pass on as they are.
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			b, ok := a.other[k]
			if !ok {
				b = &strings.Builder{}
				a.other[k] = b
			}
			b.WriteString(s)
		}
	}
	if extra == nil {
		return loop.Delta{}, false
	}
	return loop.Delta{Extra: extra, Dialect: loop.DialectOpenAI}, true
}

// Finish implements upstream.Decoder.
func (a *streamAssembler) Finish() (*loop.UpstreamResponse, error) {
	if !a.started {
		return nil, errors.New("stream ended without a chunk")
	}
	msg := assembledMessage{Role: "assistant"}
	if a.text.Len() > 0 || len(a.calls) == 0 {
		text := a.text.String()
		msg.Content = &text
	}
	if len(a.other) > 0 {
		msg.Extra = make(map[string]json.RawMessage, len(a.other))
		for k, b := range a.other {
			msg.Extra[k], _ = upstream.Marshal(b.String()) // a string always encodes
		}
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	if len(idx) > 0 {
		calls := make([]openAIToolCall, 0, len(idx))
		for _, i := range idx {
			calls = append(calls, *a.calls[i])
		}
		msg.ToolCalls = calls
	}
	raw, err := wire.Marshal(msg, msg.Extra)
	if err != nil {
		return nil, err
	}
	m, err := DecodeMessage(raw)
	if err != nil {
		return nil, err
	}
	return &loop.UpstreamResponse{
		Meta:         a.meta,
		Message:      m,
		FinishReason: a.finishReason,
		Usage:        a.usage,
		Dialect:      loop.DialectOpenAI,
		Extra:        a.extra,
		ChoiceExtra:  a.choiceExtra,
	}, nil
}
