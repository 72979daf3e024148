package mcp

import (
	"context"
	"reflect"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/instrument"
	"github.com/toolhost/toolhost/server"
)

// telemetry is the MCP face's instrumentation: one server span per
// request, named and described by the MCP semantic conventions (span
// "tools/call get_time", mcp.method.name, mcp.session.id,
// gen_ai.tool.name, error.type "tool_error" for an isError result), and
// mcp.server.operation.duration by method, tool and error type. The trace
// context comes from the request's _meta (traceparent, tracestate: the
// conventions' carrier for MCP) when it has one, else from the headers of
// the HTTP request that carried it (not from the context: a session's is
// the one of the request that opened it).
type telemetry struct {
	tracer   trace.Tracer
	tracing  bool // false for the no-op provider: no span is started
	prop     propagation.TextMapPropagator
	duration metric.Float64Histogram
	sets     *instrument.AttrSets[opLabels, instrument.Set]
}

// opLabels are an operation's metric labels (each bounded); newOpSet
// builds their attributes and metric option, once per combination (the
// telemetry's sets keep them) so a request allocates none.
type opLabels struct{ method, tool, errType string }

func newOpSet(k opLabels) instrument.Set {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", k.method)}
	if k.tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", k.tool))
	}
	if k.errType != "" {
		attrs = append(attrs, attribute.String("error.type", k.errType))
	}
	return instrument.NewSet(attrs...)
}

func newTelemetry(t *server.Telemetry) *telemetry {
	if t == nil {
		return nil
	}
	dur := instrument.Float64Histogram(t.Meter.Meter(server.ScopeName), "mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
	noTraces, _ := instrument.Off(t.Tracer, t.Meter)
	return &telemetry{tracer: t.Tracer.Tracer(server.ScopeName), tracing: !noTraces, prop: t.Propagator, duration: dur,
		sets: instrument.NewAttrSets(newOpSet)}
}

// mcpMethods are the method names a metric label may take; any other is
// _OTHER, so a client cannot grow the label's values.
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/read": true,
	"resources/templates/list": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"logging/setLevel": true, "completion/complete": true, "notifications/initialized": true,
	"notifications/cancelled": true, "notifications/progress": true, "notifications/roots/list_changed": true,
	"server/discover": true, "subscriptions/listen": true, "notifications/elicitation/complete": true,
}

// traced is the outermost receiving middleware.
func (s *Server) traced(next sdk.MethodHandler) sdk.MethodHandler {
	tel := s.tel
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		start := time.Now()
		// A session's context is the one of the request that opened it, so
		// a span it carries belongs to that request: each request starts
		// from its own headers.
		ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
		if extra := req.GetExtra(); extra != nil {
			ctx = tel.prop.Extract(ctx, propagation.HeaderCarrier(extra.Header))
		}
		meta := metaOf(req.GetParams())
		if _, ok := meta["traceparent"].(string); ok {
			ctx = tel.prop.Extract(ctx, instrument.MetaCarrier(meta))
		}
		label := method
		if !mcpMethods[label] {
			label = "_OTHER"
		}
		tool := ""
		if ct, ok := req.(*sdk.CallToolRequest); ok && ct.Params != nil {
			tool = ct.Params.Name
		}
		span := trace.SpanFromContext(context.Background()) // none unless traced
		if tel.tracing {
			name := label
			if tool != "" {
				name += " " + clip.Runes(tool, 128)
			}
			ctx, span = tel.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
		}
		res, err := next(ctx, method, req)
		k := opLabels{method: label}
		if tool != "" {
			k.tool = s.toolLabel(tool)
		}
		if err != nil {
			k.errType = "jsonrpc_error"
			span.SetStatus(codes.Error, err.Error())
		} else if r, ok := res.(*sdk.CallToolResult); ok && r.IsError {
			k.errType = "tool_error"
			span.SetStatus(codes.Error, "tool_error")
		}
		ls := tel.sets.Get(k)
		if span.IsRecording() {
			span.SetAttributes(ls.Attrs...)
			if tool != "" {
				span.SetAttributes(attribute.String("gen_ai.tool.name", clip.Runes(tool, 128)), attribute.String("gen_ai.operation.name", "execute_tool"))
			}
			if ss := req.GetSession(); ss != nil && ss.ID() != "" {
				span.SetAttributes(attribute.String("mcp.session.id", ss.ID()))
			}
		}
		span.End()
		tel.duration.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(), ls.Option)
		return res, err
	}
}

// toolLabel is a tool's name as a metric label: the name of a builtin
// (the executor's catalog and the session builtins), else "_other" (an
// account's own tools are the account's to name; a client may send any
// name).
func (s *Server) toolLabel(name string) string {
	if _, ok := s.exec.Catalog().Lookup(name); ok {
		return name
	}
	for _, spec := range s.exec.SessionSpecs() {
		if spec.Name == name {
			return name
		}
	}
	return "_other"
}

// metaOf is a request's _meta; nil when the request has no params (a
// notification without any arrives as a nil pointer in the interface).
func metaOf(p sdk.Params) map[string]any {
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}
