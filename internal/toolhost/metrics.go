package toolhost

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolhost/toolhost/sandbox"
)

// metricsRoutes serves GET /metrics in the Prometheus text format: the Go
// runtime and process collectors, run_code's runtimes and warm pools
// (the figures /healthz shows, as gauges and counters per language), and
// the OpenTelemetry instruments the app's telemetry exports to reg
// (docs/operations.md lists them).
func metricsRoutes(reg *prometheus.Registry, sb *sandbox.Sandbox) map[string]http.Handler {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		sandboxCollector{sb},
	)
	return map[string]http.Handler{"GET /metrics": promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
}

var (
	mReady = prometheus.NewDesc("toolhost_runcode_runtime_ready",
		"1 when the language's runtime is compiled and serving, 0 while idle, loading or unavailable.", []string{"language"}, nil)
	mRestored = prometheus.NewDesc("toolhost_runcode_python_restored",
		"1 when Python instances are restored from a snapshot, 0 when each boots.", nil, nil)
	mWarm = prometheus.NewDesc("toolhost_runcode_pool_warm",
		"Pre-started instances waiting for a run.", []string{"language"}, nil)
	mTarget = prometheus.NewDesc("toolhost_runcode_pool_target",
		"How many pre-started instances the pool holds for the current demand.", []string{"language"}, nil)
	mMost = prometheus.NewDesc("toolhost_runcode_pool_most",
		"The pool's bound by memory (sandbox.pool_memory_mib) and configuration.", []string{"language"}, nil)
	mInstance = prometheus.NewDesc("toolhost_runcode_instance_bytes",
		"Measured memory of one waiting instance.", []string{"language"}, nil)
	mDemand = prometheus.NewDesc("toolhost_runcode_demand_runs_per_second",
		"Recent rate of runs, decaying over seconds.", []string{"language"}, nil)
	mRuns = prometheus.NewDesc("toolhost_runcode_runs_total",
		"Runs started.", []string{"language"}, nil)
	mMisses = prometheus.NewDesc("toolhost_runcode_pool_misses_total",
		"Runs that found no warm instance and started one themselves.", []string{"language"}, nil)
	mStarted = prometheus.NewDesc("toolhost_runcode_pool_started_total",
		"Instances the pool started ahead of demand.", []string{"language"}, nil)
)

// sandboxCollector reads the sandbox's Status at each scrape.
type sandboxCollector struct{ sb *sandbox.Sandbox }

func (sandboxCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mReady, mRestored, mWarm, mTarget, mMost, mInstance, mDemand, mRuns, mMisses, mStarted} {
		ch <- d
	}
}

func (c sandboxCollector) Collect(ch chan<- prometheus.Metric) {
	for lang, st := range c.sb.Status() {
		l := string(lang)
		ready := 0.0
		if st.State == "ready" {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(mReady, prometheus.GaugeValue, ready, l)
		ch <- prometheus.MustNewConstMetric(mWarm, prometheus.GaugeValue, float64(st.Warm), l)
		ch <- prometheus.MustNewConstMetric(mTarget, prometheus.GaugeValue, float64(st.Target), l)
		ch <- prometheus.MustNewConstMetric(mMost, prometheus.GaugeValue, float64(st.Most), l)
		ch <- prometheus.MustNewConstMetric(mInstance, prometheus.GaugeValue, float64(st.InstanceKiB<<10), l)
		ch <- prometheus.MustNewConstMetric(mDemand, prometheus.GaugeValue, st.DemandPerSec, l)
		ch <- prometheus.MustNewConstMetric(mRuns, prometheus.CounterValue, float64(st.Takes), l)
		ch <- prometheus.MustNewConstMetric(mMisses, prometheus.CounterValue, float64(st.Misses), l)
		ch <- prometheus.MustNewConstMetric(mStarted, prometheus.CounterValue, float64(st.Started), l)
		if lang == sandbox.Python && st.State == "ready" {
			restored := 0.0
			if st.Snapshot == "restored" {
				restored = 1
			}
			ch <- prometheus.MustNewConstMetric(mRestored, prometheus.GaugeValue, restored)
		}
	}
}
