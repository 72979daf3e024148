package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/sandbox/quickjs"
)

// jsEngine runs QuickJS-NG programs, one VM per run.
type jsEngine struct {
	s *Sandbox
	warmEngine[*jsInstance]
	mod *quickjs.Module
	// image is the engine's snapshot, mapped copy-on-write into each new
	// instance where that is possible (else quickjs copies it).
	image memImage
}

func newJSEngine(s *Sandbox, path string) *jsEngine {
	e := &jsEngine{s: s, warmEngine: warmEngine[*jsInstance]{file: runtimeFile{lang: JavaScript, path: path}}}
	e.pool = newPool(string(JavaScript), s.cfg.JavaScriptPool, s.cfg.Concurrency, e.start, func(j *jsInstance) { j.close() })
	if s.opts.Now != nil {
		e.pool.now = s.opts.Now
	}
	e.file.load(s, func(ctx context.Context, wasm []byte) error {
		m, err := quickjs.Compile(ctx, s.rt, wasm)
		if err != nil {
			return err
		}
		e.mod = m
		if img := m.SnapshotImage(); img != nil {
			if im, err := newMemImage(img); err == nil && im.file != nil {
				e.image = im
			} else if err != nil {
				s.log.Warn("sandbox: JavaScript instances copy their snapshot", "err", err)
			}
		}
		if err := e.image.learnHot(ctx, e.probe); err != nil {
			// Only slower: each run copies its pages as it writes them.
			s.log.Warn("sandbox: JavaScript instances will copy their pages during the run", "err", err)
		}
		e.startPool(s)
		return nil
	})
	return e
}

type jsInstance struct {
	vm             *quickjs.VM
	stdout, stderr *capture
}

func (e *jsEngine) start(ctx context.Context) (*jsInstance, error) {
	s := e.s
	j := &jsInstance{stdout: newCapture(), stderr: newCapture()}
	var seed [16]byte
	_, _ = rand.Read(seed[:])
	limit := int64(s.cfg.MemoryLimitMiB) << 20
	actx, stop := withInstanceMemory(ctx, &e.image, nil)
	defer stop()
	vm, err := e.mod.Instantiate(actx, quickjs.Options{
		Premapped: e.image.file != nil,
		// The engine's own limit sits below the page cap so it throws a
		// clean out-of-memory before the allocator itself fails.
		MemoryLimit: limit - limit/8,
		MaxStack:    s.cfg.JSMaxStackKiB << 10,
		MaxValue:    MaxValue,
		Stdout:      j.stdout,
		Stderr:      j.stderr,
		Seed:        seed[:],
	})
	if cause := context.Cause(actx); cause != nil {
		// The memory could not be restored from the snapshot (or ctx
		// ended): the instance is not kept, whatever its set-up did.
		if err == nil {
			_ = vm.Close(context.Background())
		}
		err = cause
	}
	if err != nil {
		return nil, fmt.Errorf("instantiate quickjs: %w", err)
	}
	j.vm = vm
	return j, nil
}

func (j *jsInstance) close() { _ = j.vm.Close(context.Background()) }

// afterRun is how long a finished run's housekeeping (closing its
// instance, starting the next) waits for the response to leave: the
// pipeline's and MCP's own part after the run takes about half a
// millisecond on an idle server.
const afterRun = 3 * time.Millisecond

// MaxValue caps the JSON of a JavaScript value the sandbox returns
// (Result.Value) in bytes.
const MaxValue = quickjs.DefaultMaxValue

// hotProbe stands for the programs the engine runs most: a tool script
// called as a function (JSON in, JSON out, see tools/runcode) that also
// prints.
const hotProbe = `console.log(args.n); return { ok: true, n: args.n };`

// probe runs hotProbe in an instance started like the pool's and returns
// what closes it: learnHot reads which pages it wrote.
func (e *jsEngine) probe(ctx context.Context) (func(), error) {
	limit := int64(e.s.cfg.MemoryLimitMiB) << 20
	vm, err := e.mod.Instantiate(ctx, quickjs.Options{Premapped: true, MemoryLimit: limit - limit/8, MaxStack: e.s.cfg.JSMaxStackKiB << 10})
	if err != nil {
		return nil, err
	}
	closeVM := func() { _ = vm.Close(context.Background()) }
	if _, err := vm.CallFunction(ctx, hotProbe, json.RawMessage(`{"n":1}`)); err != nil {
		closeVM()
		return nil, err
	}
	return closeVM, nil
}

