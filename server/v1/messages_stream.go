package v1

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/anthropic"
)

// messagesStream renders loop events as one Messages event stream: a single
// message_start; content blocks numbered contiguously in sending order;
// each hosted round's mcp_tool_use blocks (start with input {}, one
// input_json_delta, stop) before its mcp_tool_result blocks (start with the
// full content, stop) in the same order; message_delta (summed usage with
// iterations) and message_stop (with the extension field) once, at the end.
type messagesStream struct {
	h *Handler
	sseWriter
	mr *messagesRequest

	msgStarted bool // message_start sent
	next       int  // next block index
	open       []int
	textOpen   int // index of the open text block, -1 when none
	thinkOpen  int // index of the open thinking block, -1 when none
	callers    map[int]int
	proposed   []loop.Call
	finished   map[string]loop.Call
	nextResult int
	// text is the open text block's text, and found the web search
	// results so far, which it cites when it closes.
	text  strings.Builder
	found []foundItem
	// upstream maps an Anthropic upstream's block index to the index of
	// the block it streams into, while that block is open.
	upstream map[int]int
}

// messagesEvent is one event of the stream; Extra holds the extension
// field (message_stop).
type messagesEvent struct {
	ContentBlock any                        `json:"content_block,omitempty"`
	Delta        any                        `json:"delta,omitempty"`
	Index        *int                       `json:"index,omitempty"`
	Message      *message                   `json:"message,omitempty"`
	Type         string                     `json:"type"`
	Usage        json.RawMessage            `json:"usage,omitempty"`
	Extra        map[string]json.RawMessage `json:"-"`
}

func (e messagesEvent) MarshalJSON() ([]byte, error) {
	type plain messagesEvent
	return wire.Marshal(plain(e), e.Extra)
}

// Deltas of content blocks.
type (
	textDelta struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	thinkingDelta struct {
		Thinking json.RawMessage `json:"thinking"`
		Type     string          `json:"type"`
	}
	signatureDelta struct {
		Signature json.RawMessage `json:"signature"`
		Type      string          `json:"type"`
	}
	inputJSONDelta struct {
		PartialJSON string `json:"partial_json"`
		Type        string `json:"type"`
	}
	stopDelta struct {
		StopReason   string          `json:"stop_reason"`
		StopSequence json.RawMessage `json:"stop_sequence"`
	}
)

func (s *messagesStream) begun() bool { return s.started }

func (s *messagesStream) send(event string, ev messagesEvent) error {
	ev.Type = event
	return s.write(event, ev)
}

func (s *messagesStream) fail(re *requestError) { _ = s.write("error", messagesErrorBody(re)) }

func (s *messagesStream) messageStart(meta loop.Meta) error {
	if s.msgStarted {
		return nil
	}
	s.msgStarted = true
	zero := json.RawMessage(`{"input_tokens":0,"output_tokens":0}`)
	null := json.RawMessage("null")
	return s.send("message_start", messagesEvent{Message: &message{
		ID: messageID(meta.ID), Type: "message", Role: "assistant", Model: meta.Model,
		Content: []json.RawMessage{}, StopSequence: null, Usage: zero,
	}})
}

func (s *messagesStream) openBlock(block any) (int, error) {
	i := s.next
	s.next++
	s.open = append(s.open, i)
	return i, s.send("content_block_start", messagesEvent{Index: &i, ContentBlock: block})
}

func (s *messagesStream) delta(i int, d any) error {
	return s.send("content_block_delta", messagesEvent{Index: &i, Delta: d})
}

func (s *messagesStream) stop(i int) error {
	return s.send("content_block_stop", messagesEvent{Index: &i})
}

func (s *messagesStream) closeAll() error {
	if err := s.cite(); err != nil {
		return err
	}
	for _, i := range s.open {
		if err := s.stop(i); err != nil {
			return err
		}
	}
	s.open = nil
	s.textOpen, s.thinkOpen = -1, -1
	clear(s.upstream)
	return nil
}

