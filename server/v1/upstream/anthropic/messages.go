package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream"
)

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
		b, err := upstream.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}, err
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content must be a string or a list of blocks: %w", err)
	}
	return blocks, nil
}

// Wire blocks the client writes itself. Fields are in alphabetical order:
// the bytes are what encoding a map gave before, which golden request
// bodies pin.
type (
	textBlock struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	toolUseBlock struct {
		ID    string          `json:"id"`
		Input json.RawMessage `json:"input"`
		Name  string          `json:"name"`
		Type  string          `json:"type"`
	}
	toolResultBlock struct {
		Content   string `json:"content"`
		IsError   bool   `json:"is_error,omitempty"`
		ToolUseID string `json:"tool_use_id"`
		Type      string `json:"type"`
	}
	wireMessage struct {
		Content []json.RawMessage `json:"content"`
		Role    string            `json:"role"`
	}
)

// encodeMessages renders the canonical conversation as Messages: the
// top-level system value and the alternating user and assistant turns.
func encodeMessages(msgs []loop.Message) (any, []json.RawMessage, error) {
	var sysTexts []string
	var sysRaw json.RawMessage
	sysCount := 0
	var turns []*anthropicTurn
	add := func(role string, raw json.RawMessage, blocks ...json.RawMessage) {
		turns = append(turns, &anthropicTurn{role: role, raw: raw, blocks: blocks})
	}
	for _, m := range msgs {
		native := m.Dialect == loop.DialectAnthropic && len(m.Raw) > 0
		switch m.Role {
		case loop.RoleSystem, loop.RoleDeveloper:
			sysCount++
			if native {
				sysRaw = m.Raw
			}
			if m.Text != "" {
				sysTexts = append(sysTexts, m.Text)
			}
		case loop.RoleTool:
			if native {
				add("user", nil, m.Raw)
				continue
			}
			b, err := upstream.Marshal(toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Text, IsError: m.IsError})
			if err != nil {
				return nil, nil, err
			}
			add("user", nil, b)
		case loop.RoleAssistant:
			if native {
				add("assistant", m.Raw)
				continue
			}
			blocks, err := assistantBlocks(m)
			if err != nil {
				return nil, nil, err
			}
			if len(blocks) > 0 {
				add("assistant", nil, blocks...)
			}
		default: // user
			if native {
				add("user", m.Raw)
				continue
			}
			blocks, err := userBlocksFromCanonical(m)
			if err != nil {
				return nil, nil, err
			}
			if len(blocks) > 0 {
				add("user", nil, blocks...)
			}
		}
	}
	out, err := mergeTurns(turns)
	if err != nil {
		return nil, nil, err
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

// assistantBlocks renders an assistant message of another dialect: a text
// block and its tool_use blocks.
func assistantBlocks(m loop.Message) ([]json.RawMessage, error) {
	var blocks []json.RawMessage
	if m.Text != "" {
		b, err := upstream.Marshal(textBlock{Type: "text", Text: m.Text})
		if err != nil {
			return nil, err
		}
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
		b, err := upstream.Marshal(toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// mergeTurns merges consecutive turns of one role (the API wants
// alternation), tool_result blocks first in a user turn.
func mergeTurns(turns []*anthropicTurn) ([]json.RawMessage, error) {
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
				return nil, fmt.Errorf("message: %w", err)
			}
			blocks = append(blocks, bl...)
		}
		if turns[i].role == "user" {
			sort.SliceStable(blocks, func(a, b int) bool {
				return BlockType(blocks[a]) == "tool_result" && BlockType(blocks[b]) != "tool_result"
			})
		}
		b, err := upstream.Marshal(wireMessage{Role: turns[i].role, Content: blocks})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		i = j
	}
	return out, nil
}

// BlockType is the "type" of a content block ("" when it has none or is
// not an object).
func BlockType(b json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &h)
	return h.Type
}

