package v1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/v1/loop"
)

// Options configure the /v1 handlers.
type Options struct {
	// Label selects our hosted tools (server_label) and names the extension
	// field. Default "toolhost".
	Label string
	// Enabled: hosted tools are offered in this deployment. When false a
	// declaration is refused with hosted_tools_disabled.
	Enabled bool
	Runner  *loop.Runner
	Router  *loop.Router
	// DefaultMaxToolRounds applies when the request does not set
	// max_tool_rounds (default 8); MaxToolRoundsLimit is the largest value a
	// request may set (default 32).
	DefaultMaxToolRounds int
	MaxToolRoundsLimit   int
	// Budgets bound every hosted run (hosted.budgets); KeyBudgets gives the
	// caller's API key's own, applied where tighter (nil: keys have none).
	Budgets    loop.Budgets
	KeyBudgets func(ctx context.Context, keyID string) (loop.Budgets, error)
	// Rounds stores round records for GET /v1/tool-rounds; nil disables it.
	Rounds *RoundStore
	// Idempotency stores whole responses by Idempotency-Key; nil makes one
	// in memory.
	Idempotency *IdempotencyStore
	// MaxBodyBytes caps a request body (default 16 MiB).
	MaxBodyBytes int64
	// MaxEstimateBytes caps the text count_tokens estimates with the
	// embedded tokenizer (default 4 MiB, about a second of CPU); more is
	// a 413 too_large_to_estimate.
	MaxEstimateBytes int64
	Logger           *slog.Logger
}

// Handler serves the /v1 routes.
type Handler struct {
	opts Options
	// req is set on the copy serving one request (published.go).
	req *requestCatalog
}

// DefaultLabel is Options.Label's default (and hosted.label's).
const DefaultLabel = "toolhost"

// New returns the handler.
func New(opts Options) *Handler {
	if opts.Label == "" {
		opts.Label = DefaultLabel
	}
	if opts.DefaultMaxToolRounds <= 0 {
		opts.DefaultMaxToolRounds = 8
	}
	if opts.MaxToolRoundsLimit <= 0 {
		opts.MaxToolRoundsLimit = 32
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 16 << 20
	}
	if opts.MaxEstimateBytes <= 0 {
		opts.MaxEstimateBytes = 4 << 20
	}
	if opts.Idempotency == nil {
		opts.Idempotency = NewIdempotencyStore(0, 0)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{opts: opts}
}

// budgets are the bounds of a run by the caller's key: the server's, each
// lowered by the key's where the key's is lower.
func (h *Handler) budgets(ctx context.Context, keyID string) (loop.Budgets, error) {
	b := h.opts.Budgets
	if h.opts.KeyBudgets == nil || keyID == "" {
		return b, nil
	}
	kb, err := h.opts.KeyBudgets(ctx, keyID)
	if err != nil {
		return b, fmt.Errorf("budgets of key %s: %w", keyID, err)
	}
	return b.Tighter(kb), nil
}

// Routes are the patterns to mount (server.Options.Routes).
func (h *Handler) Routes() map[string]http.Handler {
	m := map[string]http.Handler{
		// Each format is a face (face.go) served the same way.
		"POST /v1/chat/completions": h.handle(chatFace{h}),
		// Anthropic Messages format (messages.go, count_tokens.go).
		"POST /v1/messages":              h.handle(messagesFace{h}),
		"POST /v1/messages/count_tokens": http.HandlerFunc(h.countTokens),
		// OpenAI Responses format (responses.go, responses_stream.go).
		"POST /v1/responses": h.handle(responsesFace{h}),
	}
	if h.opts.Rounds != nil {
		m["GET /v1/tool-rounds"] = http.HandlerFunc(h.opts.Rounds.serve)
	}
	return m
}

// requestID is the id of a /v1 request: the extension field's request_id
// and the journal floor_id of its hosted calls.
func requestID(ctx context.Context) string {
	id := server.RequestIDFrom(ctx)
	if strings.HasPrefix(id, "req_") {
		return id
	}
	return "req_" + strings.ReplaceAll(id, "-", "")
}

// lang is the language of a /v1 request (catalog.RequestLang decides).
func lang(r *http.Request) catalog.Lang {
	return catalog.RequestLang(catalog.FaceHosted, r.Header.Get("Accept-Language"))
}

func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *requestError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &requestError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", reason: "body_too_large", message: fmt.Sprintf("the body is larger than %d bytes", mbe.Limit)}
		}
		return nil, badRequest(ReasonInvalidRequest, "", "reading the body: "+err.Error())
	}
	// Duplicate keys ("model":"a","model":"b") and trailing data are
	// refused at any depth: encoding/json would silently keep the last.
	if err := wire.Check(body); err != nil {
		return nil, badRequest(ReasonInvalidJSON, "", "the body is not a strict JSON object: "+strings.TrimPrefix(err.Error(), wire.ErrNotStrict.Error()+": "))
	}
	return body, nil
}

