package main

import (
	"log/slog"

	"toolhost/tools"
	"toolhost/tools/builtin"
	"toolhost/tools/fetchpage"
	"toolhost/tools/runcode"
	"toolhost/tools/sleep"
)

// toolset builds every tool this deployment publishes, in publishing order.
// Each tool is one constructor call with its config section; the cleanup
// function releases what the tools hold (pools, caches, connections).
func toolset(c *common, logger *slog.Logger) ([]tools.Tool, func(), error) {
	ts := builtin.All()
	ws, err := newWebSearch(c, logger)
	if err != nil {
		return nil, nil, err
	}
	ts = append(ts, ws)
	fp, err := fetchpage.New(c.cfg.Fetch, fetchpage.WithLogger(logger))
	if err != nil {
		return nil, nil, err
	}
	ts = append(ts, fp)
	sb, err := newSandbox(c, logger)
	if err != nil {
		fp.Close()
		return nil, nil, err
	}
	c.sandbox = sb
	ts = append(ts, runcode.New(sb))
	if c.testTools {
		ts = append(ts, sleep.New(), sleep.NewEffect())
	}
	cleanups := []func(){fp.Close, func() { _ = sb.Close() }}
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	_ = logger
	return ts, cleanup, nil
}
