package quickjs

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/toolhost/toolhost/sandbox/internal/wasmedit"
)

//go:embed prelude.js
var prelude string

var (
	// ErrInterrupted reports that the program was stopped because the
	// context given to Eval (or Instantiate) ended.
	ErrInterrupted = errors.New("quickjs: interrupted")
	// ErrMemory reports that the program ran out of memory: its heap reached
	// Options.MemoryLimit, or linear memory reached the runtime's page cap.
	ErrMemory = errors.New("quickjs: out of memory")
)

// DefaultMaxStack is the stack limit used when Options.MaxStack is zero, and
// the largest one allowed: the binary links a 1 MiB native stack, and half of
// it leaves room for the C frames that throw the RangeError.
const DefaultMaxStack = 512 << 10

// DefaultMaxValue is the cap on the last value's JSON when Options.MaxValue
// is zero.
const DefaultMaxValue = 1 << 20

// The scratch buffer: an argv array of up to four boxes, then a length.
const (
	scratchLen  = 16
	scratchSize = scratchLen + 4
)

// maxException caps the text of an uncaught exception (a program can throw a
// huge message).
const maxException = 64 << 10

const (
	envModule = "env"
	evalFile  = "<eval>"

	// JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC: a script in which top-level
	// await is allowed; the engine returns a promise of {value: completion}.
	evalFlagsAsync = 1 << 7
)

// Module is quickjs.wasm compiled on one runtime, with the host module it
// imports defined there. It is safe for concurrent use.
type Module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	// data is what instantiation would write into memory: the binary is
	// compiled without its data segments (wasmedit), so that an instance
	// whose memory already holds the snapshot (Options.Premapped) does not
	// get it overwritten; the template gets them written by the host.
	data []wasmedit.Segment
	snap *snapshot // nil: every instance runs qjs_init and the prelude
	// passedBodies are the script bodies that passed checkBody on any of its
	// instances, so that a tool's body is checked once, not at every call.
	passedBodies *checkedBodies
}

// Compile compiles quickjs.wasm once on rt and defines the host module(s) it
// imports: "env" (always; a runtime may hold one quickjs Module) and
// "wasi_snapshot_preview1" (wazero's implementation, unless rt already has
// it). The machine code is cached by rt's compilation cache, if it has one.
func Compile(ctx context.Context, rt wazero.Runtime, wasm []byte) (*Module, error) {
	if rt.Module(envModule) != nil {
		return nil, fmt.Errorf("quickjs: the runtime already has a module named %q", envModule)
	}
	module, data, err := wasmedit.Apply(wasm, wasmedit.Edit{KeepCustom: true})
	if err != nil {
		return nil, fmt.Errorf("quickjs: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, module)
	if err != nil {
		return nil, fmt.Errorf("quickjs: compile: %w", err)
	}
	if err := checkImports(compiled); err != nil {
		return nil, err
	}
	if rt.Module(wasi_snapshot_preview1.ModuleName) == nil {
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			return nil, fmt.Errorf("quickjs: instantiate WASI: %w", err)
		}
	}
	env, err := defineHost(rt).Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("quickjs: define host module: %w", err)
	}
	m := &Module{rt: rt, compiled: compiled, data: data, passedBodies: newCheckedBodies(maxCheckedBodies)}
	if m.snap, err = m.takeSnapshot(ctx); err != nil {
		// Leave the runtime as it was, so that Compile can be retried.
		_ = env.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return m, nil
}

// checkImports refuses a binary that wants more from the host than this
// package provides, so a different quickjs.wasm fails at Compile, not later.
func checkImports(cm wazero.CompiledModule) error {
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
		case envModule:
			if _, ok := hostFuncs[name]; !ok {
				return fmt.Errorf("quickjs: the binary imports %s.%s, which this host does not provide", mod, name)
			}
		default:
			return fmt.Errorf("quickjs: the binary imports %s.%s, which this host does not provide", mod, name)
		}
	}
	for _, name := range []string{"qjs_init", "qjs_eval", "qjs_call", "wasm_malloc", "wasm_free"} {
		if _, ok := cm.ExportedFunctions()[name]; !ok {
			return fmt.Errorf("quickjs: the binary does not export %s: not a quickjs-wasi reactor", name)
		}
	}
	return nil
}

