package instrument

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func TestProvidersAndOff(t *testing.T) {
	sdkTP, sdkMP := sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider()
	tests := []struct {
		name                    string
		tp                      trace.TracerProvider
		mp                      metric.MeterProvider
		wantNoTraces, wantNoMet bool
	}{
		{"nil becomes no-op", nil, nil, true, true},
		{"no-op stays no-op", tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider(), true, true},
		{"sdk traces only", sdkTP, nil, false, true},
		{"sdk metrics only", nil, sdkMP, true, false},
		{"sdk both", sdkTP, sdkMP, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, mp := Providers(tt.tp, tt.mp)
			if tp == nil || mp == nil {
				t.Fatal("Providers returned a nil provider")
			}
			if tt.tp != nil && tp != tt.tp || tt.mp != nil && mp != tt.mp {
				t.Error("Providers replaced a provider it was given")
			}
			noT, noM := Off(tp, mp)
			if noT != tt.wantNoTraces || noM != tt.wantNoMet {
				t.Errorf("Off = %v, %v; want %v, %v", noT, noM, tt.wantNoTraces, tt.wantNoMet)
			}
		})
	}
}

func TestConstructorsPanicOnARefusedName(t *testing.T) {
	m := sdkmetric.NewMeterProvider().Meter("test")
	tests := []struct {
		name string
		make func(string)
	}{
		{"float64 histogram", func(n string) { Float64Histogram(m, n, metric.WithUnit("s")) }},
		{"int64 histogram", func(n string) { Int64Histogram(m, n, metric.WithUnit("{token}")) }},
		{"int64 counter", func(n string) { Int64Counter(m, n, metric.WithUnit("By")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.make("toolhost.ok." + tt.name[:3]) // a valid name: no panic
			defer func() {
				if recover() == nil {
					t.Error("a name the SDK refuses did not panic")
				}
			}()
			tt.make("1 not a name\u202e")
		})
	}
}

type labels struct {
	method string
	status int
}

func TestAttrSetsBuildsEachKeyOnce(t *testing.T) {
	var builds atomic.Int64
	sets := NewAttrSets(func(k labels) Set {
		builds.Add(1)
		return NewSet(attribute.String("m", k.method), attribute.Int("s", k.status))
	})
	keys := []labels{{"GET", 200}, {"GET", 500}, {"POST", 200}, {"", 0}, {"\u202eGET", 200}}
	var wg sync.WaitGroup
	got := make([][]Set, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range keys {
				got[g] = append(got[g], sets.Get(k))
			}
		}()
	}
	wg.Wait()
	for i, k := range keys {
		want := sets.Get(k)
		if len(want.Attrs) != 2 || want.Attrs[0].Value.AsString() != k.method || want.Attrs[1].Value.AsInt64() != int64(k.status) {
			t.Errorf("Get(%v).Attrs = %v", k, want.Attrs)
		}
		for g := range got {
			if &got[g][i].Attrs[0] != &want.Attrs[0] {
				t.Errorf("goroutine %d got a Set for %v other than the one kept", g, k)
			}
		}
	}
	// Concurrent first uses may each build, but never more than once per
	// caller and key; a later Get builds nothing.
	before := builds.Load()
	if before < int64(len(keys)) || before > int64(len(keys)*len(got)) {
		t.Errorf("builds = %d, want between %d and %d", before, len(keys), len(keys)*len(got))
	}
	for _, k := range keys {
		sets.Get(k)
	}
	if builds.Load() != before {
		t.Errorf("a cached key was built again: %d builds, then %d", before, builds.Load())
	}
}

func TestCountLookup(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	c := Int64Counter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"), "toolhost.test.lookups")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a caller gone away is still counted
	for _, hit := range []bool{true, false, false, true, false} {
		CountLookup(ctx, c, hit)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if dp.Attributes.Len() != 1 {
					t.Errorf("attributes %v, want toolhost.result alone", dp.Attributes.ToSlice())
				}
				v, _ := dp.Attributes.Value("toolhost.result")
				got[v.AsString()] += dp.Value
			}
		}
	}
	if got["hit"] != 2 || got["miss"] != 3 || len(got) != 2 {
		t.Errorf("lookups = %v, want hit 2, miss 3", got)
	}
}
