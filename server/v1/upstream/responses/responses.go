// Package responses is the client of an OpenAI Responses API for the
// hosted-tool loop (a route with "protocol": "responses"): it translates
// the canonical conversation of package loop into a POST /responses body
// and assembles the answer, whole or streamed, into a loop.UpstreamResponse
// and loop.Deltas. The transport (timeouts, size limits, event stream,
// errors) is server/v1/upstream's.
//
// What a Responses provider gives natively is kept: the items with no
// canonical form (reasoning items with their encrypted_content and
// summaries, the calls of built-in tools the provider ran) ride on the
// canonical message as loop.Message.NativeItems and are sent back before
// the message's content in the next round; a caller's Responses request
// reaches the provider with its own members and built-in tools as they came
// (loop.Native). Function calls stay canonical, so the loop still runs the
// hosted tools; a custom_tool_call the provider makes becomes a call of the
// function of that name with the arguments {"input": INPUT}, the form
// server/v1 gives custom tools.
//
// The answer keeps its output items verbatim as Message.Raw (Dialect
// loop.DialectResponses) so the /v1/responses face can return them
// untouched, url_citation annotations included.
package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// Client is a loop.Upstream speaking the Responses API.
type Client struct {
	http *upstream.Client
}

// Config configures a Client.
type Config struct {
	// Name is the route name, for errors and logs.
	Name string
	// BaseURL is the API root that /responses is appended to (".../v1").
	BaseURL  string
	APIKey   string
	Timeouts upstream.Timeouts
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
	// Propagator writes the call's trace context (traceparent) into each
	// request; nil sends none.
	Propagator propagation.TextMapPropagator
}

// New returns a client.
func New(cfg Config) *Client {
	h := http.Header{}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	return &Client{http: upstream.New(upstream.Config{
		Name: cfg.Name, BaseURL: cfg.BaseURL, Dialect: loop.DialectResponses,
		Header: h, Timeouts: cfg.Timeouts, Transport: cfg.Transport, Propagator: cfg.Propagator,
	})}
}

// Call implements loop.Upstream.
func (c *Client) Call(ctx context.Context, req *loop.UpstreamRequest, onDelta func(loop.Delta) error) (*loop.UpstreamResponse, error) {
	body, err := EncodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: encode request: %w", c.http.Name(), err)
	}
	return c.http.Call(ctx, upstream.Exchange{
		Path: "/responses", Body: body, Stream: req.Stream,
		Decode: DecodeResponse, Decoder: NewStreamAssembler(), OnDelta: onDelta,
	})
}

// requestJSON is a Responses request body; Extra holds the caller's
// members (or the translated options), which the fields we set win over.
type requestJSON struct {
	Input        []json.RawMessage          `json:"input"`
	Instructions string                     `json:"instructions,omitempty"`
	Model        string                     `json:"model"`
	Stream       bool                       `json:"stream,omitempty"`
	ToolChoice   json.RawMessage            `json:"tool_choice,omitempty"`
	Tools        []json.RawMessage          `json:"tools,omitempty"`
	Extra        map[string]json.RawMessage `json:"-"`
}

