// Package anthropic is the client of the Anthropic Messages API (POST
// /messages and /messages/count_tokens) for the hosted-tool loop: it
// translates the canonical conversation of package loop into a Messages
// body and assembles the answer, whole or streamed, into a
// loop.UpstreamResponse and loop.Deltas. The transport (timeouts, size
// limits, event stream, errors) is server/v1/upstream's.
//
// Like the OpenAI client it is written against the wire format, not an
// SDK, so that content blocks the loop does not read (thinking with its
// signature, citations, cache_control, images) travel back to the upstream
// byte for byte.
//
// How the canonical conversation maps to Messages:
//   - system and developer messages become the top-level "system" (an
//     Anthropic-dialect system message keeps its raw value: a string or a
//     list of blocks);
//   - a loop.RoleTool message is one tool_result block; consecutive tool results
//     and user messages are merged into one user turn, results first (the
//     API wants them at the start of the turn that follows tool_use);
//   - an assistant message is its raw content when it came from an
//     Anthropic upstream or caller, else a text block and tool_use blocks;
//   - for an Anthropic-dialect loop.RoleTool message Raw is the tool_result
//     block itself, not a message (Messages has no tool role).
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// Client is a loop.Upstream and loop.TokenCounter speaking Messages.
type Client struct {
	http      *upstream.Client
	maxTokens int
}

// Config configures a Client.
type Config struct {
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
	Timeouts         upstream.Timeouts
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
	// Propagator writes the call's trace context (traceparent) into
	// each request; nil sends none.
	Propagator propagation.TextMapPropagator
}

// New returns a client.
func New(cfg Config) *Client {
	if cfg.Version == "" {
		cfg.Version = "2023-06-01"
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = 4096
	}
	h := http.Header{}
	h.Set("anthropic-version", cfg.Version)
	if cfg.APIKey != "" {
		h.Set("x-api-key", cfg.APIKey)
	}
	return &Client{
		http: upstream.New(upstream.Config{
			Name: cfg.Name, BaseURL: cfg.BaseURL, Dialect: loop.DialectAnthropic,
			Header: h, Timeouts: cfg.Timeouts, Transport: cfg.Transport, Propagator: cfg.Propagator,
		}),
		maxTokens: cfg.DefaultMaxTokens,
	}
}

// Call implements loop.Upstream.
func (c *Client) Call(ctx context.Context, req *loop.UpstreamRequest, onDelta func(loop.Delta) error) (*loop.UpstreamResponse, error) {
	body, err := c.encodeRequest(req, false)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: encode request: %w", c.http.Name(), err)
	}
	return c.http.Call(ctx, upstream.Exchange{
		Path: "/messages", Body: body, Stream: req.Stream,
		Decode: decodeResponse, Decoder: newAssembler(c.http.Name()), OnDelta: onDelta,
	})
}

// CountTokens implements loop.TokenCounter with the upstream's
// count_tokens endpoint: the input tokens of req (messages, system, tools
// and tool choice).
func (c *Client) CountTokens(ctx context.Context, req *loop.UpstreamRequest) (int64, error) {
	body, err := c.encodeRequest(req, true)
	if err != nil {
		return 0, fmt.Errorf("upstream %s: encode request: %w", c.http.Name(), err)
	}
	b, err := c.http.Post(ctx, "/messages/count_tokens", body, 1<<20)
	if err != nil {
		return 0, err
	}
	var out struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("upstream %s: count_tokens answer: %w", c.http.Name(), err)
	}
	if out.InputTokens == nil {
		return 0, fmt.Errorf("upstream %s: count_tokens answer without input_tokens", c.http.Name())
	}
	return *out.InputTokens, nil
}

// countFields are the request fields the count_tokens endpoint accepts.
var countFields = map[string]bool{"model": true, "messages": true, "system": true, "tools": true, "tool_choice": true, "thinking": true}

// encodeRequest renders the canonical request as a Messages body (for
// count_tokens when count is set).
func (c *Client) encodeRequest(req *loop.UpstreamRequest, count bool) ([]byte, error) {
	opts := req.Options
	if req.OptionsDialect != loop.DialectAnthropic {
		opts = translateOptionsToAnthropic(req.Options)
	}
	body := requestJSON{Model: req.Model, Stream: req.Stream && !count, Extra: make(map[string]json.RawMessage, len(opts))}
	for k, v := range opts {
		switch {
		case k == "system" || k == "tools" || k == "tool_choice" || k == "stream":
			// Ours to set from the canonical request.
		case count && !countFields[k]:
		default:
			body.Extra[k] = v
		}
	}
	if _, ok := opts["max_tokens"]; !ok && !count {
		body.MaxTokens = &c.maxTokens
	}
	system, msgs, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	body.System, body.Messages = system, msgs
	if len(req.Tools) > 0 {
		body.Tools = make([]json.RawMessage, 0, len(req.Tools))
		for _, f := range req.Tools {
			if f.Dialect == loop.DialectAnthropic && len(f.Raw) > 0 {
				body.Tools = append(body.Tools, f.Raw)
				continue
			}
			params := f.Parameters
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{"type":"object"}`)
			}
			b, err := upstream.Marshal(anthropicTool{Name: f.Name, Description: f.Description, InputSchema: params})
			if err != nil {
				return nil, err
			}
			body.Tools = append(body.Tools, b)
		}
		body.ToolChoice = encodeAnthropicToolChoice(req.ToolChoice)
	}
	return wire.Marshal(body, body.Extra)
}

// requestJSON is a Messages (or count_tokens) request body; Extra holds
// the caller's options.
type requestJSON struct {
	MaxTokens  *int                       `json:"max_tokens,omitempty"`
	Messages   []json.RawMessage          `json:"messages"`
	Model      string                     `json:"model"`
	Stream     bool                       `json:"stream,omitempty"`
	System     any                        `json:"system,omitempty"`
	ToolChoice json.RawMessage            `json:"tool_choice,omitempty"`
	Tools      []json.RawMessage          `json:"tools,omitempty"`
	Extra      map[string]json.RawMessage `json:"-"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// toolChoiceJSON is a Messages tool_choice.
type toolChoiceJSON struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
}

// encodeAnthropicToolChoice is the tool_choice of a request (nil for none).
func encodeAnthropicToolChoice(tc loop.ToolChoice) json.RawMessage {
	if tc.Dialect == loop.DialectAnthropic && len(tc.Raw) > 0 {
		return tc.Raw
	}
	var v toolChoiceJSON
	switch tc.Mode {
	case loop.ToolChoiceAuto:
		v.Type = "auto"
	case loop.ToolChoiceNone:
		v.Type = "none"
	case loop.ToolChoiceRequired:
		v.Type = "any"
	case loop.ToolChoiceFunction:
		v.Type, v.Name = "tool", tc.Name
	default:
		return nil
	}
	b, _ := upstream.Marshal(v) // a struct of strings always encodes
	return b
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
