package sandbox

import (
	"log/slog"
	"runtime"
	"time"
)

// Config holds the sandbox limits an operator may change (the "sandbox"
// section of the config file). Zero values take the defaults below.
type Config struct {
	// MemoryLimitMiB caps each instance's linear memory. Default 256.
	MemoryLimitMiB int `json:"memory_limit_mib"`
	// StdoutLimit and StderrLimit cap the captured output per stream, in
	// bytes. Default 64 KiB each.
	StdoutLimit int `json:"stdout_limit"`
	StderrLimit int `json:"stderr_limit"`
	// Concurrency is how many programs run at once. Default: the number of
	// CPUs.
	Concurrency int `json:"concurrency"`
	// QueueLength is how many runs may wait for a slot; one more is refused
	// with ErrBusy. Default 4 × Concurrency.
	QueueLength int `json:"queue_length"`
	// PerAccountConcurrency is how many of the slots one account's runs may
	// hold at once; as many times more may wait, in the same proportion as
	// the queue to the slots, and one more is refused with ErrBusy.
	// Default half the slots (at least one).
	PerAccountConcurrency int `json:"per_account_concurrency"`
	// PoolMemoryMiB is the memory the warm pools (pre-started instances
	// waiting for a run) may hold, half for each language. How many a pool
	// holds within it follows demand (see pool). Default 64.
	PoolMemoryMiB int `json:"pool_memory_mib"`
	// PythonPool and JavaScriptPool, when positive, cap how many
	// pre-started instances each language keeps; 0 lets memory and demand
	// decide; -1 turns the pool off.
	PythonPool     int `json:"python_pool"`
	JavaScriptPool int `json:"javascript_pool"`
	// WorkDirLimitMiB caps the bytes a run may write into its working
	// directory. Default 64.
	WorkDirLimitMiB int `json:"workdir_limit_mib"`
	// OutFiles caps the files returned from out/: how many, how many bytes of
	// each, how many bytes in all. Defaults 20, 64 KiB, 128 KiB.
	OutFilesMax   int   `json:"out_files_max"`
	OutFileBytes  int64 `json:"out_file_bytes"`
	OutTotalBytes int64 `json:"out_total_bytes"`
	// TempDir is where per-run working directories are made; default the
	// system temporary directory.
	TempDir string `json:"temp_dir"`
	// JSMaxStackKiB bounds the JavaScript engine's stack so deep recursion
	// is a RangeError, not a crash. Default 512.
	JSMaxStackKiB int `json:"js_max_stack_kib"`
}

// Options are what the binary passes besides the config file's section.
type Options struct {
	Config
	// RuntimesDir holds python.wasm and quickjs.wasm.
	RuntimesDir string
	// RuntimeDirs, when set, is a search path used instead of RuntimesDir:
	// every runtime file (python.wasm, quickjs.wasm, and any file a runtime
	// needs beside it) is taken from the first folder that holds it, and a
	// file found in none is reported with every folder searched.
	RuntimeDirs []string
	// CacheDir holds wazero's compilation cache; empty means no disk cache.
	CacheDir string
	Logger   *slog.Logger
	// Now is the clock of the warm pools' demand rate (how many runs a
	// second they are sized for); nil is time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MemoryLimitMiB <= 0 {
		c.MemoryLimitMiB = 256
	}
	if c.StdoutLimit <= 0 {
		c.StdoutLimit = 64 << 10
	}
	if c.StderrLimit <= 0 {
		c.StderrLimit = 64 << 10
	}
	if c.Concurrency <= 0 {
		c.Concurrency = runtime.NumCPU()
	}
	if c.QueueLength <= 0 {
		c.QueueLength = 4 * c.Concurrency
	}
	if c.PerAccountConcurrency <= 0 {
		c.PerAccountConcurrency = max(1, c.Concurrency/2)
	}
	c.PerAccountConcurrency = min(c.PerAccountConcurrency, c.Concurrency)
	if c.PoolMemoryMiB <= 0 {
		c.PoolMemoryMiB = 64
	}
	if c.WorkDirLimitMiB <= 0 {
		c.WorkDirLimitMiB = 64
	}
	if c.OutFilesMax <= 0 {
		c.OutFilesMax = 20
	}
	if c.OutFileBytes <= 0 {
		c.OutFileBytes = 64 << 10
	}
	if c.OutTotalBytes <= 0 {
		c.OutTotalBytes = 128 << 10
	}
	if c.JSMaxStackKiB <= 0 {
		c.JSMaxStackKiB = 512
	}
	return c
}

// MaxTimeout is the longest wall-clock time one run may take.
const MaxTimeout = 60 * time.Second

// MaxLongTimeout is the longest wall-clock time of a long run
// (Request.LongRun): a background job's, whose caller does not wait.
const MaxLongTimeout = 24 * time.Hour

// progressEvery is how often a waiting or running program reports progress.
const progressEvery = time.Second
