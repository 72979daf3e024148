package v1

import (
	"toolhost/loop"
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
}

func (s *messagesStream) send(event string, v map[string]any) error {
	v["type"] = event
	return s.write(event, v)
}

func (s *messagesStream) messageStart(meta loop.Meta) error {
	if s.msgStarted {
		return nil
	}
	s.msgStarted = true
	return s.send("message_start", map[string]any{"message": map[string]any{
		"id": messageID(meta.ID), "type": "message", "role": "assistant", "model": meta.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0},
	}})
}

func (s *messagesStream) openBlock(block map[string]any) (int, error) {
	i := s.next
	s.next++
	s.open = append(s.open, i)
	return i, s.send("content_block_start", map[string]any{"index": i, "content_block": block})
}

func (s *messagesStream) delta(i int, d map[string]any) error {
	return s.send("content_block_delta", map[string]any{"index": i, "delta": d})
}

func (s *messagesStream) closeAll() error {
	for _, i := range s.open {
		if err := s.send("content_block_stop", map[string]any{"index": i}); err != nil {
			return err
		}
	}
	s.open = nil
	s.textOpen, s.thinkOpen = -1, -1
	return nil
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
			i, err := s.openBlock(map[string]any{"type": "text", "text": ""})
			if err != nil {
				return err
			}
			s.textOpen = i
		}
		return s.delta(s.textOpen, map[string]any{"type": "text_delta", "text": ev.Text})
	case loop.EventDeltaExtra:
		if ev.Dialect != loop.DialectAnthropic {
			return nil
		}
		if v, ok := ev.Extra["thinking"]; ok {
			if s.thinkOpen < 0 {
				if err := s.closeAll(); err != nil {
					return err
				}
				i, err := s.openBlock(map[string]any{"type": "thinking", "thinking": "", "signature": ""})
				if err != nil {
					return err
				}
				s.thinkOpen = i
			}
			return s.delta(s.thinkOpen, map[string]any{"type": "thinking_delta", "thinking": v})
		}
		if v, ok := ev.Extra["signature"]; ok && s.thinkOpen >= 0 {
			return s.delta(s.thinkOpen, map[string]any{"type": "signature_delta", "signature": v})
		}
	case loop.EventCallerCallDelta:
		if ev.Name != "" {
			if s.textOpen >= 0 || s.thinkOpen >= 0 {
				if err := s.closeAll(); err != nil {
					return err
				}
			}
			i, err := s.openBlock(map[string]any{"type": "tool_use", "id": ev.CallID, "name": ev.Name, "input": map[string]any{}})
			if err != nil {
				return err
			}
			s.callers[ev.CallerIndex] = i
		}
		i, ok := s.callers[ev.CallerIndex]
		if !ok || ev.ArgsDelta == "" {
			return nil
		}
		return s.delta(i, map[string]any{"type": "input_json_delta", "partial_json": ev.ArgsDelta})
	case loop.EventHostedCallsProposed:
		if err := s.closeAll(); err != nil {
			return err
		}
		s.proposed = ev.Calls
		for _, c := range ev.Calls {
			i, err := s.openBlock(map[string]any{"type": "mcp_tool_use", "id": c.ID, "name": c.Name, "server_name": s.h.opts.Label, "input": map[string]any{}})
			if err != nil {
				return err
			}
			if len(c.Args) > 0 {
				if err := s.delta(i, map[string]any{"type": "input_json_delta", "partial_json": string(c.Args)}); err != nil {
					return err
				}
			}
			if err := s.closeAll(); err != nil {
				return err
			}
		}
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
		block := map[string]any{
			"type": "mcp_tool_result", "tool_use_id": c.ID, "is_error": c.IsError,
			"content": []map[string]string{{"type": "text", "text": c.Result}},
		}
		if err := s.send("content_block_start", map[string]any{"index": i, "content_block": block}); err != nil {
			return err
		}
		if err := s.send("content_block_stop", map[string]any{"index": i}); err != nil {
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
	if s.send("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": seq},
		"usage": messagesUsage(res, s.mr.declared),
	}) != nil {
		return
	}
	_ = s.send("message_stop", map[string]any{s.h.opts.Label: s.h.extension(&chatRequest{declared: s.mr.declared}, run, res)})
}
