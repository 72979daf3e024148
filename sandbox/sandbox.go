package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Language names a guest language.
type Language string

const (
	Python     Language = "python"
	JavaScript Language = "javascript"
)

// File is an input file placed in the run's working directory.
type File struct {
	Name string // relative, slash-separated
	Data []byte
}

// OutFile is a file the program left under out/.
type OutFile struct {
	Name      string // "out/report.csv"
	Size      int64
	Data      []byte // the first bytes, within the caps
	Truncated bool   // Data is shorter than Size
}

// Request is one program to run.
type Request struct {
	Language Language
	Code     string
	Stdin    []byte
	// Timeout is the wall-clock budget of the run itself (not the queue).
	// Zero or more than MaxTimeout means MaxTimeout (MaxLongTimeout for a
	// LongRun).
	Timeout time.Duration
	// LongRun lets Timeout exceed MaxTimeout: a run nobody waits for (a
	// background job's). Memory and the other limits are the same.
	LongRun bool
	Files   []File
	// Args, when set (JavaScript only), makes Code the body of a function
	// of one parameter, args, called with this JSON value: a tool
	// definition's script (tools/runcode). Result.Value is then the JSON of
	// what it returns. Code's line numbers are kept in stacks and errors,
	// and nothing of the call is reachable from Code.
	Args json.RawMessage
	// Account, when set, holds the run to the account's share of the
	// slots (Config.PerAccountConcurrency).
	Account string
	// Progress, when set, is called about once a second while the request
	// waits for a slot and while it runs.
	Progress func(elapsed time.Duration, message string)
	// OnQueue, when set, is called on Run's goroutine with true when the
	// request begins to wait for a run slot (its account's share or the
	// shared slots; the runtime's load is no such wait), and with false
	// once it has one, only after a true: the caller's journal says
	// queued meanwhile.
	OnQueue func(queued bool)
}

// Result is what a finished program left behind. A program that failed (an
// exception, a non-zero exit) is still a Result; so is one stopped by its
// deadline (TimedOut) or its memory cap (MemoryExceeded).
type Result struct {
	Language        Language
	ExitCode        int
	Stdout          []byte
	Stderr          []byte
	StdoutTruncated bool
	StderrTruncated bool
	// Value is the JSON of a JavaScript program's last expression (or of
	// what the function returned, Request.Args); null when the JSON is
	// over MaxValue (ValueTooLarge) or cannot exist (a note says why in
	// Stderr).
	Value json.RawMessage
	// ValueTooLarge says the value's JSON was ValueBytes bytes, more than
	// MaxValue: it was not copied out.
	ValueTooLarge  bool
	ValueBytes     int
	Duration       time.Duration
	TimedOut       bool
	MemoryExceeded bool
	Files          []OutFile
	FilesTruncated bool
	// Warm says a pre-started instance ran the program.
	Warm bool
	// Queued is how long the request waited before its program started:
	// for its runtime, its account's share and a run slot.
	Queued time.Duration
}

var (
	// ErrBusy: every run slot and every queue place is taken.
	ErrBusy = errors.New("sandbox: every run slot and queue place is taken")
	// ErrUnavailable: the language's runtime file is missing or broken.
	ErrUnavailable = errors.New("sandbox: runtime unavailable")
	// ErrClosed: the sandbox was closed.
	ErrClosed = errors.New("sandbox: closed")
	// ErrInvalid: the request is malformed (unknown language, bad file name).
	ErrInvalid = errors.New("sandbox: invalid request")
)

// Runtime file names inside Options.RuntimesDir (or a folder of RuntimeDirs).
const (
	PythonFile     = "python.wasm"
	JavaScriptFile = "quickjs.wasm"
)

// Sandbox runs programs. It is safe for concurrent use; Close releases it.
type Sandbox struct {
	cfg    Config
	opts   Options
	log    *slog.Logger
	rt     wazero.Runtime
	cache  wazero.CompilationCache
	ctx    context.Context // background work and pooled instances
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// runs counts the calls of Run in progress: a JavaScript program runs
	// on its caller's goroutine, which wg does not know. Close waits for
	// them before it closes the runtime, which frees every instance's
	// memory and compiled code at once, whatever still runs on them.
	// runsMu orders a Run's start against Close's cancel: Run counts
	// itself in only while ctx is live, so Close's wait sees every run.
	runsMu sync.RWMutex
	runs   sync.WaitGroup

	// handoffs counts the work finished runs handed to wg (closing their
	// instance and its directory, the refill); settled are the Settle
	// calls waiting for it to reach zero.
	handoffMu sync.Mutex
	handoffs  int
	settled   []chan struct{}

	slots   chan struct{}
	waiting atomic.Int64
	shares  *shares // per-account share of the slots (share.go)

	py *pythonEngine
	js *jsEngine

	closeOnce sync.Once
}