// userBlocksFromCanonical renders a user message of another dialect: text
// parts and images (OpenAI image_url, as a URL or base64 source).
func userBlocksFromCanonical(m loop.Message) ([]json.RawMessage, error) {
	if len(m.Parts) == 0 {
		if m.Text == "" {
			return nil, nil
		}
		b, err := upstream.Marshal(map[string]string{"type": "text", "text": m.Text})
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
			block = imageBlock{Type: "image", Source: imageSource(w.ImageURL.URL)}
		default:
			continue
		}
		b, err := upstream.Marshal(block)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Shapes this package writes into a conversation.
type (
	imageBlock struct {
		Source map[string]string `json:"source"`
		Type   string            `json:"type"`
	}
	turnJSON struct {
		Content []json.RawMessage `json:"content"`
		Role    string            `json:"role"`
	}
)

func imageSource(u string) map[string]string {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if mt, data, ok := strings.Cut(rest, ";base64,"); ok {
			return map[string]string{"type": "base64", "media_type": mt, "data": data}
		}
	}
	return map[string]string{"type": "url", "url": u}
}

// systemMessage reads a {"role":"system"} message among the messages (Claude
// Code sends its environment so): its text, with no Raw, so that every
// upstream gives it as system text (an Anthropic upstream in the top-level
// system, after the request's own).
func systemMessage(content json.RawMessage) ([]loop.Message, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []loop.Message{{Role: loop.RoleSystem, Text: s}}, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("system message content must be a string or a list of text blocks: %w", err)
	}
	texts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		if b.Type != "text" {
			return nil, fmt.Errorf("system message content[%d]: only text blocks, not %q", i, b.Type)
		}
		texts = append(texts, b.Text)
	}
	return []loop.Message{{Role: loop.RoleSystem, Text: strings.Join(texts, "\n\n")}}, nil
}

// DecodeMessage reads one Messages message into canonical form. A
// user message holding tool_result blocks becomes one loop.RoleTool message per
// result (Raw = the block) followed, when other blocks remain, by a user
// message with those blocks. Wire formats use it for caller messages.
func DecodeMessage(raw json.RawMessage) ([]loop.Message, error) {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	if w.Role == "system" {
		return systemMessage(w.Content)
	}
	if w.Role != "user" && w.Role != "assistant" {
		return nil, fmt.Errorf("message role must be user, assistant or system, not %q", w.Role)
	}
	c := bytes.TrimSpace(w.Content)
	if len(c) > 0 && c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fmt.Errorf("message content: %w", err)
		}
		return []loop.Message{{Role: loop.Role(w.Role), Text: s, Dialect: loop.DialectAnthropic, Raw: raw}}, nil
	}
	blocks, err := contentBlocks(c)
	if err != nil {
		return nil, fmt.Errorf("message content: %w", err)
	}
	m := loop.Message{Role: loop.Role(w.Role), Dialect: loop.DialectAnthropic, Raw: raw}
	var results []loop.Message
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
			results = append(results, loop.Message{Role: loop.RoleTool, ToolCallID: h.ToolUseID, Text: text, IsError: h.IsError, Dialect: loop.DialectAnthropic, Raw: b})
			continue
		case h.Type == "tool_use" && w.Role == "assistant":
			args := h.Input
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			m.ToolCalls = append(m.ToolCalls, loop.ToolCall{ID: h.ID, Name: h.Name, Args: args})
		case h.Type == "text":
			sb.WriteString(h.Text)
		}
		rest = append(rest, b)
		m.Parts = append(m.Parts, loop.Part{Type: h.Type, Text: h.Text, Raw: b})
	}
	m.Text = sb.String()
	if len(results) == 0 {
		return []loop.Message{m}, nil
	}
	if len(rest) == 0 {
		return results, nil
	}
	m.Raw, err = upstream.Marshal(turnJSON{Role: w.Role, Content: rest})
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
