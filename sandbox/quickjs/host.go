package quickjs

import (
	"context"
	"errors"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Names of the host functions the prelude receives (console output).
const (
	hostOut = "stdout"
	hostErr = "stderr"
)

const i32 = api.ValueTypeI32

type hostFunc struct {
	params, results []api.ValueType
	fn              api.GoModuleFunc
}

// hostFuncs are the env imports of quickjs.wasm. They are shared by every
// instance on a runtime; each finds its VM through the context of the call
// that led into the guest (every call the host makes carries it).
var hostFuncs = map[string]hostFunc{
	// host_call(name, nameLen, this, argc, argv) -> JSValue*: a host function
	// was called. The trampoline owns this and argv and frees the box we
	// return; 0 would mean "exception thrown".
	"host_call": {[]api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i32}, neverIntoClosed(hostCall)},
	// host_interrupt() -> int: polled by the engine every few thousand
	// bytecodes; non-zero stops the program with an uncatchable error.
	"host_interrupt": {nil, []api.ValueType{i32}, func(ctx context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
		if vm := vmFrom(ctx); ctx.Err() != nil || vm != nil && vm.interrupted() {
			stack[0] = 1
		}
	}},
	// host_promise_rejection(promise, reason, isHandled): the host owns
	// both boxes.
	"host_promise_rejection": {[]api.ValueType{i32, i32, i32}, nil, neverIntoClosed(hostPromiseRejection)},
	// The module loader is never enabled: import fails with "could not load
	// module". These answer NULL if the engine asks anyway.
	"host_module_normalize": {[]api.ValueType{i32, i32}, []api.ValueType{i32}, func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
	}},
	"host_module_load": {[]api.ValueType{i32, i32}, []api.ValueType{i32}, func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
	}},
	// host_get_timezone_offset(hi, lo) -> seconds east of UTC: the sandbox
	// lives in UTC, whatever the server's zone, so local-time methods agree
	// with the UTC ones and reveal nothing about the host.
	"host_get_timezone_offset": {[]api.ValueType{i32, i32}, []api.ValueType{i32}, func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = 0
	}},
}

func defineHost(rt wazero.Runtime) wazero.HostModuleBuilder {
	b := rt.NewHostModuleBuilder(envModule)
	for name, h := range hostFuncs {
		b = b.NewFunctionBuilder().WithGoModuleFunction(h.fn, h.params, h.results).Export(name)
	}
	return b
}

// neverIntoClosed wraps a host function that calls back into the guest
// (host_call converts console.log's argument and makes the undefined it
// returns; host_promise_rejection frees boxes) so that it never returns
// into a module closed while it ran. A nested call can meet the end of the
// context: with WithCloseOnContextDone, wazero then closes the module and
// frees its linear memory at once, inside the nested call, while the guest
// frames that called the host function are still on the stack. Returning
// to them would run compiled code on freed memory: with an allocator that
// unmaps it (the sandbox's), a SIGSEGV that takes the whole process down.
// Panicking with the exit error instead unwinds the guest call, as
// proc_exit does: wazero recovers the panic and the call that led into the
// guest returns the error (ErrInterrupted for the caller). host_interrupt
// makes no nested call, so it cannot free the memory under its caller.
func neverIntoClosed(fn api.GoModuleFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		fn(ctx, mod, stack)
		if mod.IsClosed() {
			panic(closedExit(ctx))
		}
	}
}

// closedExit is the exit error of a module closed under a running call,
// with the code wazero gives a module it closes when the context ends.
func closedExit(ctx context.Context) *sys.ExitError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sys.NewExitError(sys.ExitCodeDeadlineExceeded)
	}
	return sys.NewExitError(sys.ExitCodeContextCanceled)
}

type vmKey struct{}

func withVM(ctx context.Context, vm *VM) context.Context {
	return context.WithValue(ctx, vmKey{}, vm)
}

func vmFrom(ctx context.Context) *VM {
	vm, _ := ctx.Value(vmKey{}).(*VM)
	return vm
}

func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	namePtr, nameLen := uint32(stack[0]), uint32(stack[1])
	argc, argv := uint32(stack[3]), uint32(stack[4])
	vm := vmFrom(ctx)
	if vm == nil || vm.mod != mod {
		// Not reachable through this package; answer undefined.
		stack[0] = newUndefined(ctx, mod)
		return
	}
	name, _ := mod.Memory().Read(namePtr, nameLen)
	w := vm.opts.Stdout
	if string(name) == hostErr {
		w = vm.opts.Stderr
	}
	if argc >= 1 && w != nil {
		if arg, ok := mod.Memory().ReadUint32Le(argv); ok {
			// The writer's errors are its own business (a capped writer
			// drops the excess); the program goes on, as it would with a
			// closed pipe.
			err := vm.stringBytes(ctx, arg, func(b []byte) { _, _ = w.Write(b) })
			if errors.Is(err, errConversion) {
				// The conversion threw (out of memory): returning NULL lets
				// the pending exception propagate in the program.
				stack[0] = 0
				return
			}
			if err != nil && vm.hostErr == nil {
				vm.hostErr = err
			}
		}
	}
	stack[0] = newUndefined(ctx, mod)
}

func newUndefined(ctx context.Context, mod api.Module) uint64 {
	res, err := mod.ExportedFunction("qjs_get_undefined").Call(ctx)
	if err != nil || len(res) == 0 {
		return 0
	}
	return res[0]
}

func hostPromiseRejection(ctx context.Context, mod api.Module, stack []uint64) {
	promise, reason, handled := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]) != 0
	vm := vmFrom(ctx)
	free := func(boxes ...uint32) {
		for _, b := range boxes {
			_, _ = mod.ExportedFunction("qjs_free_value").Call(ctx, uint64(b))
		}
	}
	if vm == nil || vm.mod != mod {
		free(promise, reason)
		return
	}
	key := vm.valuePtr(ctx, promise)
	if old, ok := vm.rejections[key]; ok {
		free(old[0], old[1])
		delete(vm.rejections, key)
	}
	if handled {
		free(promise, reason)
		return
	}
	vm.rejections[key] = [2]uint32{promise, reason}
}

// valuePtr is the address of the object in box v: its identity.
func (vm *VM) valuePtr(ctx context.Context, v uint32) uint32 {
	res, err := vm.fn.valuePtr.Call(ctx, uint64(v))
	if err != nil || len(res) == 0 {
		return 0
	}
	return uint32(res[0])
}

// reportRejections writes the promises rejected without a handler to
// Stderr (as Node does), except the ones whose rejection is the result.
func (vm *VM) reportRejections(ctx context.Context, results ...uint32) {
	skip := map[uint32]bool{}
	for _, r := range results {
		skip[vm.valuePtr(ctx, r)] = true
	}
	for key, boxes := range vm.rejections {
		delete(vm.rejections, key)
		if !skip[key] && !vm.interrupted() {
			if text, err := vm.describe(ctx, boxes[1]); err == nil {
				_, _ = vm.opts.Stderr.Write([]byte("Uncaught (in promise) " + strings.TrimPrefix(text, "Uncaught ") + "\n"))
			}
		}
		vm.freeValue(ctx, boxes[0])
		vm.freeValue(ctx, boxes[1])
	}
}

// isOutOfMemory recognises the exception the engine throws when an
// allocation is refused.
func isOutOfMemory(exception string) bool {
	return strings.HasPrefix(exception, "InternalError: out of memory")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
