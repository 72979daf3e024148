package v1

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// face is one /v1 wire format. Every format goes the same way (serve):
// parse the body into a request, pick a route, run the loop, then render
// the result whole or stream its events; only the shapes differ.
type face interface {
	// parse reads and checks a body; a refusal is a *requestError.
	parse(r *http.Request, body []byte) (request, error)
	// writeError answers with the format's error body.
	writeError(w http.ResponseWriter, e *requestError)
	// with is the face on the handler of one request (published.go).
	with(h *Handler) face
}

// request is a parsed request of one face.
type request interface {
	common() *hostedRequest
	// prepare runs once the run is known, before the loop (a failure is
	// answered as a failed run).
	prepare(run *loop.Run) error
	// render is the body of a finished run.
	render(run *loop.Run, res *loop.Result) any
	// stream renders the run's events on w.
	stream(w http.ResponseWriter) stream
}

// stream renders loop events as the server-sent events of one format.
type stream interface {
	event(ev loop.Event) error // the loop's sink
	// finish ends the stream of a run that succeeded.
	finish(run *loop.Run, res *loop.Result)
	// fail ends a started stream with an error event.
	fail(e *requestError)
	// begun reports whether an event went out (the status is sent).
	begun() bool
}

// hostedRequest is what every format's request holds once checked.
type hostedRequest struct {
	loop     loop.Request
	hosted   loop.Hosted
	declared bool // the request declared our hosted tools
	metadata map[string]string
	// search is the web search the request asked for, served by the
	// hosted web_search (nil when none; responses_websearch.go).
	search *webSearchDecl
	// builtin says the request declared a vendor's built-in tool, which
	// only a route with tool calling serves.
	builtin bool
}

func (c *hostedRequest) common() *hostedRequest { return c }

// handle reads the body and serves it with f under Idempotency-Key.
func (h *Handler) handle(f face) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, rerr := h.readBody(w, r)
		if rerr != nil {
			f.writeError(w, rerr)
			return
		}
		// Declarations are checked against the caller's own hosted
		// tools (published.go).
		h := h.scoped(r, body)
		f := f.with(h)
		h.withIdempotency(w, r, body, func(w http.ResponseWriter) {
			h.serve(w, r, f, body)
		})
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, f face, body []byte) {
	ctx := r.Context()
	req, err := f.parse(r, body)
	if re := h.catalogError(ctx); re != nil {
		f.writeError(w, re)
		return
	}
	if err != nil {
		var re *requestError
		if !errors.As(err, &re) {
			re = badRequest(ReasonInvalidRequest, "", err.Error())
		}
		f.writeError(w, re)
		return
	}
	c := req.common()
	page, re := pageID(r, c.metadata)
	if re == nil {
		re = checkSessionID(r, c.metadata)
	}
	if re != nil {
		f.writeError(w, re)
		return
	}
	route, err := h.opts.Router.Pick(c.loop.Model, c.declared || c.builtin)
	if err != nil {
		f.writeError(w, h.runError(ctx, err))
		return
	}
	id, _ := identity.FromContext(ctx)
	budgets, err := h.budgets(ctx, id.KeyID)
	if err != nil {
		// Not run unbounded: the caller retries once the keys answer.
		h.opts.Logger.WarnContext(ctx, "hosted budgets unavailable", "request_id", requestID(ctx), "err", err)
		f.writeError(w, &requestError{status: http.StatusServiceUnavailable, code: "limits_unavailable", reason: "limits_unavailable",
			message: "the API key's hosted budgets could not be read; retry shortly (request id " + requestID(ctx) + ")"})
		return
	}
	run := &loop.Run{
		Request: c.loop,
		Hosted:  c.hosted,
		Route:   route,
		Catalog: h.runCatalog(),
		Lang:    lang(r),
		Budgets: budgets,
		Caller: loop.Caller{
			RequestID:      requestID(ctx),
			SessionID:      sessionID(r, c.metadata),
			PageID:         page,
			Slot:           r.Header.Get(SlotHeader),
			Identity:       id,
			TraceID:        server.ContextTraceID(ctx, r.Header),
			IdempotencyKey: r.Header.Get("Idempotency-Key"),
			Metadata:       c.metadata,
		},
	}
	if err := req.prepare(run); err != nil {
		f.writeError(w, h.runError(ctx, err))
		return
	}
	if !c.loop.Stream {
		res, err := h.opts.Runner.Run(ctx, run)
		if err != nil {
			if ctx.Err() != nil {
				return // the caller went away; nobody to answer
			}
			f.writeError(w, h.runError(ctx, err))
			return
		}
		server.WriteJSON(w, http.StatusOK, req.render(run, res))
		return
	}
	s := req.stream(w)
	run.Sink = s.event
	res, err := h.opts.Runner.Run(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		re := h.runError(ctx, err)
		if !s.begun() {
			f.writeError(w, re)
			return
		}
		// A broken stream must not be replayed to an idempotent retry.
		if d, ok := w.(interface{ discard() }); ok {
			d.discard()
		}
		s.fail(re)
		return
	}
	s.finish(run, res)
}

// extension is the extension field of a response (named by the label).
type extension struct {
	// ApprovalRequests are the calls a paused run waits for approvals of
	// (approvals.go); absent when none waits.
	ApprovalRequests *[]approvalRequest `json:"approval_requests,omitempty"`
	CostQuota        int64              `json:"cost_quota"`
	RequestID        string             `json:"request_id"`
	// StoppedBy names the budget that made the last call the final one
	// (loop.StopReason); absent when the model answered on its own.
	StoppedBy  string        `json:"stopped_by,omitempty"`
	ToolCalls  *[]hostedCall `json:"tool_calls,omitempty"`
	ToolRounds *int          `json:"tool_rounds,omitempty"`
}

// hostedCall is one hosted call as the extension field reports it; a start
// notice has no summary.
type hostedCall struct {
	ID      string      `json:"id"`
	MS      int64       `json:"ms"`
	Name    string      `json:"name"`
	Round   int         `json:"round"`
	Status  loop.Status `json:"status"`
	Summary *string     `json:"summary,omitempty"`
}

func reportCall(c loop.Call) hostedCall {
	summary := c.Summary
	return hostedCall{ID: c.ID, MS: c.MS(), Name: c.Name, Round: c.Round, Status: c.Status, Summary: &summary}
}

// extension is the extension field of a finished run: the totals, and the
// calls when hosted tools were declared.
func (h *Handler) extension(declared bool, run *loop.Run, res *loop.Result) extension {
	ext := extension{RequestID: run.Caller.RequestID, CostQuota: res.Cost}
	if declared {
		calls := make([]hostedCall, 0, len(res.Calls))
		for _, c := range res.Calls {
			calls = append(calls, reportCall(c))
		}
		rounds := res.ToolRounds()
		ext.ToolCalls, ext.ToolRounds = &calls, &rounds
		ext.StoppedBy = string(res.StoppedBy)
		ext.ApprovalRequests = h.approvalRequests(res)
	}
	return ext
}

// labelled is extra with v under the label (the extension field), for
// wire.Marshal; extra is not changed.
func (h *Handler) labelled(extra map[string]json.RawMessage, v any) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(extra)+1)
	for k, x := range extra {
		out[k] = x
	}
	// Only our own structs come here: they always encode.
	out[h.opts.Label], _ = marshal(v)
	return out
}
