package v1

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"toolhost/identity"
	"toolhost/loop"
	"toolhost/server"
)

// chatCompletions serves POST /v1/chat/completions.
func (h *Handler) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, rerr := h.readBody(w, r)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	h.withIdempotency(w, r, body, func(w http.ResponseWriter) {
		h.serveChat(w, r, body)
	})
}

func (h *Handler) serveChat(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx := r.Context()
	cr, err := h.parseChat(body)
	if err != nil {
		var re *requestError
		if errors.As(err, &re) {
			writeRequestError(w, re)
			return
		}
		writeRequestError(w, badRequest(ReasonInvalidRequest, "", err.Error()))
		return
	}
	route, err := h.opts.Router.Pick(cr.loop.Model, cr.declared)
	if err != nil {
		writeRequestError(w, h.runError(ctx, err))
		return
	}
	id, _ := identity.FromContext(ctx)
	run := &loop.Run{
		Request: cr.loop,
		Hosted:  cr.hosted,
		Route:   route,
		Lang:    lang(r),
		Caller: loop.Caller{
			RequestID:      requestID(ctx),
			SessionID:      sessionID(r, cr.metadata),
			Slot:           r.Header.Get(SlotHeader),
			Identity:       id,
			TraceID:        server.TraceID(r.Header),
			IdempotencyKey: r.Header.Get("Idempotency-Key"),
			Metadata:       cr.metadata,
		},
	}
	if !cr.loop.Stream {
		res, err := h.opts.Runner.Run(ctx, run)
		if err != nil {
			if ctx.Err() != nil {
				return // the caller went away; nobody to answer
			}
			writeRequestError(w, h.runError(ctx, err))
			return
		}
		server.WriteJSON(w, http.StatusOK, h.chatResponse(cr, run, res))
		return
	}
	sw := &chatStream{h: h, sseWriter: sseWriter{w: w}, cr: cr, requestID: run.Caller.RequestID}
	run.Sink = sw.event
	res, err := h.opts.Runner.Run(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		re := h.runError(ctx, err)
		if !sw.started {
			writeRequestError(w, re)
			return
		}
		// A broken stream must not be replayed to an idempotent retry.
		if d, ok := w.(interface{ discard() }); ok {
			d.discard()
		}
		_ = sw.send(re.body())
		return
	}
	sw.finish(run, res)
}

// extension is the top-level extension field of a response.
func (h *Handler) extension(cr *chatRequest, run *loop.Run, res *loop.Result) map[string]any {
	ext := map[string]any{"request_id": run.Caller.RequestID, "cost_quota": res.Cost}
	if cr.declared {
		calls := make([]map[string]any, 0, len(res.Calls))
		for _, c := range res.Calls {
			calls = append(calls, map[string]any{"round": c.Round, "id": c.ID, "name": c.Name, "status": c.Status, "summary": c.Summary, "ms": c.MS()})
		}
		ext["tool_rounds"] = res.ToolRounds()
		ext["tool_calls"] = calls
	}
	return ext
}

// chatResponse renders a finished run as a chat.completion object.
func (h *Handler) chatResponse(cr *chatRequest, run *loop.Run, res *loop.Result) map[string]any {
	out := map[string]any{}
	for k, v := range res.Final.Extra {
		out[k] = v
	}
	out["id"] = res.First.ID
	out["object"] = "chat.completion"
	out["created"] = res.First.Created
	out["model"] = res.First.Model
	choice := map[string]any{}
	for k, v := range res.Final.ChoiceExtra {
		choice[k] = v
	}
	choice["index"] = 0
	choice["message"] = finalMessage(res)
	choice["finish_reason"] = res.FinishReason
	if _, ok := choice["logprobs"]; !ok {
		choice["logprobs"] = nil
	}
	out["choices"] = []any{choice}
	if u := usageJSON(res.Usage); u != nil {
		out["usage"] = u
	}
	if len(cr.toolChoice) > 0 {
		out["tool_choice"] = cr.toolChoice
	}
	out[h.opts.Label] = h.extension(cr, run, res)
	return out
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

func encodeMessage(m loop.Message) json.RawMessage {
	out := map[string]any{"role": "assistant", "content": m.Text}
	if len(m.ToolCalls) > 0 {
		calls := make([]map[string]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": string(c.Args)}}
		}
		out["tool_calls"] = calls
		if m.Text == "" {
			out["content"] = nil
		}
	}
	b, _ := marshal(out)
	return b
}

// usageJSON renders summed usage in Chat Completions form.
func usageJSON(u loop.Usage) any {
	if !u.Present {
		return nil
	}
	if u.Dialect == loop.DialectOpenAI && u.Detail != nil {
		return u.Detail
	}
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}
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
	cr        *chatRequest
	requestID string

	meta     loop.Meta
	haveMeta bool
	roleSent bool
}

func (s *chatStream) send(v any) error { return s.write("", v) }

func (s *chatStream) chunk(choices any) map[string]any {
	return map[string]any{"id": s.meta.ID, "object": "chat.completion.chunk", "created": s.meta.Created, "model": s.meta.Model, "choices": choices}
}

func (s *chatStream) delta(d map[string]any) map[string]any {
	if !s.roleSent {
		s.roleSent = true
		d["role"] = "assistant"
	}
	return s.chunk([]any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": nil}})
}

func (s *chatStream) ext(v any) map[string]any {
	c := s.chunk([]any{})
	c[s.h.opts.Label] = v
	return c
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
		return s.send(s.delta(map[string]any{"content": ev.Text}))
	case loop.EventDeltaExtra:
		if ev.Dialect != loop.DialectOpenAI {
			return nil
		}
		d := map[string]any{}
		for k, v := range ev.Extra {
			d[k] = v
		}
		return s.send(s.delta(d))
	case loop.EventCallerCallDelta:
		tc := map[string]any{"index": ev.CallerIndex}
		if ev.Name != "" {
			tc["id"] = ev.CallID
			tc["type"] = "function"
			tc["function"] = map[string]any{"name": ev.Name, "arguments": ev.ArgsDelta}
		} else {
			tc["function"] = map[string]any{"arguments": ev.ArgsDelta}
		}
		return s.send(s.delta(map[string]any{"tool_calls": []any{tc}}))
	case loop.EventHostedCallStarted:
		c := ev.Call
		return s.send(s.ext(map[string]any{"tool": map[string]any{"round": c.Round, "id": c.ID, "name": c.Name, "status": "", "ms": 0}}))
	case loop.EventHostedCallFinished:
		c := ev.Call
		return s.send(s.ext(map[string]any{"tool": map[string]any{"round": c.Round, "id": c.ID, "name": c.Name, "status": c.Status, "summary": c.Summary, "ms": c.MS()}}))
	}
	return nil
}

// finish sends the finish chunk, the summed usage chunk (when asked), the
// closing extension chunk with the totals, and [DONE].
func (s *chatStream) finish(run *loop.Run, res *loop.Result) {
	if !s.haveMeta {
		s.meta = res.First
	}
	d := map[string]any{}
	if !s.roleSent {
		s.roleSent = true
		d["role"] = "assistant"
		d["content"] = ""
	}
	if s.send(s.chunk([]any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": res.FinishReason}})) != nil {
		return
	}
	if s.cr.includeUsage {
		c := s.chunk([]any{})
		c["usage"] = usageJSON(res.Usage)
		if s.send(c) != nil {
			return
		}
	}
	if s.send(s.ext(s.h.extension(s.cr, run, res))) != nil {
		return
	}
	_ = s.writeRaw("", []byte("[DONE]"))
}
