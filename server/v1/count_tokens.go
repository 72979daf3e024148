package v1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"

	tiktoken "github.com/pkoukk/tiktoken-go"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/v1/loop"
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
	h = h.scoped(r, body)
	mr, err := h.parseMessages(r, body)
	if re := h.catalogError(ctx); re != nil {
		writeMessagesError(w, re)
		return
	}
	if err != nil {
		var re *requestError
		if !errors.As(err, &re) {
			re = badRequest(ReasonInvalidRequest, "", err.Error())
		}
		writeMessagesError(w, re)
		return
	}
	if len(mr.loop.Approvals) > 0 {
		// The calls the answers decide, as the loop would put them.
		id, _ := identity.FromContext(ctx)
		if mr.loop.Messages, err = h.opts.Runner.PreviewApprovals(ctx, id.AccountID, mr.loop.Messages, mr.loop.Approvals, lang(r)); err != nil {
			writeMessagesError(w, h.runError(ctx, err))
			return
		}
	}
	req, err := h.countRequest(mr, lang(r))
	if err != nil {
		writeMessagesError(w, h.runError(ctx, err))
		return
	}
	method := "estimate:" + estimateEncoding
	var n int64
	route, perr := h.opts.Router.Pick(mr.loop.Model, mr.declared || mr.builtin)
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
		if size := estimateSize(req); size > h.opts.MaxEstimateBytes {
			writeMessagesError(w, &requestError{status: http.StatusRequestEntityTooLarge, code: "too_large_to_estimate", reason: "too_large_to_estimate",
				message: fmt.Sprintf("the request holds %d bytes of text, more than the %d the embedded estimate counts; send less, or use a route that counts upstream", size, h.opts.MaxEstimateBytes)})
			return
		}
		n, err = EstimateTokens(ctx, req)
		if ctx.Err() != nil {
			return // the caller has gone; nothing to answer
		}
		if err != nil {
			writeMessagesError(w, &requestError{status: http.StatusInternalServerError, code: "internal_error", reason: "internal_error", message: err.Error()})
			return
		}
	}
	server.WriteJSON(w, http.StatusOK, tokenCount{InputTokens: n, Extra: h.labelled(nil, countMethod{RequestID: requestID(ctx), CountMethod: method})})
}

// tokenCount is the count_tokens answer; Extra holds the extension field.
type tokenCount struct {
	InputTokens int64                      `json:"input_tokens"`
	Extra       map[string]json.RawMessage `json:"-"`
}

func (c tokenCount) MarshalJSON() ([]byte, error) {
	type plain tokenCount
	return wire.Marshal(plain(c), c.Extra)
}

// toolDefinition is a tool as the estimate counts it (the Messages form).
type toolDefinition struct {
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Name        string          `json:"name"`
}

// countMethod is count_tokens' extension field: how the count was made.
type countMethod struct {
	CountMethod string `json:"count_method"`
	RequestID   string `json:"request_id"`
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
		defs, err := loop.DefinitionsFrom(h.published(), mr.hosted.Tools, l)
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
// Method: the BPE encoding cl100k_base (embedded, tokenizer.go; no
// download) counts the
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
	// pieces splits text the way cl100k_base does before its BPE runs. The
	// pattern is the encoding's own (tiktoken's cl100k_base pre-tokenizer);
	// we split ourselves so that one piece can be bounded (below).
	pieces = regexp2.MustCompile(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, regexp2.None)
)

// maxPiece bounds the bytes one BPE run sees. The library's merge loop is
// quadratic in the length of a piece (80 000 letters in a row took 5 s of
// CPU); ordinary words are far shorter, so only pathological runs (one
// character repeated, a long unbroken token) are cut into maxPiece-byte
// chunks and each chunk is counted on its own. Their count becomes an
// estimate (a chunk boundary may split what would be one token), which is
// all count_tokens promises; everything else is counted exactly.
const maxPiece = 64

