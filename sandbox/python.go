package sandbox

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/toolhost/toolhost/sandbox/internal/wasmedit"
)

//go:embed bootstrap.py
var pythonBootstrap string

// pythonEngine runs CPython (a WASI command, rearranged by rearrangePython)
// one instance per run. Instances are restored from a snapshot of a booted
// interpreter (see pySnapshot); when no snapshot can be taken, each boots.
type pythonEngine struct {
	s *Sandbox
	warmEngine[*pyInstance]
	compiled wazero.CompiledModule
	data     []wasmedit.Segment // for booting without a snapshot
	snap     *pySnapshot        // nil: boot every instance
	snapErr  error              // why there is no snapshot
}

func newPythonEngine(s *Sandbox, path string) *pythonEngine {
	e := &pythonEngine{s: s, warmEngine: warmEngine[*pyInstance]{file: runtimeFile{lang: Python, path: path}}}
	e.pool = newPool(string(Python), s.cfg.PythonPool, s.cfg.Concurrency, e.start, func(p *pyInstance) { p.discard() })
	if s.opts.Now != nil {
		e.pool.now = s.opts.Now
	}
	e.file.load(s, func(ctx context.Context, wasm []byte) error {
		module, data, err := rearrangePython(wasm)
		if err != nil {
			return err
		}
		cm, err := s.rt.CompileModule(ctx, module)
		if err != nil {
			return err
		}
		e.compiled, e.data = cm, data
		start := time.Now()
		sn, from, err := e.snapshot(ctx, s.opts.CacheDir, wasm)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			e.snapErr = err
			s.log.Warn("sandbox: no Python snapshot; every interpreter boots from scratch (about half a second of CPU each)", "err", err)
		} else {
			e.snap = sn
			s.log.Info("sandbox: Python snapshot ready", "from", from, "mib", sn.size>>20, "ms", time.Since(start).Milliseconds())
		}
		e.startPool(s)
		return nil
	})
	return e
}

// snapshot loads the cached snapshot for this runtime and bootstrap, or
// takes one (and caches it), and checks it runs a program.
func (e *pythonEngine) snapshot(ctx context.Context, dir string, wasm []byte) (*pySnapshot, string, error) {
	key := snapshotKey(wasm)
	if dir != "" {
		if sn, err := loadSnapshot(dir, key); err == nil {
			err := e.check(ctx, sn)
			if err == nil {
				return sn, "cache", nil
			}
			if ctx.Err() != nil {
				sn.close()
				return nil, "", ctx.Err()
			}
			e.s.log.Warn("sandbox: cached Python snapshot does not run; taking a new one", "err", err)
			sn.close()
		}
	}
	sn, img, err := e.takeSnapshot(ctx)
	if err != nil {
		return nil, "", err
	}
	from := "boot"
	if dir != "" {
		if err := sn.save(dir, key, img); err != nil {
			e.s.log.Warn("sandbox: cannot cache the Python snapshot", "dir", dir, "err", err)
		} else if saved, err := loadSnapshot(dir, key); err == nil {
			sn = saved
		}
	}
	if sn.file == nil && sn.copied == nil {
		im, err := newMemImage(img)
		if err != nil {
			return nil, "", err
		}
		sn.memImage = im
	}
	if err := e.check(ctx, sn); err != nil {
		sn.close()
		return nil, "", fmt.Errorf("a restored interpreter does not run: %w", err)
	}
	return sn, from, nil
}

// check runs one program in an instance restored from sn.
func (e *pythonEngine) check(ctx context.Context, sn *pySnapshot) error {
	p, err := e.startFrom(ctx, sn)
	if err != nil {
		return err
	}
	defer p.discard()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := e.runOn(ctx, p, true, &Request{Code: "import sys\nprint(6 * 7, sys.argv)", Timeout: 30 * time.Second}, func(string) {})
	if err != nil {
		return err
	}
	if got := string(res.Stdout); got != "42 ['main.py']\n" || res.ExitCode != 0 {
		return fmt.Errorf("printed %q, exit %d, stderr %q", got, res.ExitCode, res.Stderr)
	}
	return nil
}

// pyInstance is one CPython process-equivalent: booted, blocked reading its
// program from stdin, or running one.
type pyInstance struct {
	stdin          *stdinFeed
	stdout, stderr *capture
	dir            *workDir
	cancel         context.CancelFunc // closes the module (and wakes sleeps)
	// ended is closed when the interpreter stopped running (proc_exit, a
	// trap, a close), before its module is torn down: its output is
	// complete and exitCode and err are set. done is closed after the
	// teardown.
	ended chan struct{}
	done  chan struct{}
	// stopped: the host closed the module (the deadline, a cancel, the
	// sandbox closing) before the interpreter ended by itself.
	stopped  bool
	exitCode uint32
	err      error // a trap or other non-exit failure
	peak     atomic.Uint64
	limit    uint64
}

