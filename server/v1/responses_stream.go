package v1

import (
	"encoding/json"
	"strings"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// responsesStream renders loop events as Responses SSE events.
//
// The whole loop is one response: response.created and
// response.in_progress once, then the mcp_list_tools item, then each
// round's message item (text deltas as they come) and, once they have all
// ended, its hosted calls as mcp_call items (an mcp_approval_request for a
// call waiting for its approval), and only at the end the terminal event, whose response
// holds every item sent. output_index numbers items in sending order;
// sequence_number increases over the whole stream.
type responsesStream struct {
	h *Handler
	sseWriter
	rq        *responsesRequest
	listTools *listToolsItem

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
	// found are the web search results so far, which texts cite.
	found []searchResult
	// provided are the citations a Responses provider put on the open
	// message's text (responses_native.go).
	provided []urlCitation
}

type streamedCall struct {
	index  int
	itemID string
	callID string
	name   string // upstream name
	tool   callerTool
	args   strings.Builder
}

// responsesEvent is one event of the stream; each kind sets its own fields
// (send sets type and sequence_number), Extra holds the extension field.
type responsesEvent struct {
	Annotation      *urlCitation               `json:"annotation,omitempty"`
	AnnotationIndex *int                       `json:"annotation_index,omitempty"`
	Arguments       *string                    `json:"arguments,omitempty"`
	Code            string                     `json:"code,omitempty"`
	ContentIndex    *int                       `json:"content_index,omitempty"`
	Delta           *string                    `json:"delta,omitempty"`
	Input           *string                    `json:"input,omitempty"`
	Item            any                        `json:"item,omitempty"`
	ItemID          *string                    `json:"item_id,omitempty"`
	Logprobs        *[]struct{}                `json:"logprobs,omitempty"`
	Message         string                     `json:"message,omitempty"`
	Name            *string                    `json:"name,omitempty"`
	OutputIndex     *int                       `json:"output_index,omitempty"`
	Param           json.RawMessage            `json:"param,omitempty"`
	Part            *outputTextPart            `json:"part,omitempty"`
	Response        *response                  `json:"response,omitempty"`
	SequenceNumber  int                        `json:"sequence_number"`
	Text            *string                    `json:"text,omitempty"`
	Type            string                     `json:"type"`
	Extra           map[string]json.RawMessage `json:"-"`
}

func (e responsesEvent) MarshalJSON() ([]byte, error) {
	type plain responsesEvent
	return wire.Marshal(plain(e), e.Extra)
}

// at is an event about the item at output index i (with id itemID unless
// empty).
func at(i int, itemID string) responsesEvent {
	ev := responsesEvent{OutputIndex: &i}
	if itemID != "" {
		ev.ItemID = &itemID
	}
	return ev
}

// ref returns a pointer to a copy of v, for the optional fields of events.
func ref[T any](v T) *T { return &v }

func noLogprobs() *[]struct{} { return &[]struct{}{} }

func (s *responsesStream) begun() bool { return s.started }

// send writes one event, numbering it.
func (s *responsesStream) send(typ string, ev responsesEvent) error {
	ev.Type = typ
	ev.SequenceNumber = s.seq
	s.seq++
	return s.write(typ, ev)
}

// add records an item at its output_index (its final form comes with done).
func (s *responsesStream) add(item any) int {
	s.items = append(s.items, item)
	return len(s.items) - 1
}

func (s *responsesStream) inProgress() *response {
	o := s.h.responseObject(s.rq, nil, nil, []any{})
	o.ID = responseID(s.meta.ID)
	o.CreatedAt = s.meta.Created
	o.Model = s.meta.Model
	if s.meta.Model == "" {
		o.Model = s.rq.loop.Model
	}
	return &o
}

// begin sends the opening events once the first upstream id is known.
func (s *responsesStream) begin(meta loop.Meta) error {
	s.meta = meta
	s.base = trimID(meta.ID)
	if err := s.send("response.created", responsesEvent{Response: s.inProgress()}); err != nil {
		return err
	}
	if err := s.send("response.in_progress", responsesEvent{Response: s.inProgress()}); err != nil {
		return err
	}
	if s.listTools == nil {
		return nil
	}
	id := s.listTools.ID
	pending := *s.listTools
	pending.Tools = []listedTool{}
	i := s.add(s.listTools)
	added := at(i, "")
	added.Item = pending
	if err := s.send("response.output_item.added", added); err != nil {
		return err
	}
	if err := s.send("response.mcp_list_tools.in_progress", at(i, id)); err != nil {
		return err
	}
	if err := s.send("response.mcp_list_tools.completed", at(i, id)); err != nil {
		return err
	}
	return s.itemDone(i, s.listTools)
}

// itemDone records an item's final form and sends output_item.done.
func (s *responsesStream) itemDone(i int, item any) error {
	s.items[i] = item
	ev := at(i, "")
	ev.Item = item
	return s.send("response.output_item.done", ev)
}

// event is the loop's sink.
func (s *responsesStream) event(ev loop.Event) error {
	switch ev.Kind {
	case loop.EventUpstreamMeta:
		if !s.startedResponse() {
			return s.begin(loop.Meta{ID: ev.ID, Created: ev.Created, Model: ev.Model})
		}
	case loop.EventTextDelta:
		if err := s.openMessage(ev.Round); err != nil {
			return err
		}
		s.msgText.WriteString(ev.Text)
		d := at(s.msgIndex, s.msgID)
		d.ContentIndex, d.Delta, d.Logprobs = ref(0), ref(ev.Text), noLogprobs()
		return s.send("response.output_text.delta", d)
	case loop.EventCallerCallDelta:
		return s.callerCall(ev)
	case loop.EventDeltaExtra:
		return s.nativeItemEvent(ev)
	case loop.EventHostedCallsProposed:
		return s.closeMessage("completed")
	case loop.EventHostedCallsDone:
		// In the model's order, the order the results go to the model.
		for _, c := range ev.Calls {
			if err := s.hostedCall(c); err != nil {
				return err
			}
			if s.rq.servesSearch(c.Name) {
				s.found = append(s.found, searchResults(c)...)
			}
		}
	}
	return nil
}

// hostedCall sends a finished hosted call's item. Items are sent once the
// round's calls have ended, since a call may end waiting for its approval
// (an mcp_approval_request item) instead of running (an mcp_call item).
func (s *responsesStream) hostedCall(c loop.Call) error {
	label := s.h.opts.Label
	i := s.add(nil)
	added := at(i, "")
	if c.Status == loop.StatusApprovalRequired {
		added.Item = newApprovalRequestItem(label, c)
		if err := s.send("response.output_item.added", added); err != nil {
			return err
		}
		return s.itemDone(i, newApprovalRequestItem(label, c))
	}
	if s.rq.servesSearch(c.Name) {
		return s.webSearchCall(i, c)
	}
	if s.rq.servesCode(c.Name) {
		return s.codeInterpreterCall(i, c)
	}
	added.Item = newMCPCallItem(label, c, false)
	if err := s.send("response.output_item.added", added); err != nil {
		return err
	}
	d := at(i, c.ID)
	d.Delta = ref(string(c.Args))
	if err := s.send("response.mcp_call_arguments.delta", d); err != nil {
		return err
	}
	done := at(i, c.ID)
	done.Arguments = ref(string(c.Args))
	if err := s.send("response.mcp_call_arguments.done", done); err != nil {
		return err
	}
	if err := s.send("response.mcp_call.in_progress", at(i, c.ID)); err != nil {
		return err
	}
	typ := "response.mcp_call.completed"
	if c.Status == loop.StatusFailed {
		typ = "response.mcp_call.failed"
	}
	if err := s.send(typ, at(i, c.ID)); err != nil {
		return err
	}
	return s.itemDone(i, newMCPCallItem(label, c, true))
}

// callerCall streams a piece of a call to one of the caller's functions.
func (s *responsesStream) callerCall(ev loop.Event) error {
	if err := s.closeMessage("completed"); err != nil {
		return err
	}
	if ev.Name != "" {
		c := &streamedCall{callID: ev.CallID, name: ev.Name, tool: s.rq.names.lookup(ev.Name)}
		c.itemID = itemID(c.tool, ev.CallID)
		c.index = s.add(nil)
		s.fcalls = append(s.fcalls, c)
		added := at(c.index, "")
		added.Item = s.rq.names.callItem(c.callID, c.name, "", "in_progress")
		if err := s.send("response.output_item.added", added); err != nil {
			return err
		}
	}
	if ev.CallerIndex >= len(s.fcalls) || ev.ArgsDelta == "" {
		return nil
	}
	c := s.fcalls[ev.CallerIndex]
	c.args.WriteString(ev.ArgsDelta)
	if c.tool.Custom || c.tool.Kind != "" {
		// The input is a string inside the arguments, the operation or
		// action an object: sent whole at the end.
		return nil
	}
	d := at(c.index, c.itemID)
	d.Delta = ref(ev.ArgsDelta)
	return s.send("response.function_call_arguments.delta", d)
}

func (s *responsesStream) startedResponse() bool { return s.seq > 0 }

func (s *responsesStream) openMessage(round int) error {
	if s.msgIndex >= 0 {
		return nil
	}
	s.msgID = roundItemID(s.base, round)
	s.msgText.Reset()
	s.msgIndex = s.add(nil)
	added := at(s.msgIndex, "")
	added.Item = messageItem{ID: s.msgID, Type: "message", Role: "assistant", Status: "in_progress", Content: []outputTextPart{}}
	if err := s.send("response.output_item.added", added); err != nil {
		return err
	}
	part := at(s.msgIndex, s.msgID)
	part.ContentIndex, part.Part = ref(0), ref(newOutputTextPart(""))
	return s.send("response.content_part.added", part)
}

func (s *responsesStream) closeMessage(status string) error {
	if s.msgIndex < 0 {
		return nil
	}
	i, text := s.msgIndex, s.msgText.String()
	s.msgIndex = -1
	notes := append(citations(text, s.found), s.provided...)
	s.provided = nil
	for n, a := range notes {
		ev := at(i, s.msgID)
		ev.ContentIndex, ev.AnnotationIndex, ev.Annotation = ref(0), ref(n), &a
		if err := s.send("response.output_text.annotation.added", ev); err != nil {
			return err
		}
	}
	done := at(i, s.msgID)
	done.ContentIndex, done.Text, done.Logprobs = ref(0), ref(text), noLogprobs()
	if err := s.send("response.output_text.done", done); err != nil {
		return err
	}
	final := newOutputTextPart(text)
	final.Annotations = notes
	part := at(i, s.msgID)
	part.ContentIndex, part.Part = ref(0), &final
	if err := s.send("response.content_part.done", part); err != nil {
		return err
	}
	item := newMessageItem(s.msgID, text, status)
	item.Content[0] = final
	return s.itemDone(i, item)
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
		if s.callDone(c, callID, name, args) != nil {
			return
		}
	}
	resp := s.h.responseObject(s.rq, run, res, s.items)
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	// The extension field also at the top of the event.
	_ = s.send(typ, responsesEvent{Response: &resp, Extra: resp.Extra})
}

