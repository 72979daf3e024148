package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// The helpers below cross the boundary: they call reactor exports, move
// strings in and out of linear memory and own the JSValue boxes.

// call1 calls a reactor export returning one value, and translates a trap or
// a module closed on context end into an error.
func (vm *VM) call1(ctx context.Context, f api.Function, args ...uint64) (uint32, error) {
	res, err := f.Call(ctx, args...)
	if err != nil {
		name := f.Definition().Name()
		if names := f.Definition().ExportNames(); len(names) > 0 {
			name = names[0]
		}
		return 0, callError(ctx, name, err)
	}
	if vm.hostErr != nil {
		err := vm.hostErr
		vm.hostErr = nil
		return 0, err
	}
	if len(res) == 0 {
		return 0, nil
	}
	return uint32(res[0]), nil
}

// callError classifies a failed call: the context's end (soft or hard),
// running out of linear memory, or a trap.
func callError(ctx context.Context, what string, err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			return fmt.Errorf("%w: %s: %w", ErrInterrupted, what, err)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s: %w", ErrInterrupted, what, err)
	}
	return fmt.Errorf("quickjs: %s: %w", what, err)
}

// box checks a returned JSValue box: 0 means the engine's malloc failed.
func (vm *VM) box(p uint32, err error) (uint32, error) {
	if err != nil {
		return 0, err
	}
	if p == 0 {
		return 0, fmt.Errorf("%w: the engine could not allocate a value", ErrMemory)
	}
	return p, nil
}

// checked takes ownership of a returned box and turns an exception into a
// *jsError (or ErrInterrupted/ErrMemory).
func (vm *VM) checked(ctx context.Context, p uint32, err error) (uint32, error) {
	p, err = vm.box(p, err)
	if err != nil {
		return 0, err
	}
	isExc, err := vm.call1(ctx, vm.fn.isException, uint64(p))
	if err != nil {
		return 0, err
	}
	if isExc != 0 {
		vm.freeValue(ctx, p)
		return 0, vm.pendingException(ctx)
	}
	return p, nil
}

// pendingException takes the engine's current exception and describes it.
func (vm *VM) pendingException(ctx context.Context) error {
	exc, err := vm.box(vm.call1(ctx, vm.fn.getException))
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, exc)
	if vm.interrupted() {
		// The interrupt handler keeps firing: running the describe helper
		// now would only be interrupted again.
		return &jsError{text: "InternalError: interrupted"}
	}
	if vm.describing {
		// The describe helper itself threw: do not recurse.
		return &jsError{text: "exception while rendering an exception"}
	}
	text, err := vm.describe(ctx, exc)
	if err != nil {
		return err
	}
	return &jsError{text: text}
}

// describe renders an exception value with the prelude's helper, falling
// back to a fixed text when even that fails (out of memory, most likely).
func (vm *VM) describe(ctx context.Context, exc uint32) (string, error) {
	if unc, err := vm.call1(ctx, vm.fn.isUncatchable, uint64(exc)); err != nil {
		return "", err
	} else if unc != 0 && vm.interrupted() {
		return "InternalError: interrupted", nil
	}
	if vm.helpers.describe == 0 {
		// The prelude itself failed: JS_ToCString gives "Name: message".
		return vm.goString(ctx, exc)
	}
	vm.describing = true
	s, err := vm.callJS(ctx, vm.helpers.describe, exc)
	vm.describing = false
	var js *jsError
	if errors.As(err, &js) {
		// The helper catches whatever it can; what escapes is uncatchable:
		// the interrupt, or the heap limit.
		if vm.interrupted() {
			return "InternalError: interrupted", nil
		}
		return "InternalError: out of memory", nil
	}
	if err != nil {
		return "", err
	}
	defer vm.freeValue(ctx, s)
	var text string
	err = vm.stringBytes(ctx, s, func(b []byte) { text = capText(b) })
	if errors.Is(err, errConversion) {
		// Not even the rendered text could be copied out: out of memory.
		return "InternalError: out of memory", nil
	}
	return text, err
}