// start restores an interpreter (or boots one, without a snapshot) and waits
// until it blocks reading its program.
func (e *pythonEngine) start(ctx context.Context) (*pyInstance, error) {
	return e.startFrom(ctx, e.snap)
}

func (e *pythonEngine) startFrom(ctx context.Context, sn *pySnapshot) (*pyInstance, error) {
	s := e.s
	dir, err := newWorkDir(s.cfg.TempDir, int64(s.cfg.WorkDirLimitMiB)<<20)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithCancel(s.ctx)
	p := &pyInstance{
		stdin:  newStdinFeed(ictx),
		stdout: newCapture(),
		stderr: newCapture(),
		dir:    dir,
		cancel: cancel,
		ended:  make(chan struct{}),
		done:   make(chan struct{}),
		limit:  uint64(s.cfg.MemoryLimitMiB) << 20,
	}
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(dir.fs(), "/")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdin(p.stdin).
		WithStdout(p.stdout).
		WithStderr(p.stderr).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithNanosleep(func(ns int64) { sleepCtx(ictx, time.Duration(ns)) })
	var im *memImage
	if sn != nil {
		im = &sn.memImage
		cfg = cfg.WithArgs("python")
	} else {
		cfg = cfg.WithArgs(pythonArgs("run")...)
	}
	actx, stop := withInstanceMemory(ictx, im, &p.peak)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(p.done)
		mod, err := s.rt.InstantiateModule(actx, e.compiled, cfg)
		if cause := context.Cause(actx); err == nil && cause != nil {
			err = cause // the memory is not the snapshot: nothing runs
		}
		stop()
		if err == nil {
			if sn != nil {
				if err = sn.apply(mod); err == nil {
					err = sn.enter(ictx, mod)
				}
			} else {
				if err = writeData(mod, e.data); err == nil {
					_, err = mod.ExportedFunction("_start").Call(ictx)
				}
			}
		}
		var exit *sys.ExitError
		switch {
		case errors.As(err, &exit):
			p.exitCode = exit.ExitCode()
		case err != nil:
			p.err = err
		}
		p.stopped = ictx.Err() != nil
		close(p.ended)
		if mod != nil {
			_ = mod.Close(context.Background())
		}
	}()
	select {
	case <-p.stdin.ready:
		return p, nil
	case <-p.done:
		boot := p.stderr.bootText()
		p.discard()
		err := fmt.Errorf("python ended while starting (exit %d)", p.exitCode)
		if p.err != nil {
			err = fmt.Errorf("python ended while starting (exit %d): %w", p.exitCode, p.err)
		}
		if boot != "" {
			err = fmt.Errorf("%w: %s", err, boot)
		}
		return nil, err
	case <-ctx.Done():
		p.discard()
		return nil, ctx.Err()
	}
}

// enter drives a restored interpreter through one run: _prepare (which
// blocks reading the program) returns the program as a function, the host
// calls it, then _finish, which leaves through proc_exit. A NULL return
// means an exception escaped the bootstrap's reporting (the program broke
// it, say by emptying sys.modules).
func (sn *pySnapshot) enter(ctx context.Context, mod api.Module) error {
	call := mod.ExportedFunction(pyCallExport)
	r, err := call.Call(ctx, uint64(sn.call), uint64(sn.prepare), 0, 0, 0)
	if err != nil {
		return err
	}
	fn := r[0]
	if fn == 0 {
		return errLostException
	}
	if r, err = call.Call(ctx, uint64(sn.call), fn, 0, 0, 0); err != nil {
		return err
	}
	if r[0] == 0 {
		return errLostException
	}
	_, err = call.Call(ctx, uint64(sn.call), uint64(sn.finish), 0, 0, 0)
	return err
}

// pyExitMemory is added to the exit code by the bootstrap's _finish when a
// MemoryError ended the program (bootstrap.py's EXIT_MEMORY).
const pyExitMemory = 1 << 16

var errLostException = errors.New("the program disabled the sandbox's exception reporting, so its exception was lost")

