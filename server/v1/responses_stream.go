package v1

import (
	"strings"

	"toolhost/clip"
	"toolhost/loop"
)

// responsesStream renders loop events as Responses SSE events.
//
// The whole loop is one response: response.created and
// response.in_progress once, then the mcp_list_tools item, then each
// round's message item (text deltas as they come) and its hosted calls as
// mcp_call items, and only at the end the terminal event, whose response
// holds every item sent. output_index numbers items in sending order;
// sequence_number increases over the whole stream.
type responsesStream struct {
	h *Handler
	sseWriter
	rq        *responsesRequest
	listTools map[string]any

	seq  int
	meta loop.Meta
	base string // stem of item ids (the first upstream id)
	// items are the finished output items in sending order.
	items []any

	// The open message item of the round (msgIndex -1 when none).
	msgIndex int
	msgID    string
	msgText  strings.Builder
	// Caller function calls of the round being streamed, by caller index.
	fcalls []*streamedCall
	// mcp_call output indexes of the round, by call id.
	mcpIndex map[string]int
}

type streamedCall struct {
	index  int
	itemID string
	callID string
	name   string
	args   strings.Builder
}

// send writes one event; fields are the event's own (type and
// sequence_number are added).
func (s *responsesStream) send(typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	return s.write(typ, fields)
}

// add records an item at its output_index (its final form comes with done).
func (s *responsesStream) add(item any) int {
	s.items = append(s.items, item)
	return len(s.items) - 1
}

func (s *responsesStream) inProgress() map[string]any {
	o := s.h.responseObject(s.rq, nil, nil, []any{})
	o["id"] = responseID(s.meta.ID)
	o["created_at"] = s.meta.Created
	o["model"] = s.meta.Model
	if s.meta.Model == "" {
		o["model"] = s.rq.loop.Model
	}
	return o
}

// begin sends the opening events once the first upstream id is known.
func (s *responsesStream) begin(meta loop.Meta) error {
	s.meta = meta
	s.base = trimID(meta.ID)
	if err := s.send("response.created", map[string]any{"response": s.inProgress()}); err != nil {
		return err
	}
	if err := s.send("response.in_progress", map[string]any{"response": s.inProgress()}); err != nil {
		return err
	}
	if s.listTools == nil {
		return nil
	}
	id := s.listTools["id"]
	pending := map[string]any{}
	for k, v := range s.listTools {
		pending[k] = v
	}
	pending["tools"] = []any{}
	i := s.add(s.listTools)
	if err := s.send("response.output_item.added", map[string]any{"output_index": i, "item": pending}); err != nil {
		return err
	}
	if err := s.send("response.mcp_list_tools.in_progress", map[string]any{"output_index": i, "item_id": id}); err != nil {
		return err
	}
	if err := s.send("response.mcp_list_tools.completed", map[string]any{"output_index": i, "item_id": id}); err != nil {
		return err
	}
	return s.send("response.output_item.done", map[string]any{"output_index": i, "item": s.listTools})
}

