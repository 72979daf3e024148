package instrument

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestMetaCarrierRoundTrip(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	})
	prop := propagation.TraceContext{}
	meta := MetaCarrier{"progressToken": 7.0}
	prop.Inject(trace.ContextWithSpanContext(context.Background(), sc), meta)
	if got := meta.Get("traceparent"); got != "00-01020300000000000000000000000000-0405060000000000-01" {
		t.Fatalf("traceparent = %q", got)
	}
	if keys := meta.Keys(); !slices.Contains(keys, "traceparent") || !slices.Contains(keys, "progressToken") {
		t.Errorf("Keys = %v, want traceparent and progressToken", keys)
	}
	got := trace.SpanContextFromContext(prop.Extract(context.Background(), meta))
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsRemote() {
		t.Errorf("extracted %v, want the injected %v", got, sc)
	}
}

func TestMetaCarrierHostileMembers(t *testing.T) {
	tests := []struct {
		name string
		meta MetaCarrier
	}{
		{"nil", nil},
		{"traceparent a number", MetaCarrier{"traceparent": 1.0}},
		{"traceparent an object", MetaCarrier{"traceparent": map[string]any{"version": "00"}}},
		{"traceparent an array", MetaCarrier{"traceparent": []any{"00-01020300000000000000000000000000-0405060000000000-01"}}},
		{"traceparent garbage", MetaCarrier{"traceparent": "00-\u202e-zz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), tt.meta))
			if sc.IsValid() {
				t.Errorf("extracted a span context %v from %v", sc, tt.meta)
			}
		})
	}
}