// apply makes a fresh instance's memory the snapshot's (already mapped by
// the restore allocator where it could be) and sets its stack pointer.
func (sn *pySnapshot) apply(mod api.Module) error {
	mem := mod.Memory()
	if cur := uint64(mem.Size()); cur < sn.size {
		if _, ok := mem.Grow(uint32((sn.size - cur) / 65536)); !ok {
			return fmt.Errorf("the memory limit is below the snapshot's %d MiB", sn.size>>20)
		}
	}
	if sn.copied != nil && !mem.Write(0, sn.copied) {
		return errors.New("cannot write the snapshot into memory")
	}
	sp, ok := mod.ExportedGlobal(pySPExport).(api.MutableGlobal)
	if !ok {
		return errors.New("the module does not export its stack pointer")
	}
	sp.Set(sn.sp)
	return nil
}

// discard stops the instance and removes its directory.
func (p *pyInstance) discard() {
	p.cancel()
	<-p.done
	_ = p.dir.remove()
}

func (e *pythonEngine) run(ctx context.Context, req *Request, progress func(string)) (*Result, error) {
	p, warm, refill := e.pool.take()
	defer refill()
	if !warm {
		progress("starting a Python interpreter")
		var err error
		p, err = e.start(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("start python: %w", err)
		}
	}
	defer e.s.handOff(0, p.discard)
	return e.runOn(ctx, p, warm, req, progress)
}

// runOn runs one program in p, which the caller discards afterwards.
func (e *pythonEngine) runOn(ctx context.Context, p *pyInstance, warm bool, req *Request, progress func(string)) (*Result, error) {
	start := time.Now()
	if err := p.dir.place(req.Files); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	p.stdout.attach(e.s.cfg.StdoutLimit)
	p.stderr.attach(e.s.cfg.StderrLimit)

	runCtx, cancel := context.WithDeadline(ctx, runDeadline(ctx, req.Timeout))
	defer cancel()
	input := make([]byte, 0, 24+len(req.Code)+len(req.Stdin))
	input = fmt.Appendf(input, "%d\n", len(req.Code))
	input = append(input, req.Code...)
	input = append(input, req.Stdin...)
	p.stdin.supply(input)

	// The run ends when the interpreter does (the bootstrap's _finish
	// leaves through proc_exit); the module's teardown is left to the
	// deferred discard, after the result is on its way. Nothing the guest
	// writes says the run is over: a program could write it too.
	watch(runCtx, p.ended, nil, progress, p.cancel)
	<-p.ended // after a stop, wait for the interpreter to end
	res := &Result{Language: Python, Duration: time.Since(start), Warm: warm}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err // the caller cancelled
	}
	res.Stdout, res.StdoutTruncated = p.stdout.result()
	res.Stderr, res.StderrTruncated = p.stderr.result()
	switch {
	case p.stopped:
		res.TimedOut = true
		res.ExitCode = -1
	case p.err == nil:
		// proc_exit: the program's own os._exit, or _finish's code with
		// pyExitMemory added when a MemoryError ended the program.
		res.ExitCode = int(p.exitCode &^ pyExitMemory)
		res.MemoryExceeded = p.exitCode&pyExitMemory != 0
	default:
		// A trap: the interpreter itself crashed (out of memory inside C
		// code, a stack overflow). Say so after what it printed.
		if p.peak.Load()+(4<<20) >= p.limit {
			res.MemoryExceeded = true
		}
		res.ExitCode = 134
		res.Stderr = append(res.Stderr, fmt.Sprintf("\n[sandbox] the Python interpreter stopped: %v\n", trapMessage(p.err))...)
	}
	res.Files, res.FilesTruncated = p.dir.collect(e.s.cfg.OutFilesMax, e.s.cfg.OutFileBytes, e.s.cfg.OutTotalBytes)
	return res, nil
}

// trapMessage keeps the first line of a wazero trap (the rest is a wasm
// stack trace of interpreter internals).
func trapMessage(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// stdinFeed is the guest's stdin: reads block until supply hands over the
// bytes (header, program, the program's own stdin), then drain them and end
// with EOF. The first read tells the pool the interpreter finished booting.
type stdinFeed struct {
	ctx       context.Context
	ready     chan struct{}
	readyOnce sync.Once
	data      chan []byte
	buf       []byte
	got       bool
}

func newStdinFeed(ctx context.Context) *stdinFeed {
	return &stdinFeed{ctx: ctx, ready: make(chan struct{}), data: make(chan []byte, 1)}
}

func (f *stdinFeed) supply(b []byte) { f.data <- b }

func (f *stdinFeed) Read(p []byte) (int, error) {
	f.readyOnce.Do(func() { close(f.ready) })
	if !f.got {
		select {
		case f.buf = <-f.data:
			f.got = true
		case <-f.ctx.Done():
			return 0, io.EOF
		}
	}
	if len(f.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// sleepCtx sleeps d or until ctx ends, so a sleeping guest cannot outlive
// its deadline.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