// New prepares a sandbox. It returns at once and loads nothing: a runtime
// is read and compiled (from the disk cache when it has it) in the
// background on its first run, or at once after Preload, and its warm pool
// fills after that. A missing runtime file is not an error here; runs of
// that language fail with ErrUnavailable and say which file is missing.
func New(ctx context.Context, opts Options) (*Sandbox, error) {
	cfg := opts.Config.withDefaults()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TempDir != "" {
		if err := os.MkdirAll(cfg.TempDir, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox temp dir: %w", err)
		}
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		// DWARF-annotated stack traces cost seconds per exit on the
		// 26 MB CPython binary (every proc_exit unwinds as an error).
		WithDebugInfoEnabled(false).
		WithMemoryLimitPages(uint32(cfg.MemoryLimitMiB) * 16) // 64 KiB pages
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("sandbox compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
		rc = rc.WithCompilationCache(cache)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rt := wazero.NewRuntimeWithConfig(bg, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(bg, rt); err != nil {
		cancel()
		_ = rt.Close(bg)
		return nil, fmt.Errorf("sandbox: instantiate WASI: %w", err)
	}
	s := &Sandbox{
		cfg: cfg, opts: opts, log: logger, rt: rt, cache: cache,
		ctx: bg, cancel: cancel,
		slots:  make(chan struct{}, cfg.Concurrency),
		shares: newShares(cfg.PerAccountConcurrency, cfg.QueueLength*cfg.PerAccountConcurrency/cfg.Concurrency),
	}
	s.py = newPythonEngine(s, s.runtimePath(PythonFile))
	s.js = newJSEngine(s, s.runtimePath(JavaScriptFile))
	return s, nil
}

// poolBudgetKiB is one language's share of the pools' memory.
func (s *Sandbox) poolBudgetKiB() int64 { return int64(s.cfg.PoolMemoryMiB) << 10 / 2 }

// Config returns the effective limits (defaults filled in).
func (s *Sandbox) Config() Config { return s.cfg }

// handOff runs f after delay, once a run's result is on its way, in a
// goroutine Close and Settle wait for.
func (s *Sandbox) handOff(delay time.Duration, f func()) {
	s.wg.Add(1)
	s.handoffMu.Lock()
	s.handoffs++
	s.handoffMu.Unlock()
	time.AfterFunc(delay, func() {
		defer s.wg.Done()
		f()
		s.handoffMu.Lock()
		defer s.handoffMu.Unlock()
		if s.handoffs--; s.handoffs == 0 {
			for _, ch := range s.settled {
				close(ch)
			}
			s.settled = nil
		}
	})
}

// Settle waits until the housekeeping of every finished run is done: its
// instance closed, its directory removed, its refill started. (Runs
// starting meanwhile add theirs.) It returns ctx's error if that comes
// first.
func (s *Sandbox) Settle(ctx context.Context) error {
	s.handoffMu.Lock()
	if s.handoffs == 0 {
		s.handoffMu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.settled = append(s.settled, ch)
	s.handoffMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the pools and every running program, waits for them to end
// and frees the runtime.
func (s *Sandbox) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.runsMu.Lock()
		s.cancel()
		s.runsMu.Unlock()
		// Runs end at once (their contexts follow ctx); what they hand to
		// wg (closing their instance, its refill) is handed over by then.
		s.runs.Wait()
		s.wg.Wait()
		if s.py.snap != nil {
			s.py.snap.close()
		}
		s.js.image.close()
		err = s.rt.Close(context.Background())
		if s.cache != nil {
			_ = s.cache.Close(context.Background())
		}
	})
	return err
}

// Preload starts loading both runtimes and filling their pools now, so the
// first run does not wait for them. A server calls it at start-up; a
// one-shot command does not, and loads only what its call needs.
func (s *Sandbox) Preload() {
	s.py.file.ensure()
	s.js.file.ensure()
}

// Ready loads lang's runtime if needed and waits until it is compiled and, when a pool is
// configured, its pool holds at least one instance. Tests and benchmarks use
// it to measure the warm path; serving never needs to call it.
func (s *Sandbox) Ready(ctx context.Context, lang Language) error {
	switch lang {
	case Python:
		return s.py.waitReady(ctx)
	case JavaScript:
		return s.js.waitReady(ctx)
	}
	return fmt.Errorf("%w: unknown language %q", ErrInvalid, lang)
}

// RuntimeStatus is one language's runtime as an operator sees it.
type RuntimeStatus struct {
	// State is "loading" (being read and compiled), "ready" or
	// "unavailable" (Error says why: missing file, broken module).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Snapshot says where Python instances come from: "restored" from a
	// snapshot of a booted interpreter, or "booted" one by one (then
	// SnapshotError says why); empty for JavaScript, whose engine always
	// restores its own.
	Snapshot      string `json:"snapshot,omitempty"`
	SnapshotError string `json:"snapshot_error,omitempty"`
	SnapshotMiB   int64  `json:"snapshot_mib,omitempty"`
	PoolStatus
}

// PoolStatus is a language's warm pool: pre-started instances waiting for
// a run.
type PoolStatus struct {
	// Warm instances wait now; Target is how many the pool tries to hold
	// for the current demand; Most is its bound by memory
	// (Config.PoolMemoryMiB over InstanceKiB) and configuration.
	Warm   int `json:"warm"`
	Target int `json:"pool"`
	Most   int `json:"pool_most"`
	// InstanceKiB is the measured memory of one waiting instance.
	InstanceKiB int64 `json:"instance_kib"`
	// DemandPerSec is the recent rate of runs (decaying over seconds).
	DemandPerSec float64 `json:"demand_per_sec"`
	// StartMs is how long starting the last pooled instance took.
	StartMs float64 `json:"start_ms"`
	// Takes counts runs; Misses those that found no warm instance and
	// started one themselves; Started counts instances the pool started.
	Takes   int64 `json:"runs"`
	Misses  int64 `json:"pool_misses"`
	Started int64 `json:"pool_started"`
}

// Status reports each language's runtime and warm pool, without waiting.
func (s *Sandbox) Status() map[Language]RuntimeStatus {
	st := func(f *runtimeFile, ps PoolStatus) RuntimeStatus {
		state, err := f.state()
		r := RuntimeStatus{State: state, PoolStatus: ps}
		if err != nil {
			r.Error = err.Error()
		}
		return r
	}
	py := st(&s.py.file, s.py.pool.stats())
	if py.State == "ready" { // the load has ended: snap and snapErr are set
		if sn := s.py.snap; sn != nil {
			py.Snapshot, py.SnapshotMiB = "restored", int64(sn.size>>20)
		} else {
			py.Snapshot = "booted"
			if err := s.py.snapErr; err != nil {
				py.SnapshotError = err.Error()
			}
		}
	}
	return map[Language]RuntimeStatus{
		Python:     py,
		JavaScript: st(&s.js.file, s.js.pool.stats()),
	}
}

// Run runs one program: it waits for its language's runtime to load (a
// *LoadingError when ctx ends first: that wait is not queueing, and the
// load goes on for later runs), then for a run slot (or fails with ErrBusy
// when the queue is full), takes a pre-started instance or starts one, runs
// the program under its deadline and returns what it left. ctx
// cancellation stops the program and returns ctx's error.
func (s *Sandbox) Run(ctx context.Context, req Request) (*Result, error) {
	if !s.enter() {
		return nil, ErrClosed
	}
	defer s.runs.Done()
	most := MaxTimeout
	if req.LongRun {
		most = MaxLongTimeout
	}
	if req.Timeout <= 0 || req.Timeout > most {
		req.Timeout = most
	}
	for _, f := range req.Files {
		if err := ValidFileName(f.Name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	start := time.Now()
	progress := func(msg string) {
		if req.Progress != nil {
			req.Progress(time.Since(start), msg)
		}
	}
	var run func(context.Context, *Request, func(string)) (*Result, error)
	switch req.Language {
	case Python:
		if req.Args != nil {
			return nil, fmt.Errorf("%w: Args is for JavaScript only", ErrInvalid)
		}
		if err := s.py.available(ctx, progress); err != nil {
			return nil, err
		}
		run = s.py.run
	case JavaScript:
		if err := s.js.available(ctx, progress); err != nil {
			return nil, err
		}
		run = s.js.run
	default:
		return nil, fmt.Errorf("%w: unknown language %q (want python or javascript)", ErrInvalid, req.Language)
	}
	queuedFor := false
	wait := func() {
		if !queuedFor && req.OnQueue != nil {
			queuedFor = true
			req.OnQueue(true)
		}
	}
	leave, err := s.shares.acquire(ctx, s.ctx, req.Account, wait)
	if err != nil {
		return nil, err
	}
	defer leave()
	release, err := s.admit(ctx, progress, wait)
	if err != nil {
		return nil, err
	}
	defer release()
	if queuedFor {
		req.OnQueue(false)
	}
	queued := time.Since(start)
	res, err := run(ctx, &req, progress)
	if res != nil {
		res.Queued = queued
	}
	return res, err
}

// enter counts a run in, unless the sandbox is closed (false).
func (s *Sandbox) enter() bool {
	s.runsMu.RLock()
	defer s.runsMu.RUnlock()
	if s.ctx.Err() != nil {
		return false
	}
	s.runs.Add(1)
	return true
}

// admit takes a run slot, queueing when none is free (wait is called
// first then).
func (s *Sandbox) admit(ctx context.Context, progress func(string), wait func()) (func(), error) {
	release := func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	if s.waiting.Add(1) > int64(s.cfg.QueueLength) {
		s.waiting.Add(-1)
		return nil, ErrBusy
	}
	defer s.waiting.Add(-1)
	wait()
	progress(fmt.Sprintf("queued: %d runs in progress, %d waiting", s.cfg.Concurrency, s.waiting.Load()))
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case s.slots <- struct{}{}:
			return release, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, ErrClosed
		case <-tick.C:
			progress("queued: waiting for a free run slot")
		}
	}
}

// watch reports progress while a program runs and calls stop when ctx ends
// before done or also (nil: never) is closed. Waiting on both directly saves
// a goroutine hand-off on the critical path.
func watch(ctx context.Context, done, also <-chan struct{}, progress func(string), stop func()) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	started := time.Now()
	for {
		select {
		case <-done:
			return
		case <-also:
			return
		case <-ctx.Done():
			stop()
			return
		case <-tick.C:
			progress(fmt.Sprintf("running for %.1f s", time.Since(started).Seconds()))
		}
	}
}

// runDeadline is the earlier of ctx's deadline and now + timeout.
func runDeadline(ctx context.Context, timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

// runtimeDirs is the search path for runtime files.
func (s *Sandbox) runtimeDirs() []string {
	if len(s.opts.RuntimeDirs) > 0 {
		return s.opts.RuntimeDirs
	}
	return []string{s.opts.RuntimesDir}
}

// runtimePath is where runtime file name is: in the first folder of the
// search path that holds it, else (for the error) in the first folder.
func (s *Sandbox) runtimePath(name string) string {
	if p, ok := FindRuntime(s.runtimeDirs(), name); ok {
		return p
	}
	return filepath.Join(s.runtimeDirs()[0], name)
}

// FindRuntime returns the path of runtime file name in the first of dirs
// that holds it.
func FindRuntime(dirs []string, name string) (string, bool) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// missingRuntime is the error for a runtime file that could not be read:
// it names every folder searched.
func (s *Sandbox) missingRuntime(lang Language, path string, err error) error {
	dirs := s.runtimeDirs()
	name := filepath.Base(path)
	if _, found := FindRuntime(dirs, name); found || len(dirs) == 1 {
		return fmt.Errorf("%w: the %s runtime %s cannot be read (%v); fetch it with `make runtimes` or point --runtimes at the folder holding it", ErrUnavailable, lang, path, errors.Unwrap(err))
	}
	return fmt.Errorf("%w: the %s runtime %s is in none of the folders searched: %s; fetch it with `make runtimes` (into runtimes/ beside bin/) or point --runtimes (TOOLHOST_RUNTIMES) at the folder holding it", ErrUnavailable, lang, name, strings.Join(dirs, ", "))
}
