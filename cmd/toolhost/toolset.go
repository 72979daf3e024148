package main

import (
	"log/slog"

	"toolhost/tools"
	"toolhost/tools/builtin"
	"toolhost/tools/sleep"
)

// toolset builds every tool this deployment publishes, in publishing order.
// Each tool is one constructor call with its config section; the cleanup
// function releases what the tools hold (pools, caches, connections).
func toolset(c *common, logger *slog.Logger) ([]tools.Tool, func(), error) {
	ts := builtin.All()
	if c.testTools {
		ts = append(ts, sleep.New())
	}
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	_ = logger
	return ts, cleanup, nil
}
