package mcpremote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/instrument"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/tools"
)

// Codes of remote calls besides tools.CodeUpstreamUnavailable and
// tools.CodeOutcomeUnknown.
const (
	// CodeUpstreamError: the server answered the call with a protocol
	// error (unknown tool, invalid params) or a remote isError result.
	CodeUpstreamError = "upstream_error"
	// CodeUpstreamTimeout: the server did not answer within its timeout
	// (a tool without side effects; with side effects it is
	// outcome_unknown).
	CodeUpstreamTimeout = "upstream_timeout"
	// CodeUpstreamTooLarge: the answer was over the size cap.
	CodeUpstreamTooLarge = "upstream_result_too_large"
	// CodeUpstreamTooDeep: the answer nested deeper than a Go MCP client
	// reads (depth.go); it was cut off or not relayed.
	CodeUpstreamTooDeep = "upstream_result_too_deep"
	// CodeUpstreamBusy: every slot of the server's concurrency cap stayed
	// taken until the deadline.
	CodeUpstreamBusy = "upstream_busy"
)

// codeRejectedByTransport is the JSON-RPC code the SDK wraps a transport
// failure in (its jsonrpc2.ErrRejected): the request failed on the way,
// the server did not answer it with an error.
const codeRejectedByTransport = -32005

// remoteTool is one remote tool as a tools.Tool.
type remoteTool struct {
	g          *Gateway
	srv        Server
	remoteName string
	spec       catalog.Spec
	timeout    time.Duration
}

func (t *remoteTool) Spec() catalog.Spec { return t.spec }

// Call sends the call, retrying only as the package doc says.
func (t *remoteTool) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	l := t.g.linkFor(t.srv)
	select {
	case l.sem <- struct{}{}:
		defer func() { <-l.sem }()
	case <-ctx.Done():
		return nil, &tools.Error{Code: CodeUpstreamBusy, RetryAfter: time.Second,
			Message: fmt.Sprintf("the MCP server %s already has %d calls in flight from this account; none finished in time", t.srv.Name, cap(l.sem))}
	}
	// A progress token goes upstream only when the caller asked for
	// progress: with one, the server may send notifications nobody reads
	// (and the SDK decodes the request's _meta on both sides).
	token := ""
	if inv.WantsProgress() {
		token = inv.ID
		l.progress.Store(token, inv.Progress)
		defer l.progress.Delete(token)
	}

	// Every attempt is reported to the journal (§6.9): its number, its
	// invocation id (sent in _meta), the backoff and jitter waited before
	// it, the deadline left, and how it ended. A retry waits only when it
	// fits in the call's one deadline.
	var backoff, jitter time.Duration
	for attempt := 1; ; attempt++ {
		a := tools.Attempt{No: attempt, InvocationID: invocationID(inv.ID, attempt), BackoffMS: (backoff + jitter).Milliseconds(),
			JitterMS: jitter.Milliseconds(), DeadlineMS: left(ctx)}
		tr := &tracker{}
		actx, span := t.startAttempt(ctx, attempt)
		retry, res, err := t.attempt(actx, l, inv, token, attempt, a.InvocationID, tr)
		seen := tr.get()
		endAttempt(span, seen.status, err)
		a.HTTPStatus = seen.status
		if retry {
			backoff, jitter = t.g.backoff(attempt, seen.status, seen.retryAfter)
			retry = fits(ctx, backoff+jitter)
		}
		a.Outcome, a.Code = attemptOutcome(retry, err)
		inv.Attempted(a)
		if !retry {
			return res, err
		}
		if werr := t.g.opts.Wait(ctx, backoff+jitter); werr != nil {
			return nil, err // the caller went away while waiting: the last attempt's failure
		}
	}
}