// Options configure one instance.
type Options struct {
	// MemoryLimit caps the engine's heap in bytes; 0 leaves only the
	// runtime's page cap. Keep it some MiB below that cap, so the engine
	// refuses first and throws a clean "out of memory".
	MemoryLimit int64
	// MaxStack caps the JavaScript stack in bytes (DefaultMaxStack when 0,
	// never more).
	MaxStack int
	// Stdout receives console.log/info/debug/dir/table, Stderr
	// console.error/warn/trace/assert and unhandled promise rejections. The
	// caller caps them; nil discards. Write must not retain p.
	Stdout, Stderr io.Writer
	// MaxValue caps the JSON of the last value (or of what a function
	// returns, CallFunction) in bytes (DefaultMaxValue when 0): a larger one
	// is reported as Result.ValueTooLarge, with its size, rather than
	// copied out.
	MaxValue int
	// Seed seeds Math.random (its first 16 bytes); when shorter, the seed is
	// read from crypto/rand.
	Seed []byte
	// Premapped says the instance's linear memory already holds
	// Module.SnapshotImage from its first byte: the memory allocator in the
	// context mapped it (copy-on-write), so it is not copied again.
	Premapped bool
}

// VM is one instance of the engine with its context, ready to evaluate. It is
// not safe for concurrent use.
type VM struct {
	mod  api.Module
	opts Options
	fn   exports

	undefined    uint32 // box holding undefined: `this` of helper calls
	scratch      uint32 // scratchSize bytes: argv arrays and an out-length
	evalFile     uint32 // "<eval>\0"
	helpers      helpers
	passedBodies *checkedBodies // the Module's

	// rejections are promises rejected with no handler yet, keyed by the
	// promise object's address, holding the boxes the engine handed over.
	rejections map[uint32][2]uint32
	// hostErr is a failure inside a host function (a Go error, not a JS
	// one), reported by the call that led there.
	hostErr error
	// soft is the context the interrupt hook watches: it ends a little
	// before the caller's, so that a busy loop stops with a clean exception
	// before the runtime closes the module.
	soft context.Context
	// describing is set while the describe helper runs, so that an
	// exception it throws is not described in turn.
	describing bool
}

// helpers are the boxes of the functions the prelude returns.
type helpers struct{ seed, toJSON, describe, runTimers, define, toolScript uint32 }

// exports are the reactor functions the host calls.
type exports struct {
	init, eval, call, isException, getException, isUncatchable            api.Function
	isJobPending, executePendingJob, isPromise, promiseState, promiseRes  api.Function
	newHostFunction, newNumber, newString, getPropString, getStringLen    api.Function
	freeCString, freeValue, getUndefined, getFloat64, valuePtr            api.Function
	setMemoryLimit, setMaxStackSize, setInterruptHandler, setRejectionHdl api.Function
	malloc, free                                                          api.Function
}

func (e *exports) bind(mod api.Module) error {
	for name, dst := range map[string]*api.Function{
		"qjs_init": &e.init, "qjs_eval": &e.eval, "qjs_call": &e.call,
		"qjs_is_exception": &e.isException, "qjs_get_exception": &e.getException,
		"qjs_is_uncatchable_error": &e.isUncatchable,
		"qjs_is_job_pending":       &e.isJobPending, "qjs_execute_pending_job": &e.executePendingJob,
		"qjs_is_promise": &e.isPromise, "qjs_promise_state": &e.promiseState, "qjs_promise_result": &e.promiseRes,
		"qjs_new_host_function": &e.newHostFunction, "qjs_new_number": &e.newNumber, "qjs_new_string": &e.newString,
		"qjs_get_prop_string": &e.getPropString, "qjs_get_string_len": &e.getStringLen,
		"qjs_free_cstring": &e.freeCString, "qjs_free_value": &e.freeValue,
		"qjs_get_undefined": &e.getUndefined, "qjs_get_float64": &e.getFloat64, "qjs_get_value_ptr": &e.valuePtr,
		"qjs_set_memory_limit": &e.setMemoryLimit, "qjs_set_max_stack_size": &e.setMaxStackSize,
		"qjs_set_interrupt_handler": &e.setInterruptHandler, "qjs_set_promise_rejection_handler": &e.setRejectionHdl,
		"wasm_malloc": &e.malloc, "wasm_free": &e.free,
	} {
		f := mod.ExportedFunction(name)
		if f == nil {
			return fmt.Errorf("quickjs: the binary does not export %s", name)
		}
		*dst = f
	}
	return nil
}

