package v1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"toolhost/catalog"
	"toolhost/loop"
	"toolhost/server"
)

// countTokens serves POST /v1/messages/count_tokens: the input tokens of a
// Messages request as the model would see it, hosted tool definitions
// included. A route speaking the Anthropic protocol is asked (its own
// count_tokens endpoint); otherwise the embedded estimate counts.
func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, rerr := h.readBody(w, r)
	if rerr != nil {
		writeMessagesError(w, rerr)
		return
	}
	mr, err := h.parseMessages(r, body)
	if err != nil {
		var re *requestError
		if !errors.As(err, &re) {
			re = badRequest(ReasonInvalidRequest, "", err.Error())
		}
		writeMessagesError(w, re)
		return
	}
	req, err := h.countRequest(mr, lang(r))
	if err != nil {
		writeMessagesError(w, h.runError(ctx, err))
		return
	}
	method := "estimate:" + estimateEncoding
	var n int64
	route, perr := h.opts.Router.Pick(mr.loop.Model, mr.declared)
	if tc, ok := upstreamCounter(route); perr == nil && ok {
		n, err = tc.CountTokens(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			writeMessagesError(w, h.runError(ctx, err))
			return
		}
		method = "upstream:" + route.Name
	} else {
		n, err = EstimateTokens(req)
		if err != nil {
			writeMessagesError(w, &requestError{status: http.StatusInternalServerError, code: "internal_error", reason: "internal_error", message: err.Error()})
			return
		}
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{
		"input_tokens": n,
		h.opts.Label:   map[string]any{"request_id": requestID(ctx), "count_method": method},
	})
}

func upstreamCounter(route *loop.Route) (loop.TokenCounter, bool) {
	if route == nil || route.Protocol != loop.DialectAnthropic {
		return nil, false
	}
	tc, ok := route.Upstream.(loop.TokenCounter)
	return tc, ok
}

// countRequest is the first upstream call the loop would make: the
// caller's tools followed by the hosted definitions.
func (h *Handler) countRequest(mr *messagesRequest, l catalog.Lang) (*loop.UpstreamRequest, error) {
	tools := append([]loop.Function(nil), mr.loop.Tools...)
	if mr.declared {
		defs, err := h.opts.Runner.Definitions(mr.hosted.Tools, l)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", loop.ErrInternal, err)
		}
		tools = append(tools, defs...)
	}
	return &loop.UpstreamRequest{
		Model:          mr.loop.Model,
		Messages:       mr.loop.Messages,
		Tools:          tools,
		ToolChoice:     mr.loop.ToolChoice,
		Options:        mr.loop.Options,
		OptionsDialect: mr.loop.OptionsDialect,
	}, nil
}

// The embedded estimate.
//
// Method: the BPE encoding cl100k_base (embedded, no download) counts the
// text the model reads: every message's role and text, each tool call's
// name and argument bytes, each tool result's text, and each tool
// definition as compact JSON {"name","description","input_schema"}; plus
// fixed overheads for the framing the model adds (perMessage per message,
// perRequest once, perTool per definition) and perImage for an image part.
// Claude's own tokenizer is not public, so the count is an estimate: it is
// exact only for an upstream that tokenizes with cl100k_base, and for other
// models it can be off in either direction (see the README for the margin).
const (
	estimateEncoding = "cl100k_base"
	perMessage       = 3
	perRequest       = 3
	perTool          = 8
	perImage         = 1600
)

var (
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
	encErr  error
)

func encoding() (*tiktoken.Tiktoken, error) {
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		enc, encErr = tiktoken.GetEncoding(estimateEncoding)
	})
	return enc, encErr
}

// EstimateTokens estimates the input tokens of an upstream request with
// the embedded tokenizer (method above).
func EstimateTokens(req *loop.UpstreamRequest) (int64, error) {
	e, err := encoding()
	if err != nil {
		return 0, fmt.Errorf("tokenizer %s: %w", estimateEncoding, err)
	}
	count := func(s string) int64 {
		if s == "" {
			return 0
		}
		return int64(len(e.Encode(s, nil, nil)))
	}
	n := int64(perRequest)
	for _, m := range req.Messages {
		n += perMessage + count(string(m.Role)) + count(m.Text)
		for _, p := range m.Parts {
			if p.Type == "image" || p.Type == "image_url" {
				n += perImage
			}
		}
		for _, c := range m.ToolCalls {
			n += count(c.Name) + count(string(c.Args))
		}
	}
	for _, f := range req.Tools {
		params := f.Parameters
		var buf bytes.Buffer
		if len(params) == 0 || json.Compact(&buf, params) != nil {
			buf.Reset()
			buf.WriteString(`{"type":"object"}`)
		}
		b, err := marshal(map[string]any{"name": f.Name, "description": f.Description, "input_schema": json.RawMessage(buf.Bytes())})
		if err != nil {
			return 0, err
		}
		n += perTool + count(string(b))
	}
	return n, nil
}