// event is the loop's sink.
func (s *responsesStream) event(ev loop.Event) error {
	switch ev.Kind {
	case loop.EventUpstreamMeta:
		if !s.startedResponse() {
			return s.begin(loop.Meta{ID: ev.ID, Created: ev.Created, Model: ev.Model})
		}
	case loop.EventRoundStart:
		s.mcpIndex = map[string]int{}
	case loop.EventTextDelta:
		if err := s.openMessage(ev.Round); err != nil {
			return err
		}
		s.msgText.WriteString(ev.Text)
		return s.send("response.output_text.delta", map[string]any{
			"item_id": s.msgID, "output_index": s.msgIndex, "content_index": 0, "delta": ev.Text, "logprobs": []any{},
		})
	case loop.EventCallerCallDelta:
		if err := s.closeMessage("completed"); err != nil {
			return err
		}
		if ev.Name != "" {
			c := &streamedCall{callID: ev.CallID, name: ev.Name}
			c.itemID = "fc_" + ev.CallID
			c.index = s.add(nil)
			s.fcalls = append(s.fcalls, c)
			if err := s.send("response.output_item.added", map[string]any{"output_index": c.index, "item": functionCallItem(c.callID, c.name, "", "in_progress")}); err != nil {
				return err
			}
		}
		if ev.CallerIndex >= len(s.fcalls) || ev.ArgsDelta == "" {
			return nil
		}
		c := s.fcalls[ev.CallerIndex]
		c.args.WriteString(ev.ArgsDelta)
		return s.send("response.function_call_arguments.delta", map[string]any{"item_id": c.itemID, "output_index": c.index, "delta": ev.ArgsDelta})
	case loop.EventHostedCallsProposed:
		if err := s.closeMessage("completed"); err != nil {
			return err
		}
		for _, c := range ev.Calls {
			i := s.add(nil)
			s.mcpIndex[c.ID] = i
			if err := s.send("response.output_item.added", map[string]any{"output_index": i, "item": mcpCallItem(s.h.opts.Label, c, false)}); err != nil {
				return err
			}
			if err := s.send("response.mcp_call_arguments.delta", map[string]any{"output_index": i, "item_id": c.ID, "delta": string(c.Args)}); err != nil {
				return err
			}
			if err := s.send("response.mcp_call_arguments.done", map[string]any{"output_index": i, "item_id": c.ID, "arguments": string(c.Args)}); err != nil {
				return err
			}
		}
	case loop.EventHostedCallStarted:
		i, ok := s.mcpIndex[ev.Call.ID]
		if !ok {
			return nil
		}
		return s.send("response.mcp_call.in_progress", map[string]any{"output_index": i, "item_id": ev.Call.ID})
	case loop.EventHostedCallsDone:
		// In the model's order, the order the results go to the model.
		for _, c := range ev.Calls {
			i := s.mcpIndex[c.ID]
			typ := "response.mcp_call.completed"
			if c.Status == loop.StatusFailed {
				typ = "response.mcp_call.failed"
			}
			if err := s.send(typ, map[string]any{"output_index": i, "item_id": c.ID}); err != nil {
				return err
			}
			item := mcpCallItem(s.h.opts.Label, c, true)
			s.items[i] = item
			if err := s.send("response.output_item.done", map[string]any{"output_index": i, "item": item}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *responsesStream) startedResponse() bool { return s.seq > 0 }

func (s *responsesStream) openMessage(round int) error {
	if s.msgIndex >= 0 {
		return nil
	}
	s.msgID = roundItemID(s.base, round)
	s.msgText.Reset()
	s.msgIndex = s.add(nil)
	item := map[string]any{"id": s.msgID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
	if err := s.send("response.output_item.added", map[string]any{"output_index": s.msgIndex, "item": item}); err != nil {
		return err
	}
	return s.send("response.content_part.added", map[string]any{"item_id": s.msgID, "output_index": s.msgIndex, "content_index": 0, "part": outputTextPart("")})
}

func (s *responsesStream) closeMessage(status string) error {
	if s.msgIndex < 0 {
		return nil
	}
	i, text := s.msgIndex, s.msgText.String()
	s.msgIndex = -1
	if err := s.send("response.output_text.done", map[string]any{"item_id": s.msgID, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}}); err != nil {
		return err
	}
	if err := s.send("response.content_part.done", map[string]any{"item_id": s.msgID, "output_index": i, "content_index": 0, "part": outputTextPart(text)}); err != nil {
		return err
	}
	item := messageItem(s.msgID, text, status)
	s.items[i] = item
	return s.send("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

// finish closes the last round's items and sends the terminal event.
func (s *responsesStream) finish(run *loop.Run, res *loop.Result) {
	if !s.startedResponse() {
		if s.begin(res.First) != nil {
			return
		}
	}
	status := responseStatus(res.FinishReason)
	msgStatus := "completed"
	if status == "incomplete" {
		msgStatus = "incomplete"
	}
	if s.closeMessage(msgStatus) != nil {
		return
	}
	for n, c := range s.fcalls {
		callID, name, args := c.callID, c.name, c.args.String()
		// The loop gives ids to calls that came without one.
		if n < len(res.Message.ToolCalls) {
			tc := res.Message.ToolCalls[n]
			callID, name, args = tc.ID, tc.Name, string(tc.Args)
		}
		if s.send("response.function_call_arguments.done", map[string]any{"item_id": c.itemID, "output_index": c.index, "name": name, "arguments": args}) != nil {
			return
		}
		item := functionCallItem(callID, name, args, "completed")
		item["id"] = c.itemID
		s.items[c.index] = item
		if s.send("response.output_item.done", map[string]any{"output_index": c.index, "item": item}) != nil {
			return
		}
	}
	resp := s.h.responseObject(s.rq, run, res, s.items)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	_ = s.send(typ, map[string]any{"response": resp, s.h.opts.Label: resp[s.h.opts.Label]})
}

// fail ends a started stream with an error event.
func (s *responsesStream) fail(re *requestError) {
	inner := re.body()["error"].(map[string]any)
	_ = s.send("error", map[string]any{"code": re.code, "message": clip.Message(re.message), "param": inner["param"], s.h.opts.Label: map[string]any{"reason": re.reason}})
}