// closeBlock stops the open block i (a text block sends its citations
// first).
func (s *messagesStream) closeBlock(i int) error {
	at := slices.Index(s.open, i)
	if at < 0 {
		return nil
	}
	if i == s.textOpen {
		if err := s.cite(); err != nil {
			return err
		}
		s.textOpen = -1
	}
	if i == s.thinkOpen {
		s.thinkOpen = -1
	}
	s.open = slices.Delete(s.open, at, at+1)
	return s.stop(i)
}

// event is the loop's sink.
func (s *messagesStream) event(ev loop.Event) error {
	switch ev.Kind {
	case loop.EventRoundStart:
		s.callers = map[int]int{}
		s.proposed, s.finished, s.nextResult = nil, map[string]loop.Call{}, 0
		return s.closeAll()
	case loop.EventUpstreamMeta:
		return s.messageStart(loop.Meta{ID: ev.ID, Created: ev.Created, Model: ev.Model})
	case loop.EventTextDelta:
		if s.textOpen < 0 {
			if err := s.closeAll(); err != nil {
				return err
			}
			i, err := s.openBlock(textBlock{Type: "text"})
			if err != nil {
				return err
			}
			s.textOpen = i
			s.text.Reset()
		}
		s.text.WriteString(ev.Text)
		return s.delta(s.textOpen, textDelta{Type: "text_delta", Text: ev.Text})
	case loop.EventDeltaExtra:
		if ev.Dialect != loop.DialectAnthropic {
			return nil
		}
		if raw, ok := ev.Extra["event"]; ok {
			return s.upstreamEvent(raw)
		}
		return s.thinking(ev)
	case loop.EventCallerCallDelta:
		return s.callerCall(ev)
	case loop.EventHostedCallsProposed:
		return s.proposeCalls(ev.Calls)
	case loop.EventHostedCallFinished:
		s.finished[ev.Call.ID] = *ev.Call
		return s.flushResults()
	case loop.EventHostedCallsDone:
		for _, c := range ev.Calls {
			s.finished[c.ID] = c
		}
		return s.flushResults()
	case loop.EventRoundEnd:
		return s.closeAll()
	}
	return nil
}

// upstreamBlockEvent is a block event of an Anthropic upstream.
type upstreamBlockEvent struct {
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Index        int             `json:"index"`
	Type         string          `json:"type"`
}

// upstreamEvent follows an Anthropic upstream's blocks: a text or thinking
// block opens and stops where the upstream's does (its text and thinking
// come as their own events); any other block the loop does not read
// (server_tool_use, *_tool_result, ...) is sent as it came, deltas
// included, under this stream's index.
func (s *messagesStream) upstreamEvent(raw json.RawMessage) error {
	var ev upstreamBlockEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return err // the assembler read it already
	}
	i, open := s.upstream[ev.Index]
	switch ev.Type {
	case "content_block_start":
		if err := s.closeAll(); err != nil {
			return err
		}
		var block any = ev.ContentBlock
		switch anthropic.BlockType(ev.ContentBlock) {
		case "text":
			block = textBlock{Type: "text"}
		case "thinking":
			block = thinkingBlock{Type: "thinking"}
		}
		n, err := s.openBlock(block)
		if err != nil {
			return err
		}
		switch anthropic.BlockType(ev.ContentBlock) {
		case "text":
			s.textOpen = n
			s.text.Reset()
		case "thinking":
			s.thinkOpen = n
		}
		if s.upstream == nil {
			s.upstream = map[int]int{}
		}
		s.upstream[ev.Index] = n
	case "content_block_delta":
		if open {
			return s.delta(i, ev.Delta)
		}
	case "content_block_stop":
		if open {
			delete(s.upstream, ev.Index)
			return s.closeBlock(i)
		}
	}
	return nil
}

// thinking streams an Anthropic upstream's thinking and its signature.
func (s *messagesStream) thinking(ev loop.Event) error {
	if v, ok := ev.Extra["thinking"]; ok {
		if s.thinkOpen < 0 {
			if err := s.closeAll(); err != nil {
				return err
			}
			i, err := s.openBlock(thinkingBlock{Type: "thinking"})
			if err != nil {
				return err
			}
			s.thinkOpen = i
		}
		return s.delta(s.thinkOpen, thinkingDelta{Type: "thinking_delta", Thinking: v})
	}
	if v, ok := ev.Extra["signature"]; ok && s.thinkOpen >= 0 {
		return s.delta(s.thinkOpen, signatureDelta{Type: "signature_delta", Signature: v})
	}
	return nil
}

