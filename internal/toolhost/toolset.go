package toolhost

import (
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/fetchpage"
	"github.com/toolhost/toolhost/tools/runcode"
	"github.com/toolhost/toolhost/tools/sleep"
	"github.com/toolhost/toolhost/tools/websearch"
)

// toolkit is what toolset built: the tools in publishing order, run_code's
// sandbox (nil when left out) and the function releasing what the tools
// hold (pools, caches, connections).
type toolkit struct {
	tools   []tools.Tool
	sandbox *sandbox.Sandbox
	close   func()
}

// toolsetOptions say which tools a command needs built.
type toolsetOptions struct {
	// skipRunCode leaves run_code and its sandbox out.
	skipRunCode bool
	// preload starts loading run_code's runtimes at once (servers).
	preload bool
	// shared and sharedFetch are the web_search and fetch_page caches the
	// replicas share (nil: none).
	shared      websearch.SharedCache
	sharedFetch fetchpage.SharedCache
}

// toolset builds every tool this deployment publishes, in publishing order.
// Each tool is one constructor call with its config section.
func toolset(o *Options, logger *slog.Logger, to toolsetOptions) (*toolkit, error) {
	ts := builtin.All()
	ws, err := newWebSearch(o, logger, to.shared)
	if err != nil {
		return nil, err
	}
	ts = append(ts, ws)
	tel := o.telemetry()
	var pagePropagator propagation.TextMapPropagator // pages learn nothing of a trace unless asked
	if tel.PropagateFetch {
		pagePropagator = tel.Propagator
	}
	fopts := []fetchpage.Option{fetchpage.WithLogger(logger), fetchpage.WithTelemetry(tel.Tracer, tel.Meter, pagePropagator)}
	if to.sharedFetch != nil {
		fopts = append(fopts, fetchpage.WithShared(to.sharedFetch))
	}
	fp, err := fetchpage.New(o.Config.Fetch, fopts...)
	if err != nil {
		return nil, err
	}
	ts = append(ts, fp)
	cleanups := []func(){fp.Close}
	var sb *sandbox.Sandbox
	if !to.skipRunCode {
		sb, err = newSandbox(o, logger, to.preload)
		if err != nil {
			fp.Close()
			return nil, err
		}
		ts = append(ts, runcode.New(sb).WithTelemetry(tel.Tracer, tel.Meter).WithDeferredLimit(o.Config.Jobs.Timeout.D()))
		cleanups = append(cleanups, func() { closeSandbox(sb, logger) })
	}
	if o.TestTools {
		ts = append(ts, sleep.New(), sleep.NewEffect())
	}
	return &toolkit{tools: ts, sandbox: sb, close: func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}}, nil
}

// RunCodeName is run_code's tool name, known before its sandbox exists.
const RunCodeName = "run_code"

// NeedsRunCode reports whether a call of tool may need run_code's sandbox:
// run_code itself, or a name no builtin has (a tool definition's script
// handler runs in that sandbox). toolhost call leaves run_code out
// (Options.SkipRunCode) otherwise.
func NeedsRunCode(tool string) bool {
	return tool == RunCodeName || !slices.Contains(builtinNames, tool)
}

// sandboxCloseWait bounds how long a stopping process waits for run_code's
// sandbox: a runtime still compiling (CPython takes seconds on a first
// start) is not waited for, so Ctrl-C during start-up exits at once. The
// compilation cache is only written once a compile completes, so nothing
// half-written is left behind.
const sandboxCloseWait = 500 * time.Millisecond

func closeSandbox(sb interface{ Close() error }, logger *slog.Logger) {
	done := make(chan struct{})
	go func() {
		_ = sb.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(sandboxCloseWait):
		logger.Info("run_code's runtimes were still compiling; not waiting for them")
	}
}