// errorReason is the extension field of an error event.
type errorReason struct {
	Reason string `json:"reason"`
}

// fail ends a started stream with an error event.
func (s *responsesStream) fail(re *requestError) {
	param, _ := marshal(re.body().Error.Param)
	_ = s.send("error", responsesEvent{Code: re.code, Message: clip.Message(re.message), Param: param,
		Extra: s.h.labelled(nil, errorReason{Reason: re.reason})})
}

// callDone ends a caller call's item: function_call_arguments.done for a
// function, the input (whole) for a custom tool, then output_item.done.
func (s *responsesStream) callDone(c *streamedCall, callID, name, args string) error {
	item := s.rq.names.callItem(callID, name, args, "completed")
	switch it := item.(type) {
	case customToolCallItem:
		it.ID = c.itemID
		item = it
		d := at(c.index, c.itemID)
		d.Delta = ref(it.Input)
		if err := s.send("response.custom_tool_call_input.delta", d); err != nil {
			return err
		}
		done := at(c.index, c.itemID)
		done.Input = ref(it.Input)
		if err := s.send("response.custom_tool_call_input.done", done); err != nil {
			return err
		}
	case functionCallItem:
		it.ID = c.itemID
		item = it
		done := at(c.index, c.itemID)
		done.Name, done.Arguments = ref(it.Name), ref(args)
		if err := s.send("response.function_call_arguments.done", done); err != nil {
			return err
		}
	}
	return s.itemDone(c.index, item)
}

// webSearchCall sends a finished hosted call serving web search as a
// web_search_call item: added, in_progress, searching, completed, done.
func (s *responsesStream) webSearchCall(i int, c loop.Call) error {
	added := at(i, "")
	added.Item = newWebSearchCallItem(c, false)
	if err := s.send("response.output_item.added", added); err != nil {
		return err
	}
	id := "ws_" + c.ID
	for _, typ := range []string{"in_progress", "searching", "completed"} {
		if err := s.send("response.web_search_call."+typ, at(i, id)); err != nil {
			return err
		}
	}
	return s.itemDone(i, newWebSearchCallItem(c, true))
}