// checkEvery is how many pieces are counted between looks at the
// request's context.
const checkEvery = 4096

func encoding() (*tiktoken.Tiktoken, error) {
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(rankLoader{})
		enc, encErr = tiktoken.GetEncoding(estimateEncoding)
	})
	return enc, encErr
}

// counter counts the tokens of texts with a per-request memo of pieces:
// text repeats words, and a run cut into chunks repeats its chunks.
type counter struct {
	ctx   context.Context
	enc   *tiktoken.Tiktoken
	memo  map[string]int
	steps int
}

func (c *counter) count(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	var n int64
	m, err := pieces.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = pieces.FindNextMatch(m) {
		p := m.String()
		for len(p) > maxPiece {
			if err := c.tick(); err != nil {
				return 0, err
			}
			cut := maxPiece
			for cut > 0 && !utf8.RuneStart(p[cut]) {
				cut--
			}
			if cut == 0 {
				cut = maxPiece
			}
			n += int64(c.piece(p[:cut]))
			p = p[cut:]
		}
		if err := c.tick(); err != nil {
			return 0, err
		}
		n += int64(c.piece(p))
	}
	if err != nil {
		return 0, fmt.Errorf("split text: %w", err)
	}
	return n, nil
}

// tick counts one step of work and looks at the context now and then.
func (c *counter) tick() error {
	if c.steps++; c.steps%checkEvery == 0 {
		return c.ctx.Err()
	}
	return nil
}

func (c *counter) piece(p string) int {
	if v, ok := c.memo[p]; ok {
		return v
	}
	v := len(c.enc.EncodeOrdinary(p))
	if len(c.memo) < 1<<16 {
		c.memo[p] = v
	}
	return v
}

// estimateSize is the number of bytes EstimateTokens would read.
func estimateSize(req *loop.UpstreamRequest) int64 {
	var n int64
	for _, m := range req.Messages {
		n += int64(len(m.Role) + len(m.Text))
		for _, tc := range m.ToolCalls {
			n += int64(len(tc.Name) + len(tc.Args))
		}
	}
	for _, f := range req.Tools {
		n += int64(len(f.Name) + len(f.Description) + len(f.Parameters))
	}
	return n
}

// EstimateTokens estimates the input tokens of an upstream request with
// the embedded tokenizer (method above). Its time is linear in the text;
// it stops with ctx's error when ctx ends.
func EstimateTokens(ctx context.Context, req *loop.UpstreamRequest) (int64, error) {
	e, err := encoding()
	if err != nil {
		return 0, fmt.Errorf("tokenizer %s: %w", estimateEncoding, err)
	}
	c := &counter{ctx: ctx, enc: e, memo: map[string]int{}}
	n := int64(perRequest)
	add := func(s string) error {
		k, err := c.count(s)
		n += k
		return err
	}
	for _, m := range req.Messages {
		n += perMessage
		if err := add(string(m.Role)); err != nil {
			return 0, err
		}
		if err := add(m.Text); err != nil {
			return 0, err
		}
		for _, p := range m.Parts {
			if p.Type == "image" || p.Type == "image_url" {
				n += perImage
			}
		}
		for _, tc := range m.ToolCalls {
			if err := add(tc.Name); err != nil {
				return 0, err
			}
			if err := add(string(tc.Args)); err != nil {
				return 0, err
			}
		}
	}
	for _, f := range req.Tools {
		params := f.Parameters
		var buf bytes.Buffer
		if len(params) == 0 || json.Compact(&buf, params) != nil {
			buf.Reset()
			buf.WriteString(`{"type":"object"}`)
		}
		b, err := marshal(toolDefinition{Name: f.Name, Description: f.Description, InputSchema: buf.Bytes()})
		if err != nil {
			return 0, err
		}
		n += perTool
		if err := add(string(b)); err != nil {
			return 0, err
		}
	}
	return n, nil
}
