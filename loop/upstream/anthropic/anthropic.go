package loop

import (
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

// Anthropic is a client of the Anthropic Messages API (POST /messages and
// /messages/count_tokens).
//
// Like OpenAI it is written against the wire format, not an SDK, so that
// content blocks the loop does not read (thinking with its signature,
// citations, cache_control, images) travel back to the upstream byte for
// byte.
//
// How the canonical conversation maps to Messages:
//   - system and developer messages become the top-level "system" (an
//     Anthropic-dialect system message keeps its raw value: a string or a
//     list of blocks);
//   - a RoleTool message is one tool_result block; consecutive tool results
//     and user messages are merged into one user turn, results first (the
//     API wants them at the start of the turn that follows tool_use);
//   - an assistant message is its raw content when it came from an
//     Anthropic upstream or caller, else a text block and tool_use blocks;
//   - for an Anthropic-dialect RoleTool message Raw is the tool_result
//     block itself, not a message (Messages has no tool role).
type Anthropic struct {
	name      string
	baseURL   string
	apiKey    string
	version   string
	maxTokens int
	timeouts  Timeouts
	client    *http.Client
}

// AnthropicConfig configures an Anthropic client.
type AnthropicConfig struct {
	// Name is the route name, for errors and logs.
	Name string
	// BaseURL is the API root that /messages is appended to (".../v1").
	BaseURL string
	APIKey  string
	// Version is the anthropic-version header (default 2023-06-01).
	Version string
	// DefaultMaxTokens is sent when the request has no max_tokens, which
	// the Messages API requires (default 4096).
	DefaultMaxTokens int
	Timeouts         Timeouts
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
}

// NewAnthropic returns a client.
func NewAnthropic(cfg AnthropicConfig) *Anthropic {
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
	if cfg.Version == "" {
		cfg.Version = "2023-06-01"
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = 4096
	}
	return &Anthropic{
		name:      cfg.Name,
		baseURL:   strings.TrimRight(cfg.BaseURL, "/"),
		apiKey:    cfg.APIKey,
		version:   cfg.Version,
		maxTokens: cfg.DefaultMaxTokens,
		timeouts:  t,
		client:    &http.Client{Transport: tr},
	}
}

// TokenCounter is an upstream that can count the input tokens of a request
// itself (the Anthropic count_tokens endpoint).
type TokenCounter interface {
	CountTokens(ctx context.Context, req *UpstreamRequest) (int64, error)
}

func (c *Anthropic) post(ctx context.Context, path string, body []byte, stream bool) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.name, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("anthropic-version", c.version)
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	if c.apiKey != "" {
		hr.Header.Set("x-api-key", c.apiKey)
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.name, causeOr(ctx, err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &UpstreamError{Route: c.name, Status: resp.StatusCode, Body: b, Dialect: DialectAnthropic}
	}
	return resp, nil
}

// Call implements Upstream.
func (c *Anthropic) Call(ctx context.Context, req *UpstreamRequest, onDelta func(Delta) error) (*UpstreamResponse, error) {
	body, err := c.encodeRequest(req, false)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeouts.Total)
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	resp, err := c.post(ctx, "/messages", body, req.Stream)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if !req.Stream {
		return readUpstreamBody(ctx, c.name, resp.Body, decodeAnthropicResponse)
	}
	return readUpstreamStream(ctx, c.name, resp.Body, c.timeouts.Idle, cancelCause, newAnthropicAssembler(c.name), onDelta)
}

// CountTokens asks the upstream's count_tokens endpoint for the input
// tokens of req (messages, system, tools and tool choice).
func (c *Anthropic) CountTokens(ctx context.Context, req *UpstreamRequest) (int64, error) {
	body, err := c.encodeRequest(req, true)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeouts.Total)
	defer cancel()
	resp, err := c.post(ctx, "/messages/count_tokens", body, false)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || out.InputTokens == nil {
		return 0, fmt.Errorf("upstream %s: count_tokens answer without input_tokens (%v)", c.name, err)
	}
	return *out.InputTokens, nil
}

// countFields are the request fields the count_tokens endpoint accepts.
var countFields = map[string]bool{"model": true, "messages": true, "system": true, "tools": true, "tool_choice": true, "thinking": true}

