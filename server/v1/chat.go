package v1

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// chatFace is the Chat Completions format (POST /v1/chat/completions).
type chatFace struct{ h *Handler }

func (f chatFace) parse(_ *http.Request, body []byte) (request, error) { return f.h.parseChat(body) }

func (chatFace) writeError(w http.ResponseWriter, e *requestError) { writeRequestError(w, e) }

func (cr *chatRequest) prepare(*loop.Run) error { return nil }

func (cr *chatRequest) render(run *loop.Run, res *loop.Result) any {
	return cr.h.chatResponse(cr, run, res)
}

func (cr *chatRequest) stream(w http.ResponseWriter) stream {
	return &chatStream{h: cr.h, sseWriter: sseWriter{w: w}, cr: cr}
}

// chatCompletion is a chat.completion object; Extra holds the upstream's
// other fields and the extension field.
type chatCompletion struct {
	Choices    []chatChoice               `json:"choices"`
	Created    int64                      `json:"created"`
	ID         string                     `json:"id"`
	Model      string                     `json:"model"`
	Object     string                     `json:"object"`
	ToolChoice json.RawMessage            `json:"tool_choice,omitempty"`
	Usage      json.RawMessage            `json:"usage,omitempty"`
	Extra      map[string]json.RawMessage `json:"-"`
}

func (c chatCompletion) MarshalJSON() ([]byte, error) {
	type plain chatCompletion
	return wire.Marshal(plain(c), c.Extra)
}

// chatChoice is the one choice; Extra holds the upstream choice's other
// fields.
type chatChoice struct {
	FinishReason string                     `json:"finish_reason"`
	Index        int                        `json:"index"`
	Logprobs     json.RawMessage            `json:"logprobs"`
	Message      json.RawMessage            `json:"message"`
	Extra        map[string]json.RawMessage `json:"-"`
}

func (c chatChoice) MarshalJSON() ([]byte, error) {
	type plain chatChoice
	return wire.Marshal(plain(c), c.Extra)
}

// chatResponse renders a finished run as a chat.completion object.
func (h *Handler) chatResponse(cr *chatRequest, run *loop.Run, res *loop.Result) chatCompletion {
	choice := chatChoice{
		Index:        0,
		Message:      withAnnotations(finalMessage(res), cr.chatCitations(res)),
		FinishReason: res.FinishReason,
		Logprobs:     res.Final.ChoiceExtra["logprobs"],
		Extra:        res.Final.ChoiceExtra,
	}
	if choice.Logprobs == nil {
		choice.Logprobs = json.RawMessage("null")
	}
	return chatCompletion{
		ID:         res.First.ID,
		Object:     "chat.completion",
		Created:    res.First.Created,
		Model:      res.First.Model,
		Choices:    []chatChoice{choice},
		Usage:      usageJSON(res.Usage),
		ToolChoice: cr.toolChoice,
		Extra:      h.labelled(res.Final.Extra, h.extension(cr.declared, run, res)),
	}
}

