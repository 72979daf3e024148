package telemetry

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Settings
		wantErr string
	}{
		{name: "nothing set: metrics on /metrics only", env: nil,
			want: Settings{ServiceName: "toolhost", Sampler: SamplerParentAlwaysOn, SamplerArg: 1}},
		{name: "an endpoint turns both signals on over HTTP", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"},
			want: Settings{ServiceName: "toolhost", Sampler: SamplerParentAlwaysOn, SamplerArg: 1,
				Traces:  &Export{Endpoint: "http://127.0.0.1:4318/v1/traces", Protocol: ProtocolHTTP},
				Metrics: &Export{Endpoint: "http://127.0.0.1:4318/v1/metrics", Protocol: ProtocolHTTP}}},
		{name: "grpc takes the address as it is; metrics kept on /metrics only", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_SERVICE_NAME": "edge-1"},
			want: Settings{ServiceName: "edge-1", Sampler: SamplerParentAlwaysOn, SamplerArg: 1,
				Traces: &Export{Endpoint: "http://collector:4317", Protocol: ProtocolGRPC}}},
		{name: "the signal's own endpoint and protocol win", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/x/traces",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_METRICS_EXPORTER": "none"},
			want: Settings{ServiceName: "toolhost", Sampler: SamplerParentAlwaysOn, SamplerArg: 1,
				Traces: &Export{Endpoint: "https://b/x/traces", Protocol: ProtocolHTTP}}},
		{name: "otlp named without an endpoint: the local collector", env: map[string]string{"OTEL_TRACES_EXPORTER": "OTLP", "OTEL_METRICS_EXPORTER": "none"},
			want: Settings{ServiceName: "toolhost", Sampler: SamplerParentAlwaysOn, SamplerArg: 1,
				Traces: &Export{Endpoint: "http://localhost:4318/v1/traces", Protocol: ProtocolHTTP}}},
		{name: "ratio sampling and disabled", env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"},
			want: Settings{Disabled: true, ServiceName: "toolhost", Sampler: SamplerParentRatio, SamplerArg: 0.01}},
		{name: "fetch propagation", env: map[string]string{"TOOLHOST_OTEL_PROPAGATE_FETCH": "true"},
			want: Settings{ServiceName: "toolhost", Sampler: SamplerParentAlwaysOn, SamplerArg: 1, PropagateFetch: true}},
		{name: "a typo in the sampler", env: map[string]string{"OTEL_TRACES_SAMPLER": "always-on"}, wantErr: `OTEL_TRACES_SAMPLER "always-on": want one of`},
		{name: "a ratio out of range", env: map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"}, wantErr: "want a ratio from 0 to 1"},
		{name: "NaN is no ratio", env: map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "NaN"}, wantErr: "want a ratio from 0 to 1"},
		{name: "http/json is not offered", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTLP protocol "http/json"`},
		{name: "an unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER "zipkin": want otlp or none`},
		{name: "prometheus is no trace exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "prometheus"}, wantErr: "want otlp or none"},
		{name: "an endpoint without a scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, wantErr: "want an http or https URL with a host"},
		{name: "a file URL", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "file:///etc/passwd"}, wantErr: "want an http or https URL"},
		{name: "disabled is a boolean", env: map[string]string{"OTEL_SDK_DISABLED": "yes"}, wantErr: `OTEL_SDK_DISABLED "yes": want true or false`},
		{name: "a control character", env: map[string]string{"OTEL_SERVICE_NAME": "a\nb"}, wantErr: "OTEL_SERVICE_NAME: at most 4096 printable bytes"},
		{name: "a huge value", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + strings.Repeat("a", 5000)}, wantErr: "at most 4096 printable bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameSettings(got, tt.want) {
				t.Errorf("got %+v (traces %+v, metrics %+v)\nwant %+v (traces %+v, metrics %+v)", got, got.Traces, got.Metrics, tt.want, tt.want.Traces, tt.want.Metrics)
			}
		})
	}
}

func sameSettings(a, b Settings) bool {
	eq := func(x, y *Export) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.Traces, b.Traces) && eq(a.Metrics, b.Metrics) && a.Disabled == b.Disabled && a.ServiceName == b.ServiceName &&
		a.Sampler == b.Sampler && a.SamplerArg == b.SamplerArg && a.PropagateFetch == b.PropagateFetch
}

func TestSettingsSayWhereTelemetryGoes(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "metrics on /metrics; no traces exported"},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "off (OTEL_SDK_DISABLED)"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
			"metrics on /metrics and to http://c:4317 (grpc); traces to http://c:4317 (grpc, traceidratio 0.25)"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "none"},
			"metrics on /metrics; traces to http://localhost:4318/v1/traces (http/protobuf, parentbased_always_on)"},
	} {
		s, err := FromEnv(env(tt.env))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.String(); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.env, got, tt.want)
		}
	}
}
