package telemetry

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Protocols of the OTLP exporters (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Samplers (OTEL_TRACES_SAMPLER).
const (
	SamplerAlwaysOn               = "always_on"
	SamplerAlwaysOff              = "always_off"
	SamplerRatio                  = "traceidratio"
	SamplerParentAlwaysOn         = "parentbased_always_on"
	SamplerParentAlwaysOff        = "parentbased_always_off"
	SamplerParentRatio            = "parentbased_traceidratio"
	defaultSampler                = SamplerParentAlwaysOn
	maxEnvValueBytes              = 4096
	defaultServiceName            = "toolhost"
	signalTraces, signalMetrics   = "traces", "metrics"
	exporterOTLP, exporterNone    = "otlp", "none"
	exporterPrometheus            = "prometheus"
	envSDKDisabled                = "OTEL_SDK_DISABLED"
	envServiceName                = "OTEL_SERVICE_NAME"
	envEndpoint                   = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envProtocol                   = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envSampler, envSamplerArg     = "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"
	envTracesExp, envMetricsExp   = "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"
	envPropagateFetch             = "TOOLHOST_OTEL_PROPAGATE_FETCH"
	signalEndpointFmt, signalProt = "OTEL_EXPORTER_OTLP_%s_ENDPOINT", "OTEL_EXPORTER_OTLP_%s_PROTOCOL"
)

// Settings say what telemetry toolhost produces and where it goes. The
// zero value is the default: the metrics instruments on /metrics, no
// traces, nothing exported over OTLP.
type Settings struct {
	// Disabled turns every instrument and span into a no-op
	// (OTEL_SDK_DISABLED=true): /metrics keeps the Go runtime and
	// run_code's pool figures only.
	Disabled bool
	// ServiceName is the service.name resource attribute ("toolhost").
	ServiceName string
	// Traces and Metrics export each signal over OTLP when set.
	Traces, Metrics *Export
	// Sampler and SamplerArg choose which traces are kept (the
	// OTEL_TRACES_SAMPLER names; default parentbased_always_on).
	Sampler    string
	SamplerArg float64
	// PropagateFetch also sends traceparent to the web pages fetch_page
	// reads (off: a page learns nothing of the caller's trace).
	PropagateFetch bool
}

// Export is where one signal goes over OTLP.
type Export struct {
	// Endpoint is the full URL of the signal (http/protobuf:
	// http://host:4318/v1/traces) or the collector's address (grpc:
	// http://host:4317).
	Endpoint string
	Protocol string
}

// TracesOn reports whether spans are recorded and exported.
func (s Settings) TracesOn() bool { return !s.Disabled && s.Traces != nil }

// FromEnv reads the standard OpenTelemetry variables through lookup (only
// cmd reads the environment; it hands its lookup over). A signal is
// exported over OTLP when its OTEL_*_EXPORTER says otlp, or names nothing
// while an OTLP endpoint is set; /metrics serves the metrics whatever
// OTEL_METRICS_EXPORTER says. A value outside the specification's is an
// error naming the variable, so a typo does not silently turn telemetry
// off.
func FromEnv(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	var s Settings
	for _, k := range []string{envSDKDisabled, envServiceName, envEndpoint, envProtocol, envSampler, envSamplerArg, envTracesExp, envMetricsExp, envPropagateFetch} {
		if v := get(k); len(v) > maxEnvValueBytes || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return Settings{}, fmt.Errorf("%s: at most %d printable bytes", k, maxEnvValueBytes)
		}
	}
	var err error
	if s.Disabled, err = envBool(envSDKDisabled, get(envSDKDisabled)); err != nil {
		return Settings{}, err
	}
	if s.PropagateFetch, err = envBool(envPropagateFetch, get(envPropagateFetch)); err != nil {
		return Settings{}, err
	}
	s.ServiceName = get(envServiceName)
	if s.ServiceName == "" {
		s.ServiceName = defaultServiceName
	}
	if s.Traces, err = export(get, signalTraces, envTracesExp); err != nil {
		return Settings{}, err
	}
	if s.Metrics, err = export(get, signalMetrics, envMetricsExp); err != nil {
		return Settings{}, err
	}
	if s.Sampler, s.SamplerArg, err = sampler(get(envSampler), get(envSamplerArg)); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// envBool reads a boolean the way the specification does: "true" in any
// case is true, "" and "false" false; anything else is refused.
func envBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "", "false":
		return false, nil
	}
	return false, fmt.Errorf("%s %q: want true or false", name, v)
}

