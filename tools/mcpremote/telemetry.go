package mcpremote

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/tools"
)

// scopeName is the instrumentation scope of the remote calls' spans.
const scopeName = "github.com/toolhost/toolhost/tools/mcpremote"

// startAttempt opens the client span of one attempt of a call, by the
// MCP semantic conventions ("tools/call {tool}", the remote tool's own
// name): each attempt its own span, so a retried call shows every try.
func (t *remoteTool) startAttempt(ctx context.Context, attempt int) (context.Context, trace.Span) {
	return t.g.opts.Tracer.Tracer(scopeName).Start(ctx, "tools/call "+t.remoteName, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("mcp.method.name", "tools/call"),
			attribute.String("gen_ai.tool.name", t.remoteName),
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("toolhost.mcp_server.id", t.srv.ID),
			attribute.Int("toolhost.attempt", attempt),
		))
}

// endAttempt closes an attempt's span with the HTTP status it saw and
// the tool error code it ended with (error.type).
func endAttempt(span trace.Span, status int, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err != nil {
		et := "_OTHER"
		var te *tools.Error
		switch {
		case errors.As(err, &te):
			et = te.Code
		case errors.Is(err, context.Canceled):
			et = "cancelled"
		case status >= 400:
			et = strconv.Itoa(status)
		}
		span.SetAttributes(attribute.String("error.type", et))
		span.SetStatus(codes.Error, et)
	}
	span.End()
}
