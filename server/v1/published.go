package v1

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// requestCatalog is the set of hosted tools one request's caller may
// declare: the published tools plus the account's custom and preset tools,
// its session's character tools and its remote MCP servers' tools as
// toolhost knows them (loop.Runner.Published; no server is asked). It is
// read once, and only when the request declares hosted tools.
type requestCatalog struct {
	ctx     context.Context
	account string
	session string
	done    bool
	cat     loop.Catalog
	err     error
}

// scoped returns h for one request: its declarations are checked against
// the caller's own hosted tools.
func (h *Handler) scoped(r *http.Request, body []byte) *Handler {
	c := *h
	id, _ := identity.FromContext(r.Context())
	c.req = &requestCatalog{ctx: r.Context(), account: id.AccountID, session: sessionID(r, peekMetadata(body))}
	return &c
}

// peekMetadata reads the string values of the body's metadata, where the
// session id may be, before the format's own parse; a malformed metadata
// is that parse's to refuse.
func peekMetadata(body []byte) map[string]string {
	var top struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	md := map[string]string{}
	for k, v := range top.Metadata {
		var s string
		if json.Unmarshal(v, &s) == nil {
			md[k] = s
		}
	}
	return md
}

// published is the catalog declarations are checked against. Until the
// caller's tools are read (or when they cannot be: catalogError) it is
// the published tools.
func (h *Handler) published() loop.Catalog {
	rc := h.req
	if rc == nil {
		return h.opts.Runner.Catalog()
	}
	if !rc.done {
		rc.done = true
		rc.cat, rc.err = h.opts.Runner.Published(rc.ctx, rc.account, rc.session)
	}
	if rc.err != nil {
		return h.opts.Runner.Catalog()
	}
	return rc.cat
}

// runCatalog is the catalog a run looks its hosted tools up in: the one
// the declaration was checked against (nil: the published tools).
func (h *Handler) runCatalog() loop.Catalog {
	if h.req == nil || !h.req.done || h.req.err != nil {
		return nil
	}
	return h.req.cat
}

// catalogError is the refusal of a request whose caller's custom tools
// or MCP servers could not be read: a 503, not a misleading
// unknown_hosted_tool.
func (h *Handler) catalogError(ctx context.Context) *requestError {
	if h.req == nil || h.req.err == nil {
		return nil
	}
	h.opts.Logger.ErrorContext(ctx, "hosted tools of the caller could not be read", "request_id", requestID(ctx), "err", h.req.err)
	return &requestError{status: http.StatusServiceUnavailable, code: "hosted_tools_unavailable", reason: "hosted_tools_unavailable",
		message: "the account's custom tools or MCP servers could not be read; retry shortly (logged with request id " + requestID(ctx) + ")"}
}

func (chatFace) with(h *Handler) face      { return chatFace{h} }
func (messagesFace) with(h *Handler) face  { return messagesFace{h} }
func (responsesFace) with(h *Handler) face { return responsesFace{h} }
