package loop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"
)

// OpenAI is a client of an OpenAI-compatible Chat Completions API.
//
// It is written against the wire format rather than an SDK because the loop
// must pass the caller's fields through byte for byte (messages, sampling
// options, usage details) and an SDK's typed structs would drop what they do
// not know.
type OpenAI struct {
	name     string
	baseURL  string
	apiKey   string
	timeouts Timeouts
	client   *http.Client
}

// OpenAIConfig configures an OpenAI client.
type OpenAIConfig struct {
	// Name is the route name, for errors and logs.
	Name string
	// BaseURL is the API root that /chat/completions is appended to
	// (".../v1").
	BaseURL  string
	APIKey   string
	Timeouts Timeouts
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
}

// NewOpenAI returns a client.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	t := cfg.Timeouts.withDefaults()
	tr := cfg.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: t.Header,
		}
	}
	return &OpenAI{
		name:     cfg.Name,
		baseURL:  strings.TrimRight(cfg.BaseURL, "/"),
		apiKey:   cfg.APIKey,
		timeouts: t,
		client:   &http.Client{Transport: tr},
	}
}

// errIdle is the cause when a stream stays silent longer than Timeouts.Idle.
var errIdle = errors.New("upstream stream idle timeout")

// Call implements Upstream.
func (c *OpenAI) Call(ctx context.Context, req *UpstreamRequest, onDelta func(Delta) error) (*UpstreamResponse, error) {
	body, err := c.encodeRequest(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeouts.Total)
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)

	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.name, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.name, causeOr(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &UpstreamError{Route: c.name, Status: resp.StatusCode, Body: b, Dialect: DialectOpenAI}
	}
	if !req.Stream {
		return readUpstreamBody(ctx, c.name, resp.Body, decodeOpenAIResponse)
	}
	return readUpstreamStream(ctx, c.name, resp.Body, c.timeouts.Idle, cancelCause, newStreamAssembler(), onDelta)
}

func causeOr(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(err, c) {
		return fmt.Errorf("%w (%w)", c, err)
	}
	return err
}

// deltaError marks an error returned by the caller's onDelta, which is
// returned unwrapped.
type deltaError struct{ err error }

func (e deltaError) Error() string { return e.err.Error() }

