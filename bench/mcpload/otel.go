package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"
)

// The telemetry targets are toolhost serve --dev with its telemetry set by
// the standard OTEL_* variables, measured beside each other in one run
// (-targets toolhost-otel-off,toolhost,toolhost-otel-100,toolhost-otel-1):
// off (OTEL_SDK_DISABLED=true), the default (metrics on /metrics, no
// traces: the plain toolhost target), and traces exported over OTLP/HTTP
// with every trace sampled or 1 % of them. The traces go to otlpSink, an
// OTLP/HTTP endpoint in this process that reads and drops them, so the
// exporter does its whole work (encoding, one HTTP request per batch).
var otelEnvs = map[string]struct {
	name string
	env  func(sink string) []string
}{
	"toolhost-otel-off": {"toolhost, telemetry off", func(string) []string { return []string{"OTEL_SDK_DISABLED=true"} }},
	"toolhost-otel-100": {"toolhost, traces 100 %", func(sink string) []string {
		return []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + sink, "OTEL_TRACES_SAMPLER=always_on"}
	}},
	"toolhost-otel-1": {"toolhost, traces 1 %", func(sink string) []string {
		return []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + sink, "OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01"}
	}},
}

// otelTarget is toolhost with the telemetry of one of otelEnvs.
func otelTarget(cfg config, key, sink string) target {
	t := toolhostTarget(cfg)
	o := otelEnvs[key]
	t.name = o.name
	t.start = func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
		cmd, err := command(ctx, tmp, cfg.toolhost, "serve", "--dev", "--addr", addr, "--data", filepath.Join(tmp, "data"))
		if err != nil {
			return cmd, err
		}
		cmd.Env = append(cmd.Environ(), o.env(sink)...)
		return cmd, cmd.Start()
	}
	return t
}

// otlpSink is an OTLP/HTTP trace endpoint on loopback that reads each
// export whole and answers it; it counts the bytes it was sent.
type otlpSink struct {
	url   string
	bytes atomic.Int64
	srv   *http.Server
}

func startSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: fmt.Sprintf("http://%s/v1/traces", ln.Addr())}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.bytes.Add(n)
		// An empty ExportTraceServiceResponse is zero bytes of protobuf.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *otlpSink) close() { _ = s.srv.Close() }