// readValue sets res.Value (or ValueTooLarge, or ValueError) from the
// value in box v, serialized by the prelude's toJSON helper.
func (vm *VM) readValue(ctx context.Context, res *Result, v uint32) error {
	s, err := vm.callJS(ctx, vm.helpers.toJSON, v)
	if err != nil {
		return err
	}
	defer vm.freeValue(ctx, s)
	return vm.readJSON(ctx, res, s)
}

// readJSON sets res.Value from the JSON text in the string box s, unless it
// is longer than Options.MaxValue (ValueTooLarge, ValueBytes) or is the
// toJSON helper's "!" and the reason serializing threw (ValueError).
func (vm *VM) readJSON(ctx context.Context, res *Result, s uint32) error {
	res.Value = json.RawMessage("null")
	var text []byte
	err := vm.stringBytes(ctx, s, func(b []byte) {
		switch {
		case len(b) > 0 && b[0] == '!':
			res.ValueError = capText(b[1:])
		case len(b) > vm.opts.MaxValue:
			res.ValueTooLarge, res.ValueBytes = true, len(b)
		default:
			text = append([]byte(nil), b...)
		}
	})
	if errors.Is(err, errConversion) {
		return vm.pendingException(ctx)
	}
	if err != nil {
		return err
	}
	switch {
	case text == nil:
	case jsonDepth(text) > maxJSONDepth:
		// A backstop for prelude.js's serialize, which refuses such a
		// value itself; before json.Valid, which accepts up to
		// encoding/json's 10 000 levels.
		res.ValueError = fmt.Sprintf("RangeError: its JSON nests %d levels deep, more than the %d a tool result can carry", jsonDepth(text), maxJSONDepth)
	case json.Valid(text):
		res.Value = json.RawMessage(text)
	default:
		res.ValueError = "SyntaxError: its JSON text is not valid"
	}
	return nil
}

// maxJSONDepth is the deepest nesting of a value the host passes on. The
// go-sdk's MCP client (v1.8.0, its internal/json) refuses a JSON-RPC
// message nested more than 1000 levels deep, whatever encoding/json would
// read (10 000), and a tool result puts the value 3 levels down in its
// message: run_code's {"result": {"structuredContent": {"result": value}}},
// a script tool's {"result": {"structuredContent": {"value": value}}} (an
// object a script returns is the structuredContent itself, a level less).
// So a value of up to 997 levels reaches such a client whole; prelude.js's
// maxDepth is the same number.
const maxJSONDepth = mcpClientMaxDepth - mcpResultDepth

const (
	// mcpClientMaxDepth is the go-sdk client's nesting limit on a message.
	mcpClientMaxDepth = 1000
	// mcpResultDepth is how many levels of JSON-RPC and MCP result
	// enclose a tool's value: the message, its result, structuredContent.
	mcpResultDepth = 3
)

// jsonDepth is the deepest nesting of arrays and objects in JSON text.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// capText copies an exception's text out of linear memory, cut at
// maxException bytes (a program can throw a huge message).
func capText(b []byte) string {
	if len(b) > maxException {
		return strings.ToValidUTF8(string(b[:maxException]), "") + "… (truncated)"
	}
	return string(b)
}

// evalScript evaluates source and returns the result box, owned by the
// caller.
func (vm *VM) evalScript(ctx context.Context, source, file string, flags int) (uint32, error) {
	code, err := vm.cString(ctx, source)
	if err != nil {
		return 0, err
	}
	fileName := vm.evalFile
	if file != "" {
		if fileName, err = vm.cString(ctx, file); err != nil {
			vm.freeMem(ctx, code)
			return 0, err
		}
		defer vm.freeMem(ctx, fileName)
	}
	r, err := vm.call1(ctx, vm.fn.eval, uint64(code), uint64(len(source)), uint64(fileName), uint64(flags))
	vm.freeMem(ctx, code)
	return vm.checked(ctx, r, err)
}

// callJS calls the function in box fn with undefined as this; the result box
// is owned by the caller.
func (vm *VM) callJS(ctx context.Context, fn uint32, args ...uint32) (uint32, error) {
	argv := uint32(0)
	if len(args) > 0 {
		if 4*len(args) <= scratchLen {
			argv = vm.scratch
		} else {
			var err error
			if argv, err = vm.malloc(ctx, uint32(4*len(args))); err != nil {
				return 0, err
			}
			defer vm.freeMem(ctx, argv)
		}
		for i, a := range args {
			if !vm.mod.Memory().WriteUint32Le(argv+uint32(4*i), a) {
				return 0, errors.New("quickjs: argv out of range")
			}
		}
	}
	r, err := vm.call1(ctx, vm.fn.call, uint64(fn), uint64(vm.undefined), uint64(len(args)), uint64(argv))
	return vm.checked(ctx, r, err)
}