// runError turns a failed run into the caller's error.
func (h *Handler) runError(ctx context.Context, err error) *requestError {
	var ue *loop.UpstreamError
	var ae *loop.ApprovalError
	switch {
	case errors.As(err, &ae):
		return approvalError(ae)
	case errors.Is(err, loop.ErrModelUnavailable):
		return &requestError{status: http.StatusServiceUnavailable, code: "model_unavailable", reason: "model_unavailable", message: err.Error()}
	case errors.As(err, &ue) && ue.Status >= 400 && ue.Status < 500:
		e := &requestError{status: ue.Status, code: "upstream_rejected", reason: "upstream_rejected", message: upstreamMessage(ue)}
		return e
	case errors.As(err, &ue):
		return &requestError{status: http.StatusBadGateway, code: "upstream_error", reason: "upstream_error", message: upstreamMessage(ue)}
	case errors.Is(err, loop.ErrBadAnswer):
		h.opts.Logger.WarnContext(ctx, "upstream answer unreadable", "request_id", requestID(ctx), "client_request_id", server.ClientRequestIDFrom(ctx), "err", err)
		return &requestError{status: http.StatusBadGateway, code: "upstream_error", reason: "upstream_error",
			message: err.Error() + "; the error was logged with request id " + requestID(ctx)}
	case errors.Is(err, loop.ErrInternal):
		h.opts.Logger.ErrorContext(ctx, "hosted loop failed", "request_id", requestID(ctx), "client_request_id", server.ClientRequestIDFrom(ctx), "err", err)
		return &requestError{status: http.StatusInternalServerError, code: "internal_error", reason: "internal_error", message: "the hosted tool runtime failed; the error was logged with request id " + requestID(ctx)}
	default:
		// The error names the route's URL and the addresses dialled: the
		// log keeps it, the caller gets the kind of failure.
		h.opts.Logger.WarnContext(ctx, "upstream call failed", "request_id", requestID(ctx), "client_request_id", server.ClientRequestIDFrom(ctx), "err", err)
		return &requestError{status: http.StatusBadGateway, code: "upstream_error", reason: "upstream_error",
			message: "the upstream model API could not be reached (" + egress.Describe(err) + "); the error was logged with request id " + requestID(ctx)}
	}
}

// readMembers splits a request body into its members; every format refuses
// a body that is not one JSON object the same way.
func readMembers(body []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return nil, badRequest(ReasonInvalidJSON, "", "the body is not a JSON object: "+err.Error())
	}
	if dec.More() {
		return nil, badRequest(ReasonInvalidJSON, "", "the body has data after the JSON object")
	}
	return top, nil
}

// options are the members of a request a face does not consume (fields,
// a struct of the members it reads) nor the extension field: what goes on
// to the upstream.
func (h *Handler) options(members map[string]json.RawMessage, fields any) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(members))
	for k, v := range members {
		if k != h.opts.Label {
			out[k] = v
		}
	}
	for _, k := range wire.Names(fields) {
		delete(out, k)
	}
	return out
}
