package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

// anthropicAssembler builds the complete response from Messages stream
// events and turns them into canonical deltas.
type anthropicAssembler struct {
	route   string
	started bool
	meta    loop.Meta
	extra   map[string]json.RawMessage
	usage   loop.UsageDetail
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

func newAssembler(route string) *anthropicAssembler {
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

// Add implements upstream.Decoder.
func (a *anthropicAssembler) Add(data []byte) ([]loop.Delta, error) {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("event is not JSON: %w", err)
	}
	switch ev.Type {
	case "message_start":
		return a.messageStart(ev)
	case "content_block_start":
		return a.blockStart(ev)
	case "content_block_delta":
		return a.blockDelta(ev)
	case "message_delta":
		return nil, a.messageDelta(ev)
	case "message_stop":
		a.stopped = true
		return nil, nil
	case "error":
		return nil, &loop.UpstreamError{Route: a.route, Status: http.StatusBadGateway, Body: data, Dialect: loop.DialectAnthropic}
	}
	// ping, content_block_stop and future events.
	return nil, nil
}

func (a *anthropicAssembler) messageStart(ev anthropicEvent) ([]loop.Delta, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(ev.Message, &top); err != nil {
		return nil, fmt.Errorf("message_start: %w", err)
	}
	a.started = true
	a.meta.Created = time.Now().Unix()
	if err := field(top, "id", &a.meta.ID); err != nil {
		return nil, fmt.Errorf("message_start: %w", err)
	}
	if err := field(top, "model", &a.meta.Model); err != nil {
		return nil, fmt.Errorf("message_start: %w", err)
	}
	for k, v := range top {
		switch k {
		case "id", "model", "type", "role", "content", "usage", "stop_reason", "stop_sequence":
		default:
			a.extra[k] = v
		}
	}
	u, err := loop.DecodeUsageDetail(top["usage"])
	if err != nil {
		return nil, fmt.Errorf("message_start: usage: %w", err)
	}
	if u != nil {
		a.usage = u
	}
	m := a.meta
	return []loop.Delta{{Meta: &m}}, nil
}

func (a *anthropicAssembler) blockStart(ev anthropicEvent) ([]loop.Delta, error) {
	var start map[string]json.RawMessage
	if err := json.Unmarshal(ev.ContentBlock, &start); err != nil {
		return nil, fmt.Errorf("content_block_start: %w", err)
	}
	b := &anthropicBlock{start: start}
	if err := field(start, "type", &b.typ); err != nil {
		return nil, fmt.Errorf("content_block_start: %w", err)
	}
	a.blocks[ev.Index] = b
	switch b.typ {
	case "text":
		var s string
		if err := field(start, "text", &s); err != nil {
			return nil, fmt.Errorf("content_block_start: %w", err)
		}
		b.text.WriteString(s)
		if s != "" {
			return []loop.Delta{{Text: s}}, nil
		}
	case "thinking":
		var s string
		if err := field(start, "thinking", &s); err != nil {
			return nil, fmt.Errorf("content_block_start: %w", err)
		}
		b.text.WriteString(s)
	case "tool_use":
		b.tool = a.tools
		a.tools++
		var h struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(ev.ContentBlock, &h); err != nil {
			return nil, fmt.Errorf("content_block_start: tool_use: %w", err)
		}
		return []loop.Delta{{Tool: &loop.ToolDelta{Index: b.tool, ID: h.ID, Name: h.Name}}}, nil
	}
	return nil, nil
}

func (a *anthropicAssembler) blockDelta(ev anthropicEvent) ([]loop.Delta, error) {
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
			return []loop.Delta{{Text: d.Text}}, nil
		}
	case "input_json_delta":
		b.json.WriteString(d.PartialJSON)
		if d.PartialJSON != "" {
			return []loop.Delta{{Tool: &loop.ToolDelta{Index: b.tool, Args: d.PartialJSON}}}, nil
		}
	case "thinking_delta":
		b.text.WriteString(d.Thinking)
		return []loop.Delta{{Extra: map[string]json.RawMessage{"thinking": jsonString(d.Thinking)}, Dialect: loop.DialectAnthropic}}, nil
	case "signature_delta":
		b.sig.WriteString(d.Signature)
		return []loop.Delta{{Extra: map[string]json.RawMessage{"signature": jsonString(d.Signature)}, Dialect: loop.DialectAnthropic}}, nil
	case "citations_delta":
		b.cites = append(b.cites, d.Citation)
	}
	return nil, nil
}

// messageDelta keeps the stop reason and the usage; its usage counts are
// cumulative: they replace.
func (a *anthropicAssembler) messageDelta(ev anthropicEvent) error {
	var d map[string]json.RawMessage
	if len(ev.Delta) > 0 {
		if err := json.Unmarshal(ev.Delta, &d); err != nil {
			return fmt.Errorf("message_delta: %w", err)
		}
	}
	for k, v := range d {
		a.extra[k] = v
	}
	u, err := loop.DecodeUsageDetail(ev.Usage)
	if err != nil {
		return fmt.Errorf("message_delta: usage: %w", err)
	}
	if u != nil {
		if a.usage == nil {
			a.usage = loop.UsageDetail{}
		}
		for k, v := range u {
			if v != nil {
				a.usage[k] = v
			}
		}
	}
	return nil
}

// field decodes m[key] into v when it is present and not null.
func field(m map[string]json.RawMessage, key string, v any) error {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("field %s: %w", key, err)
	}
	return nil
}

func jsonString(s string) json.RawMessage {
	b, _ := upstream.Marshal(s)
	return b
}

// assembledMessage is the message a stream adds up to; the other fields of
// message_start and message_delta come as extra members (shadowing).
type assembledMessage struct {
	Content []json.RawMessage `json:"content"`
	ID      string            `json:"id"`
	Model   string            `json:"model"`
	Role    string            `json:"role"`
	Type    string            `json:"type"`
	Usage   json.RawMessage   `json:"usage,omitempty"`
}

// encode writes the message with the streamed fields. A field a
// message_delta repeats (id, type, ...) replaces ours as the upstream's
// last word; usage is the sum when there is one.
func (a *anthropicAssembler) encode(body assembledMessage) ([]byte, error) {
	shadowed := false
	for _, k := range wire.Names(body) {
		if _, ok := a.extra[k]; ok && k != "usage" {
			shadowed = true
		}
	}
	if !shadowed {
		return wire.Marshal(body, a.extra)
	}
	own, err := wire.Marshal(body, nil)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(own, &members); err != nil {
		return nil, err
	}
	for k, v := range a.extra {
		if k != "usage" || body.Usage == nil {
			members[k] = v
		}
	}
	return upstream.Marshal(members)
}

// Finish implements upstream.Decoder.
func (a *anthropicAssembler) Finish() (*loop.UpstreamResponse, error) {
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
				blk["citations"], _ = upstream.Marshal(b.cites)
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
		raw, err := upstream.Marshal(blk)
		if err != nil {
			return nil, err
		}
		content = append(content, raw)
	}
	body := assembledMessage{ID: a.meta.ID, Type: "message", Role: "assistant", Model: a.meta.Model, Content: content}
	if a.usage != nil {
		u, err := upstream.Marshal(a.usage)
		if err != nil {
			return nil, err
		}
		body.Usage = u
	}
	raw, err := a.encode(body)
	if err != nil {
		return nil, err
	}
	out, err := decodeResponse(raw)
	if err != nil {
		return nil, err
	}
	out.Created = a.meta.Created
	return out, nil
}