// prop reads obj[name]; the result box is owned by the caller.
func (vm *VM) prop(ctx context.Context, obj uint32, name string) (uint32, error) {
	n, err := vm.cString(ctx, name)
	if err != nil {
		return 0, err
	}
	defer vm.freeMem(ctx, n)
	r, err := vm.call1(ctx, vm.fn.getPropString, uint64(obj), uint64(n))
	return vm.checked(ctx, r, err)
}

// hostFunction makes a JavaScript function that calls host_call with name.
func (vm *VM) hostFunction(ctx context.Context, name string) (uint32, error) {
	n, err := vm.cString(ctx, name)
	if err != nil {
		return 0, err
	}
	defer vm.freeMem(ctx, n)
	r, err := vm.call1(ctx, vm.fn.newHostFunction, uint64(n), uint64(len(name)), 1)
	return vm.checked(ctx, r, err)
}

// goString converts the value in box v to a Go string (JS_ToCStringLen).
func (vm *VM) goString(ctx context.Context, v uint32) (string, error) {
	var s string
	err := vm.stringBytes(ctx, v, func(b []byte) { s = string(b) })
	if errors.Is(err, errConversion) {
		return "", vm.pendingException(ctx)
	}
	return s, err
}

// errConversion reports that converting a value to a string threw; the
// exception is pending in the engine.
var errConversion = errors.New("quickjs: string conversion threw")

// stringBytes converts the value in box v to UTF-8 and hands the bytes,
// still in linear memory (valid only during use), to use.
func (vm *VM) stringBytes(ctx context.Context, v uint32, use func([]byte)) error {
	lenPtr := vm.scratch + scratchLen
	p, err := vm.call1(ctx, vm.fn.getStringLen, uint64(v), uint64(lenPtr))
	if err != nil {
		return err
	}
	if p == 0 {
		return errConversion
	}
	defer vm.call1(ctx, vm.fn.freeCString, uint64(p)) //nolint:errcheck // freeing cannot fail short of a trap, reported by the next call
	n, ok := vm.mod.Memory().ReadUint32Le(lenPtr)
	if !ok {
		return errors.New("quickjs: string length out of range")
	}
	b, ok := vm.mod.Memory().Read(p, n)
	if !ok {
		return errors.New("quickjs: string out of range")
	}
	use(b)
	return nil
}

// cString copies s into a fresh NUL-terminated buffer (qjs_eval and the
// property functions want one); free it with freeMem.
func (vm *VM) cString(ctx context.Context, s string) (uint32, error) {
	if uint64(len(s))+1 > math.MaxUint32 {
		return 0, fmt.Errorf("%w: string of %d bytes", ErrMemory, len(s))
	}
	p, err := vm.malloc(ctx, uint32(len(s)+1))
	if err != nil {
		return 0, err
	}
	mem := vm.mod.Memory()
	if !mem.WriteString(p, s) || !mem.WriteByte(p+uint32(len(s)), 0) {
		return 0, errors.New("quickjs: string out of range")
	}
	return p, nil
}

func (vm *VM) malloc(ctx context.Context, n uint32) (uint32, error) {
	p, err := vm.call1(ctx, vm.fn.malloc, uint64(n))
	if err != nil {
		return 0, err
	}
	if p == 0 {
		return 0, fmt.Errorf("%w: could not allocate %d bytes", ErrMemory, n)
	}
	return p, nil
}

func (vm *VM) freeMem(ctx context.Context, p uint32) {
	_, _ = vm.fn.free.Call(ctx, uint64(p))
}

// freeValue releases a box. Errors are ignored: only a trap or a closed
// module can make it fail, and the next call reports those.
func (vm *VM) freeValue(ctx context.Context, p uint32) {
	if p != 0 {
		_, _ = vm.fn.freeValue.Call(ctx, uint64(p))
	}
}