// functionTool is a function in the tools of a request. Strict is always
// written: the Responses API makes a function strict when it is left out,
// which most schemas (the hosted tools' included) are not written for.
type functionTool struct {
	Description string          `json:"description,omitempty"`
	Name        string          `json:"name"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      json.RawMessage `json:"strict"`
	Type        string          `json:"type"`
}

// EncodeRequest renders the canonical request as a Responses body: the
// conversation as input items (a leading system message as instructions),
// the functions, then the caller's built-in tools as they came.
func EncodeRequest(req *loop.UpstreamRequest) ([]byte, error) {
	body := requestJSON{Model: req.Model, Stream: req.Stream}
	native := req.Native != nil && req.Native.Dialect == loop.DialectResponses
	if native {
		body.Extra = maps.Clone(req.Native.Fields)
	} else {
		body.Extra = translateOptions(req.Options, req.OptionsDialect)
	}
	// The loop decides whether this call streams.
	delete(body.Extra, "stream")
	if !req.Stream {
		delete(body.Extra, "stream_options")
	}
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].Role == loop.RoleSystem && len(msgs[0].Parts) == 0 {
		body.Instructions = msgs[0].Text
		msgs = msgs[1:]
	}
	body.Input = make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		items, err := EncodeMessage(m)
		if err != nil {
			return nil, err
		}
		body.Input = append(body.Input, items...)
	}
	for _, f := range req.Tools {
		b, err := encodeFunction(f)
		if err != nil {
			return nil, err
		}
		body.Tools = append(body.Tools, b)
	}
	if native {
		body.Tools = append(body.Tools, req.Native.Tools...)
	}
	if len(body.Tools) > 0 {
		body.ToolChoice = encodeToolChoice(req.ToolChoice)
	}
	return wire.Marshal(body, body.Extra)
}

// encodeFunction is a canonical function as a Responses function tool,
// keeping the strict flag of a caller's Chat Completions definition.
func encodeFunction(f loop.Function) (json.RawMessage, error) {
	t := functionTool{Type: "function", Name: f.Name, Description: f.Description, Parameters: f.Parameters, Strict: json.RawMessage("false")}
	if f.Dialect == loop.DialectOpenAI && len(f.Raw) > 0 {
		var chat struct {
			Function struct {
				Strict json.RawMessage `json:"strict"`
			} `json:"function"`
		}
		if json.Unmarshal(f.Raw, &chat) == nil && len(chat.Function.Strict) > 0 && string(chat.Function.Strict) != "null" {
			t.Strict = chat.Function.Strict
		}
	}
	return upstream.Marshal(t)
}

// toolChoiceFunction is the tool_choice that names a function.
type toolChoiceFunction struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// encodeToolChoice is the tool_choice of a request (nil for the default).
func encodeToolChoice(tc loop.ToolChoice) json.RawMessage {
	var v any
	switch tc.Mode {
	case loop.ToolChoiceDefault:
		return nil
	case loop.ToolChoiceFunction:
		v = toolChoiceFunction{Type: "function", Name: tc.Name}
	default:
		v = string(tc.Mode)
	}
	b, _ := upstream.Marshal(v) // a struct or a string: it always encodes
	return b
}

// reasoningOption is the reasoning member made of a Chat Completions
// reasoning_effort.
type reasoningOption struct {
	Effort json.RawMessage `json:"effort"`
}

// textOption is the text member made of a Chat Completions
// response_format.
type textOption struct {
	Format json.RawMessage `json:"format"`
}

// translateOptions carries the options of a Chat Completions or Messages
// request that the Responses API spells its own way; the rest has no
// Responses meaning and is left out.
func translateOptions(opts map[string]json.RawMessage, dialect loop.Dialect) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range []string{"parallel_tool_calls", "user", "service_tier", "prompt_cache_key", "safety_identifier", "metadata", "store"} {
		if v, ok := opts[k]; ok && dialect != loop.DialectAnthropic {
			out[k] = v
		}
	}
	for _, k := range []string{"temperature", "top_p"} {
		if v, ok := opts[k]; ok {
			out[k] = v
		}
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if v, ok := opts[k]; ok {
			out["max_output_tokens"] = v
		}
	}
	if v, ok := opts["reasoning_effort"]; ok && dialect != loop.DialectAnthropic {
		out["reasoning"], _ = upstream.Marshal(reasoningOption{Effort: v})
	}
	if v, ok := opts["response_format"]; ok && dialect != loop.DialectAnthropic {
		if f, ok := textFormat(v); ok {
			out["text"], _ = upstream.Marshal(textOption{Format: f})
		}
	}
	return out
}

// textFormat is a Chat Completions response_format as a Responses
// text.format: json_schema's members move up one level.
func textFormat(raw json.RawMessage) (json.RawMessage, bool) {
	var rf struct {
		Type       string                     `json:"type"`
		JSONSchema map[string]json.RawMessage `json:"json_schema"`
	}
	if json.Unmarshal(raw, &rf) != nil {
		return nil, false
	}
	switch rf.Type {
	case "text", "json_object":
		return raw, true
	case "json_schema":
		f := map[string]json.RawMessage{"type": json.RawMessage(`"json_schema"`)}
		for k, v := range rf.JSONSchema {
			f[k] = v
		}
		b, err := wire.Marshal(struct{}{}, f)
		return b, err == nil
	}
	return nil, false
}
