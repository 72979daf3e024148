package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/toolhost/toolhost/internal/toolhost"
	"github.com/toolhost/toolhost/sandbox"
)

// cmdCheck loads the config file and builds what serve would build from it
// — every tool with its section, the /v1 routes — without listening,
// opening the store or compiling run_code's runtimes, and reports where the
// runtimes were found. Operators run it before a deploy; the doc-test runs
// every configuration example in docs/ through it.
func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check")
	var c common
	c.register(fs)
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return exitCodeOf(err, stderr, "check")
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhost check: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// run_code is checked below without starting its sandbox, and the
	// search cache stays in memory: check creates nothing (toolhost.Check).
	checked, err := toolhost.Check(c.options(logger))
	if err != nil {
		return exitCodeOf(err, stderr, "check")
	}
	if c.config == "" {
		fmt.Fprintln(stdout, "config: none given; the built-in defaults")
	} else {
		fmt.Fprintf(stdout, "config: %s is valid\n", absPath(c.config))
	}
	fmt.Fprintf(stdout, "tools: %s\n", strings.Join(checked.Tools, ", "))
	if len(checked.Presets) > 0 {
		fmt.Fprintf(stdout, "preset tools: %s\n", strings.Join(checked.Presets, ", "))
	}
	dirs := runtimeDirs(&c)
	for _, f := range []string{sandbox.PythonFile, sandbox.JavaScriptFile} {
		if p, ok := sandbox.FindRuntime(dirs, f); ok {
			fmt.Fprintf(stdout, "run_code runtime %s: %s\n", f, p)
		} else {
			fmt.Fprintf(stdout, "run_code runtime %s: missing (run_code will answer runtime_unavailable); searched %s\n", f, strings.Join(dirs, ", "))
		}
	}
	fmt.Fprintf(stdout, "telemetry: %s\n", c.tel)
	for _, r := range checked.Routes {
		line := fmt.Sprintf("hosted route %s (%s): %s", r.Name, r.Protocol, r.State)
		if r.Error != "" {
			line += ": " + r.Error
		}
		fmt.Fprintln(stdout, line)
	}
	return exitOK
}