// attempt makes one try; retry says another may follow (the loop above
// decides when), and err is then why this one failed.
func (t *remoteTool) attempt(ctx context.Context, l *link, inv *tools.Invocation, token string, attempt int, invocation string, tr *tracker) (bool, *tools.Result, error) {
	sess, err := l.session(ctx)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return false, nil, ctx.Err()
		}
		if code := AuthFailureCode(err); code != "" {
			return false, nil, tools.Errorf(code, "the MCP server %s's token could not be obtained: %s; the call was not sent", t.srv.Name, describe(err))
		}
		return false, nil, tools.Errorf(tools.CodeUpstreamUnavailable, "the MCP server %s cannot be reached: %s; the call was not sent", t.srv.Name, describe(err))
	}
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	tr.set(func(tr *tracker) { tr.cancel = ccancel })
	params := &sdk.CallToolParams{Name: t.remoteName, Arguments: json.RawMessage(inv.Args), Meta: sdk.Meta{MetaInvocationID: invocation}}
	if token != "" {
		params.SetProgressToken(token)
	}
	if p := t.g.opts.Propagator; p != nil {
		p.Inject(cctx, instrument.MetaCarrier(params.Meta))
	}
	res, err := sess.CallTool(withTracker(cctx, tr), params)
	if err == nil {
		r, rerr := t.result(res)
		return false, r, rerr
	}
	seen := tr.get()
	var werr *jsonrpc.Error
	switch {
	case AuthFailureCode(err) != "":
		// The token (refresh or client credentials) failed before the
		// call was sent.
		l.reset(sess)
		return false, nil, tools.Errorf(AuthFailureCode(err), "the MCP server %s's token could not be obtained: %s; the call was not sent", t.srv.Name, describe(err))
	case seen.tooLarge || errors.Is(err, errTooLarge):
		l.reset(sess)
		return false, nil, tools.Errorf(CodeUpstreamTooLarge, "the MCP server %s answered with more than %d bytes; toolhost cut it off. Ask for less", t.srv.Name, t.g.opts.MaxResultBytes)
	case seen.tooDeep || isTooDeep(err):
		// The server answered; sending again would get the same answer.
		l.reset(sess)
		return false, nil, tooDeep("the MCP server %s answered with a message nested more than %d levels deep", t.srv.Name, maxMessageDepth)
	case seen.notSent || seen.status == http.StatusNotFound || errors.Is(err, sdk.ErrSessionMissing):
		// Never reached the server's tool (no connection, or a session
		// the server no longer knows): safe to send once more. Checked
		// before the JSON-RPC error: the SDK wraps a failed connection in
		// one (its "rejected by transport"), which is not the server
		// refusing anything.
		l.reset(sess)
		return attempt < 2 && ctx.Err() == nil, nil, tools.Errorf(tools.CodeUpstreamUnavailable, "the MCP server %s cannot be reached: %s; the call was not run", t.srv.Name, describe(err))
	case seen.status == http.StatusServiceUnavailable || seen.status == http.StatusTooManyRequests:
		// The server refused the request before running it: a read is
		// tried again after a backoff (the loop), a write is not (§6.9:
		// first decide whether it may have taken effect).
		again := t.spec.SideEffect == catalog.SideEffectNone && attempt < maxReadAttempts && ctx.Err() == nil
		return again, nil, tools.Errorf(tools.CodeUpstreamUnavailable, "the MCP server %s answered HTTP %d (%s); the call was not run, try again later",
			t.srv.Name, seen.status, http.StatusText(seen.status))
	case errors.As(err, &werr) && werr.Code != codeRejectedByTransport:
		return false, nil, &tools.Error{Code: CodeUpstreamError, Message: fmt.Sprintf("the MCP server %s refused the call: %s", t.srv.Name, quote(werr.Message)),
			Details: upstreamRefused{UpstreamCode: werr.Code}}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		if t.spec.SideEffect == catalog.SideEffectNone {
			return false, nil, tools.Errorf(CodeUpstreamTimeout, "the MCP server %s did not answer within %s", t.srv.Name, t.timeout)
		}
		return false, nil, tools.Errorf(tools.CodeOutcomeUnknown, "the MCP server %s did not answer within %s; the call may or may not have taken effect (check before calling again)", t.srv.Name, t.timeout)
	case ctx.Err() != nil:
		return false, nil, ctx.Err()
	}
	// Lost after sending: the outcome is unknown.
	l.reset(sess)
	if t.spec.SideEffect == catalog.SideEffectNone && attempt < 2 {
		return true, nil, tools.Errorf(tools.CodeUpstreamUnavailable, "the connection to the MCP server %s was lost: %s", t.srv.Name, describe(err))
	}
	if t.spec.SideEffect == catalog.SideEffectNone {
		return false, nil, tools.Errorf(tools.CodeUpstreamUnavailable, "the connection to the MCP server %s was lost twice: %s", t.srv.Name, describe(err))
	}
	return false, nil, tools.Errorf(tools.CodeOutcomeUnknown, "the connection to the MCP server %s was lost after the call was sent (%s); it may or may not have taken effect, so toolhost does not retry it", t.srv.Name, describe(err))
}