// encodeRequest renders the canonical request as a Messages body (for
// count_tokens when count is set).
func (c *Anthropic) encodeRequest(req *UpstreamRequest, count bool) ([]byte, error) {
	body := map[string]any{}
	if req.OptionsDialect == DialectAnthropic {
		for k, v := range req.Options {
			body[k] = v
		}
	} else {
		for k, v := range translateOptionsToAnthropic(req.Options) {
			body[k] = v
		}
	}
	if _, ok := body["max_tokens"]; !ok {
		body["max_tokens"] = c.maxTokens
	}
	body["model"] = req.Model
	system, msgs, err := encodeAnthropicMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	if system != nil {
		body["system"] = system
	} else {
		delete(body, "system")
	}
	body["messages"] = msgs
	delete(body, "tools")
	delete(body, "tool_choice")
	if len(req.Tools) > 0 {
		ts := make([]json.RawMessage, 0, len(req.Tools))
		for _, f := range req.Tools {
			if f.Dialect == DialectAnthropic && len(f.Raw) > 0 {
				ts = append(ts, f.Raw)
				continue
			}
			params := f.Parameters
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{"type":"object"}`)
			}
			b, err := marshalNoEscape(anthropicTool{Name: f.Name, Description: f.Description, InputSchema: params})
			if err != nil {
				return nil, err
			}
			ts = append(ts, b)
		}
		body["tools"] = ts
		if tc := encodeAnthropicToolChoice(req.ToolChoice); tc != nil {
			body["tool_choice"] = tc
		}
	}
	if count {
		for k := range body {
			if !countFields[k] {
				delete(body, k)
			}
		}
		return marshalNoEscape(body)
	}
	if req.Stream {
		body["stream"] = true
	} else {
		delete(body, "stream")
	}
	return marshalNoEscape(body)
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func encodeAnthropicToolChoice(tc ToolChoice) any {
	if tc.Dialect == DialectAnthropic && len(tc.Raw) > 0 {
		return tc.Raw
	}
	switch tc.Mode {
	case ToolChoiceAuto:
		return map[string]string{"type": "auto"}
	case ToolChoiceNone:
		return map[string]string{"type": "none"}
	case ToolChoiceRequired:
		return map[string]string{"type": "any"}
	case ToolChoiceFunction:
		return map[string]string{"type": "tool", "name": tc.Name}
	}
	return nil
}

// translateOptionsToAnthropic carries the sampling options Chat Completions
// spells differently; the rest has no Messages meaning and is dropped.
func translateOptionsToAnthropic(opts map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range []string{"temperature", "top_p", "max_tokens"} {
		if v, ok := opts[k]; ok && string(v) != "null" {
			out[k] = v
		}
	}
	if v, ok := opts["max_completion_tokens"]; ok && string(v) != "null" {
		out["max_tokens"] = v
	}
	if v, ok := opts["stop"]; ok && string(v) != "null" {
		var s string
		if json.Unmarshal(v, &s) == nil {
			b, _ := json.Marshal([]string{s})
			out["stop_sequences"] = b
		} else {
			out["stop_sequences"] = v
		}
	}
	if v, ok := opts["user"]; ok && string(v) != "null" {
		b, _ := json.Marshal(map[string]json.RawMessage{"user_id": v})
		out["metadata"] = b
	}
	return out
}

// anthropicTurn is one message being built; raw is kept while the turn is
// a single message that needs no merging.
type anthropicTurn struct {
	role   string
	raw    json.RawMessage
	blocks []json.RawMessage
}

func (t *anthropicTurn) blockList() ([]json.RawMessage, error) {
	if t.raw == nil {
		return t.blocks, nil
	}
	var w struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(t.raw, &w); err != nil {
		return nil, err
	}
	blocks, err := contentBlocks(w.Content)
	if err != nil {
		return nil, err
	}
	return append(blocks, t.blocks...), nil
}

// contentBlocks reads Messages content: a string becomes one text block.
func contentBlocks(raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if s == "" {
			return nil, nil
		}
		b, err := marshalNoEscape(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}, err
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content must be a string or a list of blocks: %w", err)
	}
	return blocks, nil
}

func encodeAnthropicMessages(msgs []Message) (any, []json.RawMessage, error) {
	var sysTexts []string
	var sysRaw json.RawMessage
	sysCount := 0
	var turns []*anthropicTurn
	add := func(role string, raw json.RawMessage, blocks ...json.RawMessage) {
		turns = append(turns, &anthropicTurn{role: role, raw: raw, blocks: blocks})
	}
	for _, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleDeveloper:
			sysCount++
			if m.Dialect == DialectAnthropic && len(m.Raw) > 0 {
				sysRaw = m.Raw
			}
			if m.Text != "" {
				sysTexts = append(sysTexts, m.Text)
			}
		case RoleTool:
			if m.Dialect == DialectAnthropic && len(m.Raw) > 0 {
				add("user", nil, m.Raw)
				continue
			}
			tr := map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Text}
			if m.IsError {
				tr["is_error"] = true
			}
			b, err := marshalNoEscape(tr)
			if err != nil {
				return nil, nil, err
			}
			add("user", nil, b)
		case RoleAssistant:
			if m.Dialect == DialectAnthropic && len(m.Raw) > 0 {
				add("assistant", m.Raw)
				continue
			}
			var blocks []json.RawMessage
			if m.Text != "" {
				b, _ := marshalNoEscape(map[string]string{"type": "text", "text": m.Text})
				blocks = append(blocks, b)
			}
			for _, tc := range m.ToolCalls {
				input := json.RawMessage(tc.Args)
				var obj map[string]json.RawMessage
				if json.Unmarshal(input, &obj) != nil || obj == nil {
					// The API takes an object; a model's broken arguments
					// are sent as an empty one.
					input = json.RawMessage(`{}`)
				}
				b, err := marshalNoEscape(map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": input})
				if err != nil {
					return nil, nil, err
				}
				blocks = append(blocks, b)
			}
			if len(blocks) == 0 {
				continue
			}
			add("assistant", nil, blocks...)
		default: // user
			if m.Dialect == DialectAnthropic && len(m.Raw) > 0 {
				add("user", m.Raw)
				continue
			}
			blocks, err := userBlocksFromCanonical(m)
			if err != nil {
				return nil, nil, err
			}
			if len(blocks) == 0 {
				continue
			}
			add("user", nil, blocks...)
		}
	}
	// Merge consecutive turns of one role (the API wants alternation).
	var out []json.RawMessage
	for i := 0; i < len(turns); {
		j := i + 1
		for j < len(turns) && turns[j].role == turns[i].role {
			j++
		}
		if j == i+1 && turns[i].raw != nil {
			out = append(out, turns[i].raw)
			i = j
			continue
		}
		var blocks []json.RawMessage
		for _, t := range turns[i:j] {
			bl, err := t.blockList()
			if err != nil {
				return nil, nil, fmt.Errorf("message: %w", err)
			}
			blocks = append(blocks, bl...)
		}
		if turns[i].role == "user" {
			// tool_result blocks first.
			sort.SliceStable(blocks, func(a, b int) bool {
				return blockType(blocks[a]) == "tool_result" && blockType(blocks[b]) != "tool_result"
			})
		}
		b, err := marshalNoEscape(map[string]any{"role": turns[i].role, "content": blocks})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, b)
		i = j
	}
	var system any
	switch {
	case sysCount == 1 && sysRaw != nil:
		system = sysRaw
	case len(sysTexts) > 0:
		system = strings.Join(sysTexts, "\n\n")
	}
	return system, out, nil
}

func blockType(b json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &h)
	return h.Type
}

// userBlocksFromCanonical renders a user message of another dialect: text
// parts and images (OpenAI image_url, as a URL or base64 source).
func userBlocksFromCanonical(m Message) ([]json.RawMessage, error) {
	if len(m.Parts) == 0 {
		if m.Text == "" {
			return nil, nil
		}
		b, err := marshalNoEscape(map[string]string{"type": "text", "text": m.Text})
		return []json.RawMessage{b}, err
	}
	var out []json.RawMessage
	for _, p := range m.Parts {
		var block any
		switch p.Type {
		case "text":
			if p.Text == "" {
				continue
			}
			block = map[string]string{"type": "text", "text": p.Text}
		case "image_url":
			var w struct {
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if json.Unmarshal(p.Raw, &w) != nil || w.ImageURL.URL == "" {
				continue
			}
			block = map[string]any{"type": "image", "source": imageSource(w.ImageURL.URL)}
		default:
			continue
		}
		b, err := marshalNoEscape(block)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func imageSource(u string) map[string]string {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if mt, data, ok := strings.Cut(rest, ";base64,"); ok {
			return map[string]string{"type": "base64", "media_type": mt, "data": data}
		}
	}
	return map[string]string{"type": "url", "url": u}
}

// DecodeAnthropicMessage reads one Messages message into canonical form. A
// user message holding tool_result blocks becomes one RoleTool message per
// result (Raw = the block) followed, when other blocks remain, by a user
// message with those blocks. Wire formats use it for caller messages.
func DecodeAnthropicMessage(raw json.RawMessage) ([]Message, error) {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	if w.Role != "user" && w.Role != "assistant" {
		return nil, fmt.Errorf("message role must be user or assistant, not %q", w.Role)
	}
	c := bytes.TrimSpace(w.Content)
	if len(c) > 0 && c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fmt.Errorf("message content: %w", err)
		}
		return []Message{{Role: Role(w.Role), Text: s, Dialect: DialectAnthropic, Raw: raw}}, nil
	}
	blocks, err := contentBlocks(c)
	if err != nil {
		return nil, fmt.Errorf("message content: %w", err)
	}
	m := Message{Role: Role(w.Role), Dialect: DialectAnthropic, Raw: raw}
	var results []Message
	var rest []json.RawMessage
	var sb strings.Builder
	for _, b := range blocks {
		var h struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			return nil, fmt.Errorf("content block: %w", err)
		}
		switch {
		case h.Type == "tool_result" && w.Role == "user":
			text, err := resultText(h.Content)
			if err != nil {
				return nil, err
			}
			results = append(results, Message{Role: RoleTool, ToolCallID: h.ToolUseID, Text: text, IsError: h.IsError, Dialect: DialectAnthropic, Raw: b})
			continue
		case h.Type == "tool_use" && w.Role == "assistant":
			args := h.Input
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: h.ID, Name: h.Name, Args: args})
		case h.Type == "text":
			sb.WriteString(h.Text)
		}
		rest = append(rest, b)
		m.Parts = append(m.Parts, Part{Type: h.Type, Text: h.Text, Raw: b})
	}
	m.Text = sb.String()
	if len(results) == 0 {
		return []Message{m}, nil
	}
	if len(rest) == 0 {
		return results, nil
	}
	m.Raw, err = marshalNoEscape(map[string]any{"role": w.Role, "content": rest})
	if err != nil {
		return nil, err
	}
	return append(results, m), nil
}

// resultText is the text of tool_result content (a string or blocks).
func resultText(raw json.RawMessage) (string, error) {
	blocks, err := contentBlocks(raw)
	if err != nil {
		return "", fmt.Errorf("tool_result content: %w", err)
	}
	var parts []string
	for _, b := range blocks {
		var h struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &h) == nil && h.Type == "text" {
			parts = append(parts, h.Text)
		}
	}
	return strings.Join(parts, "\n"), nil
}

// Anthropic stop reasons in canonical (OpenAI) spelling; the raw
// stop_reason stays in UpstreamResponse.Extra.
func finishFromStopReason(s string) string {
	switch s {
	case "tool_use":
		return FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "refusal":
		return "content_filter"
	default: // end_turn, stop_sequence, pause_turn
		return FinishStop
	}
}

// StopReason is the Messages stop_reason for a canonical finish reason.
func StopReason(finish string) string {
	switch finish {
	case FinishToolCalls:
		return "tool_use"
	case FinishLength:
		return "max_tokens"
	case "content_filter":
		return "refusal"
	default:
		return "end_turn"
	}
}

func decodeAnthropicResponse(b []byte) (*UpstreamResponse, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	out := &UpstreamResponse{Dialect: DialectAnthropic, Extra: map[string]json.RawMessage{}, Meta: Meta{Created: time.Now().Unix()}}
	content := json.RawMessage(`[]`)
	for k, v := range top {
		var err error
		switch k {
		case "id":
			err = json.Unmarshal(v, &out.ID)
		case "model":
			err = json.Unmarshal(v, &out.Model)
		case "content":
			content = v
		case "usage":
			out.Usage, err = decodeAnthropicUsage(v)
		case "type", "role":
		default:
			out.Extra[k] = v
		}
		if err != nil {
			return nil, fmt.Errorf("response field %s: %w", k, err)
		}
	}
	var stop string
	_ = json.Unmarshal(out.Extra["stop_reason"], &stop)
	out.FinishReason = finishFromStopReason(stop)
	raw, err := marshalNoEscape(map[string]json.RawMessage{"role": json.RawMessage(`"assistant"`), "content": content})
	if err != nil {
		return nil, err
	}
	msgs, err := DecodeAnthropicMessage(raw)
	if err != nil {
		return nil, err
	}
	out.Message = msgs[0]
	return out, nil
}

func decodeAnthropicUsage(raw json.RawMessage) (Usage, error) {
	d, err := decodeDetail(raw)
	if err != nil || d == nil {
		return Usage{}, err
	}
	return anthropicUsage(d), nil
}

// anthropicUsage: input_tokens excludes cache reads and writes; the
// canonical InputTokens counts all input, as prompt_tokens does.
func anthropicUsage(d map[string]any) Usage {
	read := numberField(d, "cache_read_input_tokens")
	write := numberField(d, "cache_creation_input_tokens")
	return Usage{Dialect: DialectAnthropic, Detail: d, Present: true,
		InputTokens:       numberField(d, "input_tokens") + read + write,
		OutputTokens:      numberField(d, "output_tokens"),
		CachedInputTokens: read,
	}
}

// anthropicAssembler builds the complete response from Messages stream
// events and turns them into canonical deltas.
type anthropicAssembler struct {
	route   string
	started bool
	meta    Meta
	extra   map[string]json.RawMessage
	usage   map[string]any
	blocks  map[int]*anthropicBlock
	tools   int // tool_use blocks seen, the canonical tool index
	stopped bool
}

type anthropicBlock struct {
	start   map[string]json.RawMessage
	typ     string
	text    strings.Builder // text, thinking
	sig     strings.Builder
	json    strings.Builder // tool_use input
	tool    int
	cites   []json.RawMessage
	touched bool
}

func newAnthropicAssembler(route string) *anthropicAssembler {
	return &anthropicAssembler{route: route, extra: map[string]json.RawMessage{}, blocks: map[int]*anthropicBlock{}}
}

type anthropicEvent struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
	Error        json.RawMessage `json:"error"`
}

func (a *anthropicAssembler) add(data []byte) ([]Delta, error) {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("event is not JSON: %w", err)
	}
	switch ev.Type {
	case "message_start":
		var top map[string]json.RawMessage
		if err := json.Unmarshal(ev.Message, &top); err != nil {
			return nil, fmt.Errorf("message_start: %w", err)
		}
		a.started = true
		a.meta.Created = time.Now().Unix()
		_ = json.Unmarshal(top["id"], &a.meta.ID)
		_ = json.Unmarshal(top["model"], &a.meta.Model)
		for k, v := range top {
			switch k {
			case "id", "model", "type", "role", "content", "usage", "stop_reason", "stop_sequence":
			default:
				a.extra[k] = v
			}
		}
		if u, err := decodeDetail(top["usage"]); err == nil && u != nil {
			a.usage = u
		}
		m := a.meta
		return []Delta{{Meta: &m}}, nil
	case "content_block_start":
		var start map[string]json.RawMessage
		if err := json.Unmarshal(ev.ContentBlock, &start); err != nil {
			return nil, fmt.Errorf("content_block_start: %w", err)
		}
		b := &anthropicBlock{start: start}
		_ = json.Unmarshal(start["type"], &b.typ)
		a.blocks[ev.Index] = b
		switch b.typ {
		case "text":
			var s string
			_ = json.Unmarshal(start["text"], &s)
			b.text.WriteString(s)
			if s != "" {
				return []Delta{{Text: s}}, nil
			}
		case "thinking":
			var s string
			_ = json.Unmarshal(start["thinking"], &s)
			b.text.WriteString(s)
		case "tool_use":
			b.tool = a.tools
			a.tools++
			var h struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			}
			_ = json.Unmarshal(ev.ContentBlock, &h)
			return []Delta{{Tool: &ToolDelta{Index: b.tool, ID: h.ID, Name: h.Name}}}, nil
		}
		return nil, nil
	case "content_block_delta":
		b, ok := a.blocks[ev.Index]
		if !ok {
			return nil, fmt.Errorf("content_block_delta for unknown block %d", ev.Index)
		}
		var d struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			PartialJSON string          `json:"partial_json"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			Citation    json.RawMessage `json:"citation"`
		}
		if err := json.Unmarshal(ev.Delta, &d); err != nil {
			return nil, fmt.Errorf("content_block_delta: %w", err)
		}
		b.touched = true
		switch d.Type {
		case "text_delta":
			b.text.WriteString(d.Text)
			if d.Text != "" {
				return []Delta{{Text: d.Text}}, nil
			}
		case "input_json_delta":
			b.json.WriteString(d.PartialJSON)
			if d.PartialJSON != "" {
				return []Delta{{Tool: &ToolDelta{Index: b.tool, Args: d.PartialJSON}}}, nil
			}
		case "thinking_delta":
			b.text.WriteString(d.Thinking)
			return []Delta{{Extra: map[string]json.RawMessage{"thinking": jsonString(d.Thinking)}, Dialect: DialectAnthropic}}, nil
		case "signature_delta":
			b.sig.WriteString(d.Signature)
			return []Delta{{Extra: map[string]json.RawMessage{"signature": jsonString(d.Signature)}, Dialect: DialectAnthropic}}, nil
		case "citations_delta":
			b.cites = append(b.cites, d.Citation)
		}
		return nil, nil
	case "message_delta":
		var d map[string]json.RawMessage
		_ = json.Unmarshal(ev.Delta, &d)
		for k, v := range d {
			a.extra[k] = v
		}
		// message_delta usage counts are cumulative: they replace.
		if u, err := decodeDetail(ev.Usage); err == nil && u != nil {
			if a.usage == nil {
				a.usage = map[string]any{}
			}
			for k, v := range u {
				if v != nil {
					a.usage[k] = v
				}
			}
		}
		return nil, nil
	case "message_stop":
		a.stopped = true
		return nil, nil
	case "error":
		return nil, &UpstreamError{Route: a.route, Status: http.StatusBadGateway, Body: data, Dialect: DialectAnthropic}
	}
	// ping, content_block_stop and future events.
	return nil, nil
}