// encodeRequest renders the canonical request as a Chat Completions body.
func (c *OpenAI) encodeRequest(req *UpstreamRequest) ([]byte, error) {
	body := map[string]any{}
	if req.OptionsDialect == DialectOpenAI || req.OptionsDialect == "" {
		for k, v := range req.Options {
			body[k] = v
		}
	} else {
		for k, v := range translateOptionsToOpenAI(req.Options) {
			body[k] = v
		}
	}
	body["model"] = req.Model
	msgs := make([]json.RawMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		b, err := encodeOpenAIMessage(m)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, b)
	}
	body["messages"] = msgs
	if len(req.Tools) > 0 {
		ts := make([]json.RawMessage, 0, len(req.Tools))
		for _, f := range req.Tools {
			if f.Dialect == DialectOpenAI && len(f.Raw) > 0 {
				ts = append(ts, f.Raw)
				continue
			}
			b, err := json.Marshal(map[string]any{"type": "function", "function": openAIFunction{Name: f.Name, Description: f.Description, Parameters: f.Parameters}})
			if err != nil {
				return nil, err
			}
			ts = append(ts, b)
		}
		body["tools"] = ts
		if tc := encodeOpenAIToolChoice(req.ToolChoice); tc != nil {
			body["tool_choice"] = tc
		}
	}
	if req.Stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	} else {
		delete(body, "stream")
		delete(body, "stream_options")
	}
	return marshalNoEscape(body)
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func encodeOpenAIToolChoice(tc ToolChoice) any {
	if tc.Dialect == DialectOpenAI && len(tc.Raw) > 0 {
		return tc.Raw
	}
	switch tc.Mode {
	case ToolChoiceDefault:
		return nil
	case ToolChoiceFunction:
		return map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
	default:
		return string(tc.Mode)
	}
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

func encodeOpenAIMessage(m Message) (json.RawMessage, error) {
	if m.Dialect == DialectOpenAI && len(m.Raw) > 0 {
		return m.Raw, nil
	}
	out := map[string]any{"role": string(m.Role)}
	switch {
	case m.Role == RoleTool:
		text := m.Text
		if m.IsError {
			text = "[tool error] " + text
		}
		out["content"] = text
		out["tool_call_id"] = m.ToolCallID
	case len(m.Parts) > 0 && m.Role != RoleAssistant:
		parts := make([]any, 0, len(m.Parts))
		for _, p := range m.Parts {
			if p.Type == "text" {
				parts = append(parts, map[string]string{"type": "text", "text": p.Text})
			}
		}
		out["content"] = parts
	case m.Text == "" && len(m.ToolCalls) > 0:
		out["content"] = nil
	default:
		out["content"] = m.Text
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]openAIToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			calls[i].ID = tc.ID
			calls[i].Type = "function"
			calls[i].Function.Name = tc.Name
			calls[i].Function.Arguments = string(tc.Args)
		}
		out["tool_calls"] = calls
	}
	return marshalNoEscape(out)
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// DecodeOpenAIMessage reads one Chat Completions message into canonical
// form, keeping its raw bytes. Wire formats use it for caller messages.
func DecodeOpenAIMessage(raw json.RawMessage) (Message, error) {
	var w struct {
		Role       string           `json:"role"`
		Content    json.RawMessage  `json:"content"`
		ToolCalls  []openAIToolCall `json:"tool_calls"`
		ToolCallID string           `json:"tool_call_id"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Message{}, fmt.Errorf("message: %w", err)
	}
	m := Message{Role: Role(w.Role), ToolCallID: w.ToolCallID, Dialect: DialectOpenAI, Raw: raw}
	text, parts, err := decodeOpenAIContent(w.Content)
	if err != nil {
		return Message{}, err
	}
	m.Text, m.Parts = text, parts
	for _, tc := range w.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
	}
	return m, nil
}

func decodeOpenAIContent(raw json.RawMessage) (string, []Part, error) {
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
	parts := make([]Part, 0, len(items))
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
		parts = append(parts, Part{Type: p.Type, Text: p.Text, Raw: it})
	}
	return sb.String(), parts, nil
}

func decodeOpenAIResponse(b []byte) (*UpstreamResponse, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	out := &UpstreamResponse{Dialect: DialectOpenAI, Extra: map[string]json.RawMessage{}}
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
			out.Usage, err = decodeOpenAIUsage(v)
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
			_ = json.Unmarshal(v, &out.FinishReason)
		default:
			out.ChoiceExtra[k] = v
		}
	}
	msg, err := DecodeOpenAIMessage(ch["message"])
	if err != nil {
		return nil, err
	}
	if msg.Role == "" {
		msg.Role = RoleAssistant
	}
	out.Message = msg
	return out, nil
}

func decodeOpenAIUsage(raw json.RawMessage) (Usage, error) {
	d, err := decodeDetail(raw)
	if err != nil || d == nil {
		return Usage{}, err
	}
	u := Usage{Dialect: DialectOpenAI, Detail: d, Present: true,
		InputTokens:  numberField(d, "prompt_tokens"),
		OutputTokens: numberField(d, "completion_tokens"),
	}
	if pd, ok := d["prompt_tokens_details"].(map[string]any); ok {
		u.CachedInputTokens = numberField(pd, "cached_tokens")
	}
	return u, nil
}

// readSSE calls fn with the data of every server-sent event until [DONE] or
// the end of the body.
func readSSE(r io.Reader, fn func(data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	dispatch := func() error {
		if data == nil {
			return nil
		}
		d := data
		data = nil
		if string(d) == "[DONE]" {
			return io.EOF
		}
		if err := fn(d); err != nil {
			return deltaError{err}
		}
		return nil
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if derr := dispatch(); derr != nil {
					if derr == io.EOF {
						return nil
					}
					return derr
				}
			case line[0] == ':':
			case bytes.HasPrefix(line, []byte("data:")):
				v := bytes.TrimPrefix(line[5:], []byte(" "))
				if data == nil {
					data = append([]byte{}, v...)
				} else {
					data = append(append(data, '\n'), v...)
				}
			}
		}
		if err != nil {
			if err == io.EOF {
				if derr := dispatch(); derr != nil && derr != io.EOF {
					return derr
				}
				return nil
			}
			return err
		}
	}
}

// streamAssembler builds the complete response from Chat Completions chunks.
type streamAssembler struct {
	started      bool
	meta         Meta
	text         strings.Builder
	other        map[string]*strings.Builder // other string delta fields (refusal, reasoning_content)
	calls        map[int]*openAIToolCall
	finishReason string
	usage        Usage
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

func (a *streamAssembler) add(data []byte) ([]Delta, error) {
	var ch openAIChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return nil, fmt.Errorf("chunk is not JSON: %w", err)
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return nil, &UpstreamError{Status: http.StatusBadGateway, Body: data, Dialect: DialectOpenAI}
	}
	var out []Delta
	if !a.started {
		a.started = true
		a.meta = Meta{ID: ch.ID, Created: ch.Created, Model: ch.Model}
		m := a.meta
		out = append(out, Delta{Meta: &m})
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) == nil {
			for k, v := range top {
				switch k {
				case "id", "created", "model", "object", "choices", "usage":
				default:
					a.extra[k] = v
				}
			}
		}
	}
	if len(ch.Usage) > 0 && string(ch.Usage) != "null" {
		u, err := decodeOpenAIUsage(ch.Usage)
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
			out = append(out, Delta{Text: *d.Content})
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
			out = append(out, Delta{Tool: &ToolDelta{Index: tc.Index, ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}})
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(c.Delta, &fields) == nil {
			var extra map[string]json.RawMessage
			for k, v := range fields {
				if k == "content" || k == "tool_calls" || k == "role" || string(v) == "null" || string(v) == `""` {
					continue
				}
				if extra == nil {
					extra = map[string]json.RawMessage{}
				}
				extra[k] = v
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
			if extra != nil {
				out = append(out, Delta{Extra: extra, Dialect: DialectOpenAI})
			}
		}
	}
	return out, nil
}

func (a *streamAssembler) finish() (*UpstreamResponse, error) {
	if !a.started {
		return nil, errors.New("stream ended without a chunk")
	}
	msg := map[string]any{"role": "assistant"}
	if a.text.Len() > 0 || len(a.calls) == 0 {
		msg["content"] = a.text.String()
	} else {
		msg["content"] = nil
	}
	for k, b := range a.other {
		msg[k] = b.String()
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
		msg["tool_calls"] = calls
	}
	raw, err := marshalNoEscape(msg)
	if err != nil {
		return nil, err
	}
	m, err := DecodeOpenAIMessage(raw)
	if err != nil {
		return nil, err
	}
	return &UpstreamResponse{
		Meta:         a.meta,
		Message:      m,
		FinishReason: a.finishReason,
		Usage:        a.usage,
		Dialect:      DialectOpenAI,
		Extra:        a.extra,
		ChoiceExtra:  a.choiceExtra,
	}, nil
}