// quoteRunes bounds a remote server's words an error message quotes: with
// the fence and the message around it, the message stays within the
// executor's bound (clip.MessageRunes), so its end is never cut.
const quoteRunes = clip.MessageRunes * 3 / 4

// quote is a remote server's words in an error message: cut, then fenced
// as untrusted data.
func quote(s string) string { return tools.Fence(clip.Runes(s, quoteRunes)) }

// result turns the remote result into a toolhost result: text is
// untrusted, structuredContent and isError are kept.
func (t *remoteTool) result(res *sdk.CallToolResult) (*tools.Result, error) {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource %s %s]", c.Name, c.URI)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
			}
		}
	}
	text := b.String()
	if err := t.checkDepth(res); err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, &tools.Error{Code: CodeUpstreamError, Message: fmt.Sprintf("the MCP server %s reported an error: %s", t.srv.Name, quote(text)),
			Details: upstreamReported{StructuredContent: res.StructuredContent, UpstreamIsError: true}}
	}
	var structured any
	if m, ok := res.StructuredContent.(wire.Object); ok {
		structured = m
	} else if res.StructuredContent != nil {
		structured = wrapped{Value: res.StructuredContent}
	}
	if text == "" && structured == nil {
		text = "(the tool returned no content)"
	}
	return &tools.Result{Structured: structured, Text: text, Summary: t.srv.Name + ": " + t.remoteName, Untrusted: true}, nil
}

// checkDepth refuses a structuredContent that, as toolhost relays it,
// would nest deeper than a Go MCP client reads (depth.go). An object is
// relayed where it came and fits as the server's message did, so it is
// not walked: only a wrapped value and an error's are, which are rare.
func (t *remoteTool) checkDepth(res *sdk.CallToolResult) error {
	if res.StructuredContent == nil {
		return nil
	}
	_, isObject := res.StructuredContent.(wire.Object)
	switch {
	case res.IsError && depthOver(res.StructuredContent, maxErrorValueDepth):
		return tooDeep("the MCP server %s reported an error whose structuredContent nests more than %d levels deep", t.srv.Name, maxErrorValueDepth)
	case !res.IsError && !isObject && depthOver(res.StructuredContent, maxWrappedDepth):
		return tooDeep("the MCP server %s answered with a structuredContent that is not an object and nests more than %d levels deep (toolhost wraps it as {\"value\": …}, a level more)", t.srv.Name, maxWrappedDepth)
	}
	return nil
}

// tooDeep is the tool error of an answer nested too deep; format names
// the server, then the limit.
func tooDeep(format, server string, limit int) error {
	return &tools.Error{Code: CodeUpstreamTooDeep,
		Message: fmt.Sprintf(format, server, limit) + "; toolhost does not relay it (MCP clients refuse a message nested more than 1000 levels deep)",
		Details: tooDeepDetails{MaxDepth: limit}}
}

// The details of the errors above and the wrapped structuredContent: the
// fields are declared in sorted order of their names, as the maps they
// replaced wrote them.
type (
	// upstreamRefused: the server answered the call with a JSON-RPC error.
	upstreamRefused struct {
		UpstreamCode int64 `json:"upstream_code"`
	}
	// upstreamReported: the server's result had isError, with its
	// structuredContent (arbitrary JSON) when it sent one.
	upstreamReported struct {
		StructuredContent any  `json:"structured_content,omitempty"`
		UpstreamIsError   bool `json:"upstream_is_error"`
	}
	tooDeepDetails struct {
		MaxDepth int `json:"max_depth"`
	}
	// wrapped is a structuredContent that is not an object, as toolhost
	// relays it (an output is an object).
	wrapped struct {
		Value any `json:"value"`
	}
)