// Instantiate makes a fresh instance, initializes the engine, installs the
// console, timers and the seeded Math.random: the VM is ready to Eval. ctx is
// used for the instantiation (it may carry an experimental memory allocator)
// and bounds the set-up.
func (m *Module) Instantiate(ctx context.Context, opts Options) (*VM, error) {
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.MaxValue <= 0 {
		opts.MaxValue = DefaultMaxValue
	}
	if opts.MaxStack <= 0 || opts.MaxStack > DefaultMaxStack {
		opts.MaxStack = DefaultMaxStack
	}
	if opts.MemoryLimit < 0 || opts.MemoryLimit > math.MaxUint32 {
		return nil, fmt.Errorf("quickjs: memory limit %d out of range", opts.MemoryLimit)
	}
	// Real clocks and real randomness: wazero's defaults are fake and
	// deterministic. No arguments, environment or file system. The engine
	// itself writes to fd 1/2 only on internal failures. The data segments
	// and the reactor's _initialize (libc constructors) only matter without
	// a snapshot, which overwrites all they did.
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithStdout(opts.Stdout).
		WithStderr(opts.Stderr)
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, callError(ctx, "instantiate", err)
	}
	if m.snap == nil {
		if err := m.initialize(ctx, mod); err != nil {
			_ = mod.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	vm := &VM{mod: mod, opts: opts, passedBodies: m.passedBodies, rejections: map[uint32][2]uint32{}, soft: ctx}
	if err := vm.setUp(withVM(ctx, vm), m.snap); err != nil {
		_ = mod.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return vm, nil
}

// initialize does what instantiating the original binary would have: write
// its data segments, run _initialize.
func (m *Module) initialize(ctx context.Context, mod api.Module) error {
	for _, d := range m.data {
		if !mod.Memory().Write(d.Offset, d.Data) {
			return fmt.Errorf("quickjs: data segment at %d does not fit the memory", d.Offset)
		}
	}
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		return callError(ctx, "_initialize", err)
	}
	return nil
}

// SnapshotImage is the linear memory every instance starts from (nil when
// there is none). A caller may map it into a new instance's memory itself,
// copy-on-write, and say so with Options.Premapped; it must not change it.
func (m *Module) SnapshotImage() []byte {
	if m.snap == nil {
		return nil
	}
	return m.snap.memory
}

func (vm *VM) setUp(ctx context.Context, snap *snapshot) error {
	if err := vm.fn.bind(vm.mod); err != nil {
		return err
	}
	if snap != nil {
		if err := snap.restore(vm); err != nil {
			return err
		}
	} else if err := vm.initEngine(ctx); err != nil {
		return err
	}
	return vm.configure(ctx)
}

// initEngine creates the engine's runtime and context and runs the prelude:
// the state a snapshot captures.
func (vm *VM) initEngine(ctx context.Context) error {
	rc, err := vm.call1(ctx, vm.fn.init)
	if err != nil {
		return err
	}
	if int32(rc) != 0 {
		return errors.New("quickjs: qjs_init failed")
	}
	if _, err := vm.call1(ctx, vm.fn.setInterruptHandler, 1); err != nil {
		return err
	}
	if _, err := vm.call1(ctx, vm.fn.setRejectionHdl, 1); err != nil {
		return err
	}
	if vm.scratch, err = vm.malloc(ctx, scratchSize); err != nil {
		return err
	}
	if vm.evalFile, err = vm.cString(ctx, evalFile); err != nil {
		return err
	}
	if vm.undefined, err = vm.box(vm.call1(ctx, vm.fn.getUndefined)); err != nil {
		return err
	}

	preludeFn, err := vm.evalScript(ctx, prelude, "<prelude>", 0)
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, preludeFn)
	out, err := vm.hostFunction(ctx, hostOut)
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, out)
	errFn, err := vm.hostFunction(ctx, hostErr)
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, errFn)
	helpers, err := vm.callJS(ctx, preludeFn, out, errFn)
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, helpers)
	for name, dst := range map[string]*uint32{
		"seed": &vm.helpers.seed, "toJSON": &vm.helpers.toJSON,
		"describe": &vm.helpers.describe, "runTimers": &vm.helpers.runTimers,
		"define": &vm.helpers.define, "toolScript": &vm.helpers.toolScript,
	} {
		if *dst, err = vm.prop(ctx, helpers, name); err != nil {
			return err
		}
	}
	return nil
}