// callerCall streams a piece of a call to one of the caller's tools.
func (s *messagesStream) callerCall(ev loop.Event) error {
	if ev.Name != "" {
		if s.textOpen >= 0 || s.thinkOpen >= 0 {
			if err := s.closeAll(); err != nil {
				return err
			}
		}
		i, err := s.openBlock(toolUseBlock{Type: "tool_use", ID: ev.CallID, Name: ev.Name, Input: json.RawMessage(`{}`)})
		if err != nil {
			return err
		}
		s.callers[ev.CallerIndex] = i
	}
	i, ok := s.callers[ev.CallerIndex]
	if !ok || ev.ArgsDelta == "" {
		return nil
	}
	return s.delta(i, inputJSONDelta{Type: "input_json_delta", PartialJSON: ev.ArgsDelta})
}

// proposeCalls sends the round's hosted calls as mcp_tool_use blocks.
func (s *messagesStream) proposeCalls(calls []loop.Call) error {
	if err := s.closeAll(); err != nil {
		return err
	}
	s.proposed = calls
	for _, c := range calls {
		var block any = toolUseBlock{Type: "mcp_tool_use", ID: c.ID, Name: c.Name, ServerName: s.h.opts.Label, Input: json.RawMessage(`{}`)}
		if t, ok := s.mr.builtins.serves(c.Name); ok {
			block = serverToolUse(t, c, json.RawMessage(`{}`))
		}
		i, err := s.openBlock(block)
		if err != nil {
			return err
		}
		if len(c.Args) > 0 {
			if err := s.delta(i, inputJSONDelta{Type: "input_json_delta", PartialJSON: string(c.Args)}); err != nil {
				return err
			}
		}
		if err := s.closeAll(); err != nil {
			return err
		}
	}
	return nil
}

// flushResults sends the results finished so far, in the model's order.
func (s *messagesStream) flushResults() error {
	for s.nextResult < len(s.proposed) {
		c, ok := s.finished[s.proposed[s.nextResult].ID]
		if !ok {
			return nil
		}
		s.nextResult++
		i := s.next
		s.next++
		var block any = mcpToolResult(c)
		if t, ok := s.mr.builtins.serves(c.Name); ok {
			block = serverResult(t, c)
			s.found = append(s.found, s.mr.builtins.found([]loop.Call{c})...)
		}
		if err := s.send("content_block_start", messagesEvent{Index: &i, ContentBlock: block}); err != nil {
			return err
		}
		if err := s.stop(i); err != nil {
			return err
		}
	}
	return nil
}

// finish sends message_delta (stop reason, summed usage with iterations)
// and message_stop (with the extension field).
func (s *messagesStream) finish(run *loop.Run, res *loop.Result) {
	if s.closeAll() != nil || s.messageStart(res.First) != nil {
		return
	}
	stop, seq := messagesStop(res)
	if s.send("message_delta", messagesEvent{
		Delta: stopDelta{StopReason: stop, StopSequence: seq},
		Usage: messagesUsage(res, s.mr.declared),
	}) != nil {
		return
	}
	_ = s.send("message_stop", messagesEvent{Extra: s.h.labelled(nil, s.h.extension(s.mr.declared, run, res))})
}

// citationsDelta is a citation added to the open text block.
type citationsDelta struct {
	Citation webSearchCitation `json:"citation"`
	Type     string            `json:"type"`
}

// cite sends, before the open text block closes, a citations_delta for
// each link of its text to a web search result found so far.
func (s *messagesStream) cite() error {
	if s.textOpen < 0 || len(s.found) == 0 {
		return nil
	}
	b, _ := marshal(textBlock{Type: "text", Text: s.text.String()})
	var cited citedTextBlock
	_ = json.Unmarshal(citeBlocks([]json.RawMessage{b}, s.found)[0], &cited)
	for _, c := range cited.Citations {
		if err := s.delta(s.textOpen, citationsDelta{Type: "citations_delta", Citation: c}); err != nil {
			return err
		}
	}
	return nil
}
