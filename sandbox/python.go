package sandbox

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

//go:embed bootstrap.py
var pythonBootstrap string

// pythonEngine runs CPython (a WASI command) one instance per run.
type pythonEngine struct {
	s        *Sandbox
	file     runtimeFile
	compiled wazero.CompiledModule
	pool     *pool[*pyInstance]
}

func newPythonEngine(s *Sandbox, path string) *pythonEngine {
	e := &pythonEngine{s: s, file: runtimeFile{lang: Python, path: path}}
	e.pool = newPool(s.cfg.PythonPool, e.start, func(p *pyInstance) { p.discard() })
	e.file.load(s, func(ctx context.Context, wasm []byte) error {
		cm, err := s.rt.CompileModule(ctx, wasm)
		if err != nil {
			return err
		}
		e.compiled = cm
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			e.pool.run(s.ctx, s, string(Python))
		}()
		return nil
	})
	return e
}

func (e *pythonEngine) available(ctx context.Context) error { return e.file.available(ctx) }

func (e *pythonEngine) waitReady(ctx context.Context) error {
	if err := e.file.available(ctx); err != nil {
		return err
	}
	return e.pool.waitFull(ctx)
}

// pyInstance is one CPython process-equivalent: booted, blocked reading its
// program from stdin, or running one.
type pyInstance struct {
	stdin          *stdinFeed
	stdout, stderr *capture
	dir            *workDir
	cancel         context.CancelFunc // closes the module (and wakes sleeps)
	done           chan struct{}      // closed when the interpreter ended
	exitCode       uint32
	err            error // a trap or other non-exit failure
	peak           atomic.Uint64
	limit          uint64
}

// start boots an interpreter and waits until it blocks reading its program.
func (e *pythonEngine) start(ctx context.Context) (*pyInstance, error) {
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
		done:   make(chan struct{}),
		limit:  uint64(s.cfg.MemoryLimitMiB) << 20,
	}
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(dir.fs(), "/")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("python", "-S", "-B", "-c", pythonBootstrap).
		WithStdin(p.stdin).
		WithStdout(p.stdout).
		WithStderr(p.stderr).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithNanosleep(func(ns int64) { sleepCtx(ictx, time.Duration(ns)) })
	actx := experimental.WithMemoryAllocator(ictx, newAllocator(&p.peak))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(p.done)
		mod, err := s.rt.InstantiateModule(actx, e.compiled, cfg)
		var exit *sys.ExitError
		switch {
		case errors.As(err, &exit):
			p.exitCode = exit.ExitCode()
		case err != nil:
			p.err = err
		}
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
		return nil, fmt.Errorf("python ended while booting (exit %d, %v): %s", p.exitCode, p.err, boot)
	case <-ctx.Done():
		p.discard()
		return nil, ctx.Err()
	}
}

// discard stops the instance and removes its directory.
func (p *pyInstance) discard() {
	p.cancel()
	<-p.done
	_ = p.dir.remove()
}

func (e *pythonEngine) run(ctx context.Context, req *Request, progress func(string)) (*Result, error) {
	p, warm := e.pool.take()
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
	defer func() {
		e.s.wg.Add(1)
		go func() {
			defer e.s.wg.Done()
			p.discard()
		}()
	}()
	start := time.Now()
	if err := p.dir.place(req.Files); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	p.stdout.attach(e.s.cfg.StdoutLimit, nil)
	p.stderr.attach(e.s.cfg.StderrLimit, []byte("\x00"+token+" "))

	runCtx, cancel := context.WithDeadline(ctx, runDeadline(ctx, req.Timeout))
	defer cancel()
	input := make([]byte, 0, len(token)+24+len(req.Code)+len(req.Stdin))
	input = fmt.Appendf(input, "%s %d\n", token, len(req.Code))
	input = append(input, req.Code...)
	input = append(input, req.Stdin...)
	p.stdin.supply(input)

	// The status line is the end of the run: what remains is os._exit and
	// the module's teardown, which the deferred discard does after the
	// result is on its way.
	watch(runCtx, p.done, p.stderr.done, progress, p.cancel)
	select { // after a stop, wait for the interpreter to end
	case <-p.done:
	case <-p.stderr.done:
	}
	res := &Result{Language: Python, Duration: time.Since(start), Warm: warm}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err // the caller cancelled
	}
	res.Stdout, res.StdoutTruncated = p.stdout.result()
	res.Stderr, res.StderrTruncated = p.stderr.result()
	// exitCode and err are the interpreter goroutine's until done closes;
	// after a status line it may still be on its way out.
	exited := false
	select {
	case <-p.done:
		exited = true
		res.ExitCode = int(p.exitCode)
	default:
	}
	status, complete := p.stderr.statusLine()
	fields := strings.Fields(status)
	switch {
	case runCtx.Err() != nil && !complete:
		res.TimedOut = true
		res.ExitCode = -1
	case complete && len(fields) == 2:
		if fields[0] == "mem" {
			res.MemoryExceeded = true
		}
		if c, err := strconv.Atoi(fields[1]); err == nil {
			res.ExitCode = c
		}
	case exited && p.err != nil:
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
