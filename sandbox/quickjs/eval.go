package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Result is what a program produced besides its output.
type Result struct {
	// Value is the last expression's value (or, when that is a promise, what
	// it resolved to) as JSON; null when undefined, a function or a symbol
	// (JSON has no text for them), and null when ValueTooLarge or
	// ValueError is set.
	Value json.RawMessage
	// ValueTooLarge is set when the value's JSON exceeded Options.MaxValue;
	// ValueBytes is then its size in bytes.
	ValueTooLarge bool
	ValueBytes    int
	// ValueError says why the value could not be serialized (a BigInt, a
	// cycle, a toJSON method that throws, nesting deeper than the host reads):
	// the exception JSON.stringify threw, rendered with its stack. The
	// program itself did not fail, so this is not Exception.
	ValueError string
	// Exception is the uncaught exception, with its stack, when the program
	// threw (or the promise it left rejected); empty otherwise.
	Exception string
}

// Eval runs code as a global script in which top-level await is allowed,
// then runs promise jobs and timers until none is left, and reads the value
// of the last expression. A JavaScript exception is a Result with Exception
// set, not an error. The errors are ErrInterrupted (ctx ended: the soft
// interrupt, or the hard close of the module by the runtime) and ErrMemory
// (the heap limit was reached and nothing caught it), both with a Result
// carrying the exception text when the engine produced one, and wrapped
// wazero failures (a trap), after which the VM is unusable.
func (vm *VM) Eval(ctx context.Context, code string) (*Result, error) {
	ctx = withVM(ctx, vm)
	vm.hostErr = nil
	soft, cancel := softContext(ctx)
	defer cancel()
	vm.soft = soft
	promise, err := vm.evalScript(ctx, code, "", evalFlagsAsync)
	if err != nil {
		return vm.failure(ctx, err)
	}
	defer vm.freeValue(ctx, promise)
	if err := vm.runLoop(ctx); err != nil {
		return vm.failure(ctx, err)
	}
	res := &Result{Value: json.RawMessage("null")}
	state, err := vm.call1(ctx, vm.fn.promiseState, uint64(promise))
	if err != nil {
		return vm.failure(ctx, err)
	}
	switch state {
	case 0: // pending: it awaits something nothing will ever settle
		res.Exception = "Error: the program's top-level promise never settled (it awaits something no job or timer will resolve)"
	case 1:
		completion, err := vm.box(vm.call1(ctx, vm.fn.promiseRes, uint64(promise)))
		if err != nil {
			return vm.failure(ctx, err)
		}
		defer vm.freeValue(ctx, completion)
		// The async script resolves to {value: <completion value>}.
		v, err := vm.prop(ctx, completion, "value")
		if err != nil {
			return vm.failure(ctx, err)
		}
		defer vm.freeValue(ctx, v)
		if isP, err := vm.call1(ctx, vm.fn.isPromise, uint64(v)); err != nil {
			return vm.failure(ctx, err)
		} else if isP != 0 {
			// The last expression is itself a promise: its settlement is
			// the value (the loop above already ran it as far as it goes).
			return vm.settled(ctx, res, v, promise)
		}
		if err := vm.readValue(ctx, res, v); err != nil {
			return vm.failure(ctx, err)
		}
	case 2:
		if res.Exception, err = vm.rejection(ctx, promise); err != nil {
			return vm.failure(ctx, err)
		}
	}
	vm.reportRejections(ctx, promise)
	return vm.classify(res)
}

// softContext derives the context of the interrupt hook: it ends a grace
// period (5% of the time left, between 2 and 100 ms) before ctx's deadline.
// The hard stop (the runtime closing the module on ctx's end) is then kept
// for built-ins that never poll the hook.
func softContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	grace := min(max(time.Until(d)/20, 2*time.Millisecond), 100*time.Millisecond)
	return context.WithDeadline(ctx, d.Add(-grace))
}

// interrupted reports whether the program must stop.
func (vm *VM) interrupted() bool {
	return vm.soft != nil && vm.soft.Err() != nil
}

// settled reads the outcome of the promise p the program left as its value.
func (vm *VM) settled(ctx context.Context, res *Result, p, top uint32) (*Result, error) {
	state, err := vm.call1(ctx, vm.fn.promiseState, uint64(p))
	if err != nil {
		return vm.failure(ctx, err)
	}
	switch state {
	case 0:
		res.Exception = "Error: the promise the program returned never settled (it awaits something no job or timer will resolve)"
	case 1:
		v, err := vm.box(vm.call1(ctx, vm.fn.promiseRes, uint64(p)))
		if err != nil {
			return vm.failure(ctx, err)
		}
		defer vm.freeValue(ctx, v)
		if err := vm.readValue(ctx, res, v); err != nil {
			return vm.failure(ctx, err)
		}
	case 2:
		if res.Exception, err = vm.rejection(ctx, p); err != nil {
			return vm.failure(ctx, err)
		}
	}
	vm.reportRejections(ctx, top, p)
	return vm.classify(res)
}

// classify turns an uncaught out-of-memory exception into ErrMemory.
func (vm *VM) classify(res *Result) (*Result, error) {
	if isOutOfMemory(res.Exception) {
		return res, fmt.Errorf("%w: %s", ErrMemory, firstLine(res.Exception))
	}
	return res, nil
}

// rejection describes the reason a settled, rejected promise holds.
func (vm *VM) rejection(ctx context.Context, p uint32) (string, error) {
	reason, err := vm.box(vm.call1(ctx, vm.fn.promiseRes, uint64(p)))
	if err != nil {
		return "", err
	}
	defer vm.freeValue(ctx, reason)
	return vm.describe(ctx, reason)
}

// runLoop runs promise jobs, then the earliest timer, sleeping until it is
// due, until neither is left.
func (vm *VM) runLoop(ctx context.Context) error {
	for {
		for {
			pending, err := vm.call1(ctx, vm.fn.isJobPending)
			if err != nil {
				return err
			}
			if pending == 0 {
				break
			}
			rc, err := vm.call1(ctx, vm.fn.executePendingJob)
			if err != nil {
				return err
			}
			if int32(rc) < 0 {
				return vm.pendingException(ctx)
			}
		}
		wait, err := vm.callJS(ctx, vm.helpers.runTimers)
		if err != nil {
			return err
		}
		res, err := vm.fn.getFloat64.Call(ctx, uint64(wait))
		vm.freeValue(ctx, wait)
		if err != nil {
			return callError(ctx, "qjs_get_float64", err)
		}
		ms := res[0]
		d := api.DecodeF64(ms)
		switch {
		case d < 0:
			return nil
		case d == 0:
			continue
		}
		t := time.NewTimer(time.Duration(d * float64(time.Millisecond)))
		select {
		case <-vm.soft.Done():
			t.Stop()
			return &jsError{text: "InternalError: interrupted"}
		case <-t.C:
		}
	}
}

// jsError is an exception the program did not catch.
type jsError struct{ text string }

func (e *jsError) Error() string { return e.text }

// failure turns an error met while running the program into Eval's answer:
// an uncaught exception becomes a Result (ErrMemory when it is the heap
// limit), an interrupt ErrInterrupted.
func (vm *VM) failure(ctx context.Context, err error) (*Result, error) {
	var js *jsError
	if errors.As(err, &js) {
		if vm.interrupted() {
			return &Result{Value: json.RawMessage("null"), Exception: js.text}, fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(vm.soft))
		}
		return vm.classify(&Result{Value: json.RawMessage("null"), Exception: js.text})
	}
	return nil, err
}
