package tools_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// TestApprovalRefusalsAreCounted: a call that needs an approval nobody
// can give (approval_required) and one its user declines while it waits
// (approval_declined) are both refusals at authorization, by reason.
func TestApprovalRefusalsAreCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	r := newApprovalRig(t, catalog.SideEffectIrreversible, tools.Options{Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	no := func(context.Context, tools.ApprovalRequest) (approval.Decision, error) {
		return approval.Decision{By: "terminal", Via: approval.ViaTerminal}, nil
	}
	if o := r.call(t, `{}`, nil); o.Code != tools.CodeApprovalRequired {
		t.Fatalf("without a confirmer: %+v", o)
	}
	if o := r.call(t, `{}`, no); o.Code != tools.CodeApprovalDeclined {
		t.Fatalf("declined: %+v", o)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "toolhost.tool.refusals" {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			got[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
		}
	}
	want := map[string]int64{
		"toolhost.reason=approval_required,toolhost.stage=authorization_rejected": 1,
		"toolhost.reason=approval_declined,toolhost.stage=authorization_rejected": 1,
	}
	if len(got) != len(want) || got[`toolhost.reason=approval_required,toolhost.stage=authorization_rejected`] != 1 ||
		got[`toolhost.reason=approval_declined,toolhost.stage=authorization_rejected`] != 1 {
		t.Errorf("refusals %v, want %v", got, want)
	}
}