func (e *jsEngine) run(ctx context.Context, req *Request, progress func(string)) (*Result, error) {
	j, warm, refill := e.pool.take()
	if !warm {
		var err error
		if j, err = e.start(e.s.ctx); err != nil {
			refill()
			return nil, err
		}
	}
	// Closing unmaps the instance's memory (0.15–0.35 ms) and the refill
	// maps a new one; both interrupt every thread of the process (TLB
	// shootdowns) and take a core: they wait until the result is on its
	// way (afterRun), or its 10 ms, for a run that lasts.
	defer e.s.handOff(afterRun, func() {
		j.close()
		refill()
	})
	start := time.Now()
	j.stdout.attach(e.s.cfg.StdoutLimit)
	j.stderr.attach(e.s.cfg.StderrLimit)
	runCtx, cancel := context.WithDeadline(ctx, runDeadline(ctx, req.Timeout))
	defer cancel()
	// Closing the sandbox stops a running program too.
	defer context.AfterFunc(e.s.ctx, cancel)()

	done := make(chan struct{})
	go watch(runCtx, done, nil, progress, func() {})
	out, err := e.eval(runCtx, j, req)
	close(done)

	res := &Result{Language: JavaScript, Duration: time.Since(start), Warm: warm, Value: json.RawMessage("null")}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
		return nil, cerr
	}
	res.Stdout, res.StdoutTruncated = j.stdout.result()
	res.Stderr, res.StderrTruncated = j.stderr.result()
	exception := ""
	if out != nil {
		if len(out.Value) > 0 {
			res.Value = out.Value
		}
		res.ValueTooLarge, res.ValueBytes = out.ValueTooLarge, out.ValueBytes
		exception = out.Exception
		if out.ValueError != "" && exception == "" {
			// Like the Python side's own notes: said in stderr, after what
			// the program wrote, and the run's outcome unchanged.
			note := "[sandbox] result is null: the last value cannot be written as JSON: " + out.ValueError + "\n"
			res.Stderr, res.StderrTruncated = appendCapped(res.Stderr, note, e.s.cfg.StderrLimit, res.StderrTruncated)
		}
	}
	switch {
	case errors.Is(err, quickjs.ErrInterrupted) || (err != nil && runCtx.Err() != nil):
		res.TimedOut = true
		res.ExitCode = -1
	case errors.Is(err, quickjs.ErrMemory):
		res.MemoryExceeded = true
		res.ExitCode = 1
		if exception == "" {
			exception = err.Error()
		}
	case err != nil:
		// A trap inside the engine: the program crashed it. Report it like
		// a crashed process rather than as our failure.
		e.s.log.Warn("quickjs trapped", "err", err)
		res.ExitCode = 134
		exception = "[sandbox] the JavaScript engine stopped: " + trapMessage(err)
	case exception != "":
		res.ExitCode = 1
	}
	if exception != "" {
		res.Stderr, res.StderrTruncated = appendCapped(res.Stderr, exception+"\n", e.s.cfg.StderrLimit, res.StderrTruncated)
		res.Value = json.RawMessage("null")
		res.ValueTooLarge, res.ValueBytes = false, 0
	}
	return res, nil
}

// eval defines the input files, when there are any, then runs the program.
func (e *jsEngine) eval(ctx context.Context, j *jsInstance, req *Request) (*quickjs.Result, error) {
	if len(req.Files) > 0 {
		files := map[string]string{}
		for _, f := range req.Files {
			files[f.Name] = string(f.Data)
		}
		b, _ := json.Marshal(files)
		if _, err := j.vm.Eval(ctx, "Object.defineProperty(globalThis, 'files', {value: Object.freeze("+string(b)+"), enumerable: false}); undefined"); err != nil {
			return nil, err
		}
	}
	if req.Args != nil {
		return j.vm.CallFunction(ctx, req.Code, req.Args)
	}
	return j.vm.Eval(ctx, req.Code)
}

// appendCapped appends s to b without passing limit bytes.
func appendCapped(b []byte, s string, limit int, truncated bool) ([]byte, bool) {
	room := limit - len(b)
	if room >= len(s) {
		return append(b, s...), truncated
	}
	if room <= 0 {
		return b, true
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return append(b, s[:cut]...), true
}