// configure applies what differs between instances: the limits and the
// seed.
func (vm *VM) configure(ctx context.Context) error {
	if _, err := vm.call1(ctx, vm.fn.setMemoryLimit, uint64(vm.opts.MemoryLimit)); err != nil {
		return err
	}
	if _, err := vm.call1(ctx, vm.fn.setMaxStackSize, uint64(vm.opts.MaxStack)); err != nil {
		return err
	}
	return vm.seed(ctx)
}

// seed fills the Math.random state from Options.Seed or crypto/rand.
func (vm *VM) seed(ctx context.Context) error {
	seed := vm.opts.Seed
	if len(seed) < 16 {
		seed = make([]byte, 16)
		if _, err := rand.Read(seed); err != nil {
			return fmt.Errorf("quickjs: seed: %w", err)
		}
	}
	args := make([]uint32, 4)
	for i := range args {
		n, err := vm.box(vm.call1(ctx, vm.fn.newNumber, api.EncodeF64(float64(binary.LittleEndian.Uint32(seed[4*i:])))))
		if err != nil {
			return err
		}
		defer vm.freeValue(ctx, n)
		args[i] = n
	}
	r, err := vm.callJS(ctx, vm.helpers.seed, args...)
	if err != nil {
		return err
	}
	vm.freeValue(ctx, r)
	return nil
}

// Define makes a global variable name holding the JSON value, parsed by the
// engine: how input data (files, a tool's arguments) reaches a program
// without being spliced into its source. Call it before Eval.
func (vm *VM) Define(ctx context.Context, name string, value json.RawMessage) error {
	ctx = withVM(ctx, vm)
	vm.soft = ctx
	vm.hostErr = nil
	if !json.Valid(value) {
		return errors.New("quickjs: define: the value is not valid JSON")
	}
	err := vm.define(ctx, name, value)
	var js *jsError
	switch {
	case errors.As(err, &js) && isOutOfMemory(js.text):
		return fmt.Errorf("%w: define %s: %s", ErrMemory, name, js.text)
	case errors.As(err, &js) && vm.interrupted():
		return fmt.Errorf("%w: define %s: %s", ErrInterrupted, name, js.text)
	case err != nil:
		return fmt.Errorf("quickjs: define %s: %w", name, err)
	}
	return nil
}

func (vm *VM) define(ctx context.Context, name string, value json.RawMessage) error {
	n, err := vm.jsString(ctx, name)
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, n)
	v, err := vm.jsString(ctx, string(value))
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, v)
	r, err := vm.callJS(ctx, vm.helpers.define, n, v)
	if err != nil {
		return err
	}
	vm.freeValue(ctx, r)
	return nil
}

// jsString makes a JavaScript string; the box is owned by the caller.
func (vm *VM) jsString(ctx context.Context, s string) (uint32, error) {
	p, err := vm.cString(ctx, s)
	if err != nil {
		return 0, err
	}
	defer vm.freeMem(ctx, p)
	r, err := vm.call1(ctx, vm.fn.newString, uint64(p), uint64(len(s)))
	return vm.checked(ctx, r, err)
}

// Close releases the instance. The VM must not be used afterwards.
func (vm *VM) Close(ctx context.Context) error {
	return vm.mod.Close(ctx)
}
