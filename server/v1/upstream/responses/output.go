package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// responseJSON is the members of a Responses response object the client
// reads; the others are kept as the response's Extra.
type responseJSON struct {
	CreatedAt         int64             `json:"created_at"`
	Error             json.RawMessage   `json:"error"`
	ID                string            `json:"id"`
	IncompleteDetails *incompleteJSON   `json:"incomplete_details"`
	Model             string            `json:"model"`
	Output            []json.RawMessage `json:"output"`
	Status            string            `json:"status"`
	Usage             json.RawMessage   `json:"usage"`
}

type incompleteJSON struct {
	Reason string `json:"reason"`
}

// readMembers are the response members responseJSON reads (and object).
var readMembers = map[string]bool{"created_at": true, "error": true, "id": true, "incomplete_details": true,
	"model": true, "object": true, "output": true, "status": true, "usage": true}

// itemHead is what the client reads of an output item.
type itemHead struct {
	Type      string `json:"type"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Input     string `json:"input"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// errorBody is an error as the other OpenAI formats answer it, so server/v1
// reads its message the same way.
type errorBody struct {
	Error json.RawMessage `json:"error"`
}

// DecodeResponse reads a whole Responses answer.
func DecodeResponse(b []byte) (*loop.UpstreamResponse, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w", err)
	}
	var r responseJSON
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	extra := map[string]json.RawMessage{}
	for k, v := range top {
		if !readMembers[k] {
			extra[k] = v
		}
	}
	return assemble(&r, extra, b)
}

// assemble turns a finished response object into the canonical answer; a
// failed one is an *loop.UpstreamError (502) carrying its error.
func assemble(r *responseJSON, extra map[string]json.RawMessage, raw []byte) (*loop.UpstreamResponse, error) {
	switch r.Status {
	case "failed", "cancelled":
		e := r.Error
		if len(e) == 0 || string(e) == "null" {
			e = json.RawMessage(`{"message":"the response ended with status ` + r.Status + `"}`)
		}
		body, _ := upstream.Marshal(errorBody{Error: e})
		return nil, &loop.UpstreamError{Status: http.StatusBadGateway, Body: body, Dialect: loop.DialectResponses}
	}
	if r.ID == "" && r.Output == nil {
		return nil, fmt.Errorf("response has neither id nor output: %.200s", raw)
	}
	msg, err := decodeOutput(r.Output)
	if err != nil {
		return nil, err
	}
	out := &loop.UpstreamResponse{
		Meta:    loop.Meta{ID: r.ID, Created: r.CreatedAt, Model: r.Model},
		Message: msg,
		Dialect: loop.DialectResponses,
		Extra:   extra,
	}
	out.FinishReason = finishReason(r, len(msg.ToolCalls) > 0)
	if out.Usage, err = decodeUsage(r.Usage); err != nil {
		return nil, fmt.Errorf("response usage: %w", err)
	}
	return out, nil
}

// finishReason is the canonical finish reason of a response.
func finishReason(r *responseJSON, calls bool) string {
	if r.Status == "incomplete" {
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
			return "content_filter"
		}
		return loop.FinishLength
	}
	if calls {
		return loop.FinishToolCalls
	}
	return loop.FinishStop
}

// decodeOutput reads output items into the canonical assistant message:
// message text, function calls (custom tool calls as calls of the function
// of that name with {"input": INPUT}), and every other item kept as a
// native item. Raw is the whole output, verbatim.
func decodeOutput(items []json.RawMessage) (loop.Message, error) {
	m := loop.Message{Role: loop.RoleAssistant, Dialect: loop.DialectResponses}
	var text strings.Builder
	for i, it := range items {
		var h itemHead
		if err := json.Unmarshal(it, &h); err != nil {
			return loop.Message{}, fmt.Errorf("output[%d]: %w", i, err)
		}
		switch h.Type {
		case "message":
			for _, c := range h.Content {
				text.WriteString(c.Text)
				text.WriteString(c.Refusal)
			}
		case "function_call", "custom_tool_call":
			if h.CallID == "" || h.Name == "" {
				return loop.Message{}, fmt.Errorf("output[%d]: a %s without call_id or name", i, h.Type)
			}
			args := json.RawMessage(h.Arguments)
			if h.Type == "custom_tool_call" {
				args, _ = upstream.Marshal(customInput{Input: h.Input}) // a string always encodes
			}
			m.ToolCalls = append(m.ToolCalls, loop.ToolCall{ID: h.CallID, Name: h.Name, Args: args})
		case "":
			return loop.Message{}, fmt.Errorf("output[%d]: an item without a type", i)
		default:
			m.NativeItems = append(m.NativeItems, it)
		}
	}
	m.Text = text.String()
	if items == nil {
		items = []json.RawMessage{}
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return loop.Message{}, err
	}
	m.Raw = raw
	return m, nil
}

// customInput is the arguments of the function a custom tool is.
type customInput struct {
	Input string `json:"input"`
}

// decodeUsage reads Responses usage (input_tokens, output_tokens,
// input_tokens_details.cached_tokens, output_tokens_details).
func decodeUsage(raw json.RawMessage) (loop.Usage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return loop.Usage{}, nil
	}
	d, err := loop.DecodeUsageDetail(raw)
	if err != nil {
		return loop.Usage{}, err
	}
	if d == nil {
		return loop.Usage{}, errors.New("usage is not an object")
	}
	u := loop.Usage{Dialect: loop.DialectResponses, Detail: d, Present: true,
		InputTokens:  d.Number("input_tokens"),
		OutputTokens: d.Number("output_tokens"),
	}
	u.CachedInputTokens = d.Object("input_tokens_details").Number("cached_tokens")
	return u, nil
}
