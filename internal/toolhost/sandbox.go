package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/toolhost/toolhost/sandbox"
)

// newSandbox builds run_code's sandbox: runtimes from the search path
// o.RuntimeDirs, the compilation cache under <data>/wasm-cache, limits from
// the config file's "sandbox" section. A missing runtime does not stop the
// server: run_code then answers runtime_unavailable naming every folder it
// searched.
func newSandbox(o *Options, logger *slog.Logger, preload bool) (*sandbox.Sandbox, error) {
	sb, err := sandbox.New(context.Background(), sandbox.Options{
		Config:      o.Config.Sandbox,
		RuntimeDirs: o.RuntimeDirs,
		CacheDir:    filepath.Join(o.Data, "wasm-cache"),
		Logger:      logger,
	})
	if err != nil {
		return nil, fmt.Errorf("run_code sandbox: %w", err)
	}
	if preload {
		sb.Preload() // before the journal and the rest open: it is the long part
	}
	return sb, nil
}
