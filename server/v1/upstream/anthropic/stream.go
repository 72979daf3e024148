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
//
// Blocks the loop does not read (server_tool_use, the server tools'
// *_tool_result blocks, redacted_thinking, types yet unknown) and the
// boundaries of text and thinking blocks reach a Messages renderer as the
// upstream's own events: a delta whose Extra is {"event": EVENT} in the
// Anthropic dialect (content_block_start, content_block_delta of such a
// block or a text's citations_delta, content_block_stop). tool_use blocks
// are canonical tool deltas instead, which the loop holds back when they
// are hosted calls.
type anthropicAssembler struct {
	route   string
	started bool
	meta    loop.Meta
	extra   map[string]json.RawMessage
	usage   loop.UsageDetail
	blocks  map[int]*anthropicBlock
	tools   int // tool_use blocks seen, the canonical tool index
	stopped bool
	// size is the bytes of text and input gathered so far, bounded like
	// a whole answer (upstream.MaxBodyBytes; maxSize in tests).
	size, maxSize int
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
	stopped bool
}

func newAssembler(route string) *anthropicAssembler {
	return &anthropicAssembler{route: route, extra: map[string]json.RawMessage{}, blocks: map[int]*anthropicBlock{}, maxSize: upstream.MaxBodyBytes}
}

// passed says a block is not one the loop reads: it goes to a Messages
// caller as the upstream streamed it.
func passed(typ string) bool { return typ != "text" && typ != "thinking" && typ != "tool_use" }

// eventDelta carries an upstream event to a Messages renderer.
func eventDelta(data []byte) loop.Delta {
	return loop.Delta{Extra: map[string]json.RawMessage{"event": append(json.RawMessage(nil), data...)}, Dialect: loop.DialectAnthropic}
}

// grow counts n more gathered bytes, failing past the bound.
func (a *anthropicAssembler) grow(n int) error {
	a.size += n
	if a.size > a.maxSize {
		return fmt.Errorf("%w: the streamed blocks pass %d bytes", upstream.ErrTooLarge, a.maxSize)
	}
	return nil
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
		return a.blockStart(ev, data)
	case "content_block_delta":
		return a.blockDelta(ev, data)
	case "content_block_stop":
		return a.blockStop(ev, data)
	case "message_delta":
		return nil, a.messageDelta(ev)
	case "message_stop":
		a.stopped = true
		return nil, nil
	case "error":
		return nil, &loop.UpstreamError{Route: a.route, Status: http.StatusBadGateway, Body: data, Dialect: loop.DialectAnthropic}
	}
	// ping and future events.
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

func (a *anthropicAssembler) blockStart(ev anthropicEvent, data []byte) ([]loop.Delta, error) {
	if _, dup := a.blocks[ev.Index]; dup {
		return nil, fmt.Errorf("content_block_start for block %d, which has started already", ev.Index)
	}
	if len(ev.ContentBlock) == 0 || string(ev.ContentBlock) == "null" {
		return nil, fmt.Errorf("content_block_start %d without a content_block", ev.Index)
	}
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
	case "text", "thinking":
		var s string
		if err := field(start, b.typ, &s); err != nil {
			return nil, fmt.Errorf("content_block_start: %w", err)
		}
		b.text.WriteString(s)
		out := []loop.Delta{eventDelta(data)}
		switch {
		case s == "":
		case b.typ == "text":
			out = append(out, loop.Delta{Text: s})
		default:
			out = append(out, loop.Delta{Extra: map[string]json.RawMessage{"thinking": jsonString(s)}, Dialect: loop.DialectAnthropic})
		}
		return out, a.grow(len(s))
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
	return []loop.Delta{eventDelta(data)}, a.grow(len(ev.ContentBlock))
}

// blockStop ends a block; a stop for a block that never started, or
// twice, is a broken stream.
func (a *anthropicAssembler) blockStop(ev anthropicEvent, data []byte) ([]loop.Delta, error) {
	b, ok := a.blocks[ev.Index]
	if !ok {
		return nil, fmt.Errorf("content_block_stop for block %d, which never started", ev.Index)
	}
	if b.stopped {
		return nil, fmt.Errorf("content_block_stop for block %d, which has stopped already", ev.Index)
	}
	b.stopped = true
	if b.typ == "tool_use" {
		return nil, nil
	}
	return []loop.Delta{eventDelta(data)}, nil
}

func (a *anthropicAssembler) blockDelta(ev anthropicEvent, data []byte) ([]loop.Delta, error) {
	b, ok := a.blocks[ev.Index]
	if !ok {
		return nil, fmt.Errorf("content_block_delta for unknown block %d", ev.Index)
	}
	if b.stopped {
		return nil, fmt.Errorf("content_block_delta for block %d, which has stopped", ev.Index)
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
	if err := a.grow(len(d.Text) + len(d.PartialJSON) + len(d.Thinking) + len(d.Signature) + len(d.Citation)); err != nil {
		return nil, err
	}
	if passed(b.typ) {
		if d.Type == "input_json_delta" {
			b.json.WriteString(d.PartialJSON)
		}
		return []loop.Delta{eventDelta(data)}, nil
	}
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
		if b.typ == "text" {
			return []loop.Delta{eventDelta(data)}, nil
		}
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
		default:
			// A block passed through: its streamed input, when it
			// had one (server_tool_use), else the block as started.
			if in := strings.TrimSpace(b.json.String()); in != "" {
				if !json.Valid([]byte(in)) {
					return nil, fmt.Errorf("%s %d: input is not JSON", b.typ, i)
				}
				blk["input"] = json.RawMessage(in)
			}
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