// finalMessage is the last assistant message without hosted calls, keeping
// every other field the upstream sent.
func finalMessage(res *loop.Result) json.RawMessage {
	raw := res.Final.Message.Raw
	if res.Final.Dialect != loop.DialectOpenAI || len(raw) == 0 {
		return encodeMessage(res.Message)
	}
	if !res.HostedRemoved {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return encodeMessage(res.Message)
	}
	keep := map[string]bool{}
	for _, c := range res.Message.ToolCalls {
		keep[c.ID] = true
	}
	var calls []json.RawMessage
	_ = json.Unmarshal(m["tool_calls"], &calls)
	var kept []json.RawMessage
	for _, c := range calls {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(c, &head)
		if keep[head.ID] {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		delete(m, "tool_calls")
		if string(m["content"]) == "null" {
			m["content"] = json.RawMessage(`""`)
		}
	} else {
		m["tool_calls"], _ = json.Marshal(kept)
	}
	b, _ := marshal(m)
	return b
}

// assistantMessage is an assistant message in Chat Completions form.
type assistantMessage struct {
	Content   *string        `json:"content"`
	Role      string         `json:"role"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type chatToolCall struct {
	Function chatCallFunction `json:"function"`
	ID       string           `json:"id"`
	Type     string           `json:"type"`
}

type chatCallFunction struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

func encodeMessage(m loop.Message) json.RawMessage {
	text := m.Text
	out := assistantMessage{Role: "assistant", Content: &text}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, chatToolCall{ID: c.ID, Type: "function", Function: chatCallFunction{Name: c.Name, Arguments: string(c.Args)}})
	}
	if len(m.ToolCalls) > 0 && m.Text == "" {
		out.Content = nil
	}
	b, _ := marshal(out)
	return b
}

// chatUsage is usage in Chat Completions form.
type chatUsage struct {
	CompletionTokens int64 `json:"completion_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// usageJSON renders summed usage in Chat Completions form: an OpenAI
// upstream's own usage object as it came (summed), else the counts; nil
// without usage.
func usageJSON(u loop.Usage) json.RawMessage {
	if !u.Present {
		return nil
	}
	var v any = chatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	if u.Dialect == loop.DialectOpenAI && u.Detail != nil {
		v = u.Detail
	}
	b, _ := marshal(v)
	return b
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func upstreamMessage(ue *loop.UpstreamError) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(ue.Body, &body) == nil && body.Error.Message != "" {
		return "upstream " + ue.Route + ": " + body.Error.Message
	}
	return ue.Error()
}

// chatStream renders loop events as chat.completion.chunk SSE events.
type chatStream struct {
	h *Handler
	sseWriter
	cr *chatRequest

	meta     loop.Meta
	haveMeta bool
	roleSent bool
}

// chatChunk is a chat.completion.chunk; Extra holds the extension field.
type chatChunk struct {
	Choices []chatChunkChoice          `json:"choices"`
	Created int64                      `json:"created"`
	ID      string                     `json:"id"`
	Model   string                     `json:"model"`
	Object  string                     `json:"object"`
	Usage   json.RawMessage            `json:"usage,omitempty"`
	Extra   map[string]json.RawMessage `json:"-"`
}

func (c chatChunk) MarshalJSON() ([]byte, error) {
	type plain chatChunk
	return wire.Marshal(plain(c), c.Extra)
}

type chatChunkChoice struct {
	Delta        chatDelta       `json:"delta"`
	FinishReason *string         `json:"finish_reason"`
	Index        int             `json:"index"`
	Logprobs     json.RawMessage `json:"logprobs"`
}

// chatDelta is a chunk's delta; Extra holds an OpenAI upstream's other
// delta fields (reasoning, refusal).
type chatDelta struct {
	Content   *string                    `json:"content,omitempty"`
	Role      string                     `json:"role,omitempty"`
	ToolCalls []chatCallDelta            `json:"tool_calls,omitempty"`
	Extra     map[string]json.RawMessage `json:"-"`
}

func (d chatDelta) MarshalJSON() ([]byte, error) {
	type plain chatDelta
	return wire.Marshal(plain(d), d.Extra)
}

// chatCallDelta is a piece of a caller's tool call: the first carries id,
// type and name.
type chatCallDelta struct {
	Function chatFunctionDelta `json:"function"`
	ID       *string           `json:"id,omitempty"`
	Index    int               `json:"index"`
	Type     string            `json:"type,omitempty"`
}

type chatFunctionDelta struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name,omitempty"`
}

func (s *chatStream) begun() bool { return s.started }

func (s *chatStream) send(v any) error { return s.write("", v) }

func (s *chatStream) fail(re *requestError) { _ = s.send(re.body()) }

func (s *chatStream) chunk(choices []chatChunkChoice) chatChunk {
	if choices == nil {
		choices = []chatChunkChoice{}
	}
	return chatChunk{ID: s.meta.ID, Object: "chat.completion.chunk", Created: s.meta.Created, Model: s.meta.Model, Choices: choices}
}

func (s *chatStream) delta(d chatDelta) chatChunk {
	if !s.roleSent {
		s.roleSent = true
		d.Role = "assistant"
	}
	return s.chunk([]chatChunkChoice{{Index: 0, Delta: d}})
}

func (s *chatStream) ext(v any) chatChunk {
	c := s.chunk(nil)
	c.Extra = s.h.labelled(nil, v)
	return c
}

// toolNotice is the extension field of a chunk about one hosted call.
type toolNotice struct {
	Tool hostedCall `json:"tool"`
}

// event is the loop's sink.
func (s *chatStream) event(ev loop.Event) error {
	switch ev.Kind {
	case loop.EventUpstreamMeta:
		if !s.haveMeta {
			s.haveMeta = true
			s.meta = loop.Meta{ID: ev.ID, Created: ev.Created, Model: ev.Model}
		}
	case loop.EventTextDelta:
		text := ev.Text
		return s.send(s.delta(chatDelta{Content: &text}))
	case loop.EventDeltaExtra:
		if ev.Dialect != loop.DialectOpenAI {
			return nil
		}
		return s.send(s.delta(chatDelta{Extra: ev.Extra}))
	case loop.EventCallerCallDelta:
		tc := chatCallDelta{Index: ev.CallerIndex, Function: chatFunctionDelta{Arguments: ev.ArgsDelta}}
		if ev.Name != "" {
			id := ev.CallID
			tc.ID, tc.Type, tc.Function.Name = &id, "function", ev.Name
		}
		return s.send(s.delta(chatDelta{ToolCalls: []chatCallDelta{tc}}))
	case loop.EventHostedCallStarted:
		c := ev.Call
		return s.send(s.ext(toolNotice{Tool: hostedCall{Round: c.Round, ID: c.ID, Name: c.Name}}))
	case loop.EventHostedCallFinished:
		return s.send(s.ext(toolNotice{Tool: reportCall(*ev.Call)}))
	}
	return nil
}

// finish sends the finish chunk, the summed usage chunk (when asked), the
// closing extension chunk with the totals, and [DONE].
func (s *chatStream) finish(run *loop.Run, res *loop.Result) {
	if !s.haveMeta {
		s.meta = res.First
	}
	d := chatDelta{}
	if !s.roleSent {
		s.roleSent = true
		empty := ""
		d.Role, d.Content = "assistant", &empty
	}
	if notes := s.cr.chatCitations(res); len(notes) > 0 {
		// The annotations in a delta of their own, before the finish.
		raw, _ := marshal(notes)
		if s.send(s.chunk([]chatChunkChoice{{Index: 0, Delta: chatDelta{Extra: map[string]json.RawMessage{"annotations": raw}}}})) != nil {
			return
		}
	}
	finish := res.FinishReason
	if s.send(s.chunk([]chatChunkChoice{{Index: 0, Delta: d, FinishReason: &finish}})) != nil {
		return
	}
	if s.cr.includeUsage {
		c := s.chunk(nil)
		c.Usage = usageJSON(res.Usage)
		if c.Usage == nil {
			c.Usage = json.RawMessage("null")
		}
		if s.send(c) != nil {
			return
		}
	}
	if s.send(s.ext(s.h.extension(s.cr.declared, run, res))) != nil {
		return
	}
	_ = s.writeRaw("", []byte("[DONE]"))
}
