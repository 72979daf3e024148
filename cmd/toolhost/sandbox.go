package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"toolhost/sandbox"
)

// newSandbox builds run_code's sandbox: runtimes from --runtimes (or
// ./runtimes, else <data>/runtimes), the compilation cache under
// <data>/wasm-cache, limits from the config file's "sandbox" section. A
// missing runtime does not stop the server: run_code then answers
// runtime_unavailable naming the file it looked for.
func newSandbox(c *common, logger *slog.Logger) (*sandbox.Sandbox, error) {
	sb, err := sandbox.New(context.Background(), sandbox.Options{
		Config:      c.cfg.Sandbox,
		RuntimesDir: runtimesDir(c),
		CacheDir:    filepath.Join(c.data, "wasm-cache"),
		Logger:      logger,
	})
	if err != nil {
		return nil, fmt.Errorf("run_code sandbox: %w", err)
	}
	if c.preload {
		sb.Preload() // before the journal and the rest open: it is the long part
	}
	return sb, nil
}

// runtimesDir is --runtimes when given; otherwise the first of ./runtimes
// and <data>/runtimes that holds a runtime file, ./runtimes when neither.
func runtimesDir(c *common) string {
	if c.runtimes != "" {
		return c.runtimes
	}
	candidates := []string{"runtimes", filepath.Join(c.data, "runtimes")}
	for _, dir := range candidates {
		for _, f := range []string{sandbox.PythonFile, sandbox.JavaScriptFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return dir
			}
		}
	}
	return candidates[0]
}