func jsonString(s string) json.RawMessage {
	b, _ := marshalNoEscape(s)
	return b
}

func (a *anthropicAssembler) finish() (*UpstreamResponse, error) {
	if !a.started {
		return nil, errors.New("stream ended without message_start")
	}
	idx := make([]int, 0, len(a.blocks))
	for i := range a.blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	content := make([]json.RawMessage, 0, len(idx))
	for _, i := range idx {
		b := a.blocks[i]
		blk := map[string]json.RawMessage{}
		for k, v := range b.start {
			blk[k] = v
		}
		switch b.typ {
		case "text":
			blk["text"] = jsonString(b.text.String())
			if len(b.cites) > 0 {
				blk["citations"], _ = marshalNoEscape(b.cites)
			}
		case "thinking":
			blk["thinking"] = jsonString(b.text.String())
			blk["signature"] = jsonString(b.sig.String())
		case "tool_use":
			in := strings.TrimSpace(b.json.String())
			if in == "" {
				in = "{}"
			}
			if !json.Valid([]byte(in)) {
				return nil, fmt.Errorf("tool_use %d: input is not JSON", i)
			}
			blk["input"] = json.RawMessage(in)
		}
		raw, err := marshalNoEscape(blk)
		if err != nil {
			return nil, err
		}
		content = append(content, raw)
	}
	body := map[string]any{"id": a.meta.ID, "type": "message", "role": "assistant", "model": a.meta.Model, "content": content}
	for k, v := range a.extra {
		body[k] = v
	}
	if a.usage != nil {
		body["usage"] = a.usage
	}
	raw, err := marshalNoEscape(body)
	if err != nil {
		return nil, err
	}
	out, err := decodeAnthropicResponse(raw)
	if err != nil {
		return nil, err
	}
	out.Created = a.meta.Created
	return out, nil
}