// export reads one signal's exporter, endpoint and protocol.
func export(get func(string) string, signal, exporterVar string) (*Export, error) {
	upper := strings.ToUpper(signal)
	specific, generic := get(fmt.Sprintf(signalEndpointFmt, upper)), get(envEndpoint)
	on := specific != "" || generic != ""
	switch v := strings.ToLower(get(exporterVar)); v {
	case "":
	case exporterOTLP:
		on = true
	case exporterNone:
		on = false
	case exporterPrometheus:
		if signal != signalMetrics {
			return nil, fmt.Errorf("%s %q: want otlp or none", exporterVar, v)
		}
		on = false
	default:
		if signal == signalMetrics {
			return nil, fmt.Errorf("%s %q: want otlp, prometheus or none", exporterVar, v)
		}
		return nil, fmt.Errorf("%s %q: want otlp or none", exporterVar, v)
	}
	if !on {
		return nil, nil
	}
	protocol := get(fmt.Sprintf(signalProt, upper))
	if protocol == "" {
		protocol = get(envProtocol)
	}
	switch protocol {
	case "":
		protocol = ProtocolHTTP
	case ProtocolHTTP, ProtocolGRPC:
	default:
		return nil, fmt.Errorf("OTLP protocol %q for %s: want %s or %s", protocol, signal, ProtocolHTTP, ProtocolGRPC)
	}
	endpoint := specific
	if endpoint == "" {
		endpoint = defaultEndpoint(generic, protocol, signal)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q for %s: want an http or https URL with a host", endpoint, signal)
	}
	return &Export{Endpoint: endpoint, Protocol: protocol}, nil
}

// defaultEndpoint is a signal's endpoint from the generic one: over HTTP
// the signal's path is appended (the specification's rule), gRPC takes
// the address as it is; with none, the local collector's default port.
func defaultEndpoint(generic, protocol, signal string) string {
	if generic == "" {
		if protocol == ProtocolGRPC {
			return "http://localhost:4317"
		}
		generic = "http://localhost:4318"
	}
	if protocol == ProtocolGRPC {
		return generic
	}
	return strings.TrimRight(generic, "/") + "/v1/" + signal
}

// sampler checks the sampler's name and argument (a ratio in [0, 1],
// default 1).
func sampler(name, arg string) (string, float64, error) {
	name = strings.ToLower(name)
	switch name {
	case "":
		name = defaultSampler
	case SamplerAlwaysOn, SamplerAlwaysOff, SamplerRatio, SamplerParentAlwaysOn, SamplerParentAlwaysOff, SamplerParentRatio:
	default:
		return "", 0, fmt.Errorf("%s %q: want one of %s", envSampler, name, strings.Join([]string{
			SamplerAlwaysOn, SamplerAlwaysOff, SamplerRatio, SamplerParentAlwaysOn, SamplerParentAlwaysOff, SamplerParentRatio}, ", "))
	}
	ratio := 1.0
	if arg != "" && (name == SamplerRatio || name == SamplerParentRatio) {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 || r != r {
			return "", 0, fmt.Errorf("%s %q: want a ratio from 0 to 1", envSamplerArg, arg)
		}
		ratio = r
	}
	return name, ratio, nil
}

// String says in one line what s records and where it goes (toolhost
// check prints it).
func (s Settings) String() string {
	if s.Disabled {
		return "off (OTEL_SDK_DISABLED)"
	}
	out := "metrics on /metrics"
	if s.Metrics != nil {
		out += " and to " + s.Metrics.Endpoint + " (" + s.Metrics.Protocol + ")"
	}
	if s.Traces == nil {
		return out + "; no traces exported"
	}
	sampler := s.Sampler
	if s.Sampler == SamplerRatio || s.Sampler == SamplerParentRatio {
		sampler += " " + strconv.FormatFloat(s.SamplerArg, 'g', -1, 64)
	}
	return out + "; traces to " + s.Traces.Endpoint + " (" + s.Traces.Protocol + ", " + sampler + ")"
}
