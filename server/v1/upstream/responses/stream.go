package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// StreamAssembler builds the complete response from the events of a
// Responses stream (response.created, response.output_item.added/done,
// response.output_text.delta, response.function_call_arguments.delta,
// response.completed/incomplete/failed, error). Text and function call
// arguments flow as deltas; each finished item with no canonical form
// (reasoning, a built-in tool's call) flows whole as an Extra delta
// {"item": ITEM} of loop.DialectResponses, for a renderer of the same
// dialect, and each finished message item as {"message": ITEM} (its
// annotations).
type StreamAssembler struct {
	started bool
	meta    loop.Meta
	// items are the finished output items by output_index.
	items map[int]json.RawMessage
	// custom are the custom tool calls begun, by output_index: their input
	// flows whole when the item is done.
	custom map[int]bool
	// final is the terminal response object (completed or incomplete).
	final *responseJSON
	extra map[string]json.RawMessage
}

// NewStreamAssembler returns an empty assembler.
func NewStreamAssembler() *StreamAssembler {
	return &StreamAssembler{items: map[int]json.RawMessage{}, custom: map[int]bool{}}
}

// eventJSON is one stream event; which members are set depends on Type.
type eventJSON struct {
	Type        string          `json:"type"`
	Response    json.RawMessage `json:"response"`
	OutputIndex int             `json:"output_index"`
	Item        json.RawMessage `json:"item"`
	Delta       string          `json:"delta"`
}

// Add implements upstream.Decoder.
func (a *StreamAssembler) Add(data []byte) ([]loop.Delta, error) {
	var ev eventJSON
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("event is not JSON: %w", err)
	}
	if ev.Type == "error" {
		body, _ := upstream.Marshal(errorBody{Error: data})
		return nil, &loop.UpstreamError{Status: http.StatusBadGateway, Body: body, Dialect: loop.DialectResponses}
	}
	var out []loop.Delta
	if !a.started {
		// response.created comes first; a stream that skips it still
		// names the response in its terminal event.
		a.started = true
		var r responseJSON
		if len(ev.Response) > 0 {
			if err := json.Unmarshal(ev.Response, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", ev.Type, err)
			}
		}
		a.meta = loop.Meta{ID: r.ID, Created: r.CreatedAt, Model: r.Model}
		m := a.meta
		out = append(out, loop.Delta{Meta: &m})
	}
	if ev.OutputIndex < 0 {
		return nil, fmt.Errorf("%s: output_index %d", ev.Type, ev.OutputIndex)
	}
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		if ev.Delta != "" {
			out = append(out, loop.Delta{Text: ev.Delta})
		}
	case "response.function_call_arguments.delta":
		if ev.Delta != "" {
			out = append(out, loop.Delta{Tool: &loop.ToolDelta{Index: ev.OutputIndex, Args: ev.Delta}})
		}
	case "response.output_item.added":
		d, err := a.added(ev)
		if err != nil || d == nil {
			return out, err
		}
		out = append(out, *d)
	case "response.output_item.done":
		d, err := a.done(ev)
		if err != nil || d == nil {
			return out, err
		}
		out = append(out, *d)
	case "response.completed", "response.incomplete", "response.failed", "response.cancelled":
		if err := a.terminal(ev); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// added starts a function call (its id and name flow) or notes a custom
// tool call.
func (a *StreamAssembler) added(ev eventJSON) (*loop.Delta, error) {
	var h itemHead
	if err := json.Unmarshal(ev.Item, &h); err != nil {
		return nil, fmt.Errorf("response.output_item.added: %w", err)
	}
	switch h.Type {
	case "function_call":
		return &loop.Delta{Tool: &loop.ToolDelta{Index: ev.OutputIndex, ID: h.CallID, Name: h.Name, Args: h.Arguments}}, nil
	case "custom_tool_call":
		a.custom[ev.OutputIndex] = true
	}
	return nil, nil
}

// done keeps a finished item; a custom tool call flows whole, an item with
// no canonical form flows as an Extra delta.
func (a *StreamAssembler) done(ev eventJSON) (*loop.Delta, error) {
	var h itemHead
	if err := json.Unmarshal(ev.Item, &h); err != nil {
		return nil, fmt.Errorf("response.output_item.done: %w", err)
	}
	a.items[ev.OutputIndex] = ev.Item
	switch h.Type {
	case "message":
		// Its text flowed; the whole item carries the annotations.
		return &loop.Delta{Extra: map[string]json.RawMessage{"message": ev.Item}, Dialect: loop.DialectResponses}, nil
	case "function_call":
		return nil, nil
	case "custom_tool_call":
		args, _ := upstream.Marshal(customInput{Input: h.Input}) // a string always encodes
		return &loop.Delta{Tool: &loop.ToolDelta{Index: ev.OutputIndex, ID: h.CallID, Name: h.Name, Args: string(args)}}, nil
	}
	return &loop.Delta{Extra: map[string]json.RawMessage{"item": ev.Item}, Dialect: loop.DialectResponses}, nil
}

// terminal keeps the final response object; a failed one is an error.
func (a *StreamAssembler) terminal(ev eventJSON) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(ev.Response, &top); err != nil {
		return fmt.Errorf("%s: %w", ev.Type, err)
	}
	var r responseJSON
	if err := json.Unmarshal(ev.Response, &r); err != nil {
		return fmt.Errorf("%s: %w", ev.Type, err)
	}
	if r.Status == "" {
		r.Status = map[string]string{"response.completed": "completed", "response.incomplete": "incomplete",
			"response.failed": "failed", "response.cancelled": "cancelled"}[ev.Type]
	}
	if r.Status == "failed" || r.Status == "cancelled" {
		_, err := assemble(&r, nil, ev.Response)
		return err
	}
	a.final = &r
	a.extra = map[string]json.RawMessage{}
	for k, v := range top {
		if !readMembers[k] {
			a.extra[k] = v
		}
	}
	return nil
}

// Finish implements upstream.Decoder: the terminal response, its output
// taken from the finished items when it lists none.
func (a *StreamAssembler) Finish() (*loop.UpstreamResponse, error) {
	if !a.started {
		return nil, errors.New("stream ended without an event")
	}
	if a.final == nil {
		return nil, errors.New("stream ended without response.completed")
	}
	r := *a.final
	if len(r.Output) == 0 && len(a.items) > 0 {
		for _, i := range slices.Sorted(maps.Keys(a.items)) {
			r.Output = append(r.Output, a.items[i])
		}
	}
	if r.ID == "" {
		r.ID, r.CreatedAt, r.Model = a.meta.ID, a.meta.Created, a.meta.Model
	}
	return assemble(&r, a.extra, nil)
}
