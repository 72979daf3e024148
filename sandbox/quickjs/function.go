package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
)

// functionHead opens the source CallFunction compiles: it shares the first
// line with the body, so every line of the body keeps its number.
const functionHead = "(function (args) {"

// lineOne finds a position on the first line of the compiled source in a
// stack or a syntax error; its column counts functionHead too.
var lineOne = regexp.MustCompile(regexp.QuoteMeta(evalFile) + `:1:(\d+)`)

// CallFunction runs body as the body of a function of args, called with the
// JSON value args parsed and frozen, as a tool definition's script runs
// (tools/runcode). The function is compiled on its own and called by the
// host through a prelude helper that no program can reach; what it returns
// is serialized with the engine's own JSON.stringify into Result.Value
// (undefined is null; a value JSON cannot represent is an exception). Then
// promise jobs and timers run as after Eval, and their failures are the
// function's. Line and column numbers in Exception are those of body. The
// errors are Eval's.
func (vm *VM) CallFunction(ctx context.Context, body string, args json.RawMessage) (*Result, error) {
	ctx = withVM(ctx, vm)
	vm.hostErr = nil
	soft, cancel := softContext(ctx)
	defer cancel()
	vm.soft = soft
	res, err := vm.callFunction(ctx, body, args)
	if err != nil {
		res, err = vm.failure(ctx, err)
	} else {
		vm.reportRejections(ctx)
		res, err = vm.classify(res)
	}
	if res != nil {
		res.Exception = lineOne.ReplaceAllStringFunc(res.Exception, func(pos string) string {
			// A position inside the head (the engine may point at its
			// brace) is the body's start.
			col, _ := strconv.Atoi(lineOne.FindStringSubmatch(pos)[1])
			return evalFile + ":1:" + strconv.Itoa(max(col-len(functionHead), 1))
		})
	}
	return res, err
}

func (vm *VM) callFunction(ctx context.Context, body string, args json.RawMessage) (*Result, error) {
	if !json.Valid(args) {
		return nil, errors.New("quickjs: call function: the arguments are not valid JSON")
	}
	if err := vm.checkBody(ctx, body); err != nil {
		return nil, err
	}
	fn, err := vm.evalScript(ctx, functionHead+body+"\n})", "", 0)
	if err != nil {
		return nil, err
	}
	defer vm.freeValue(ctx, fn)
	text, err := vm.jsString(ctx, string(args))
	if err != nil {
		return nil, err
	}
	defer vm.freeValue(ctx, text)
	s, err := vm.callJS(ctx, vm.helpers.toolScript, fn, text)
	if err != nil {
		return nil, err
	}
	defer vm.freeValue(ctx, s)
	if err := vm.runLoop(ctx); err != nil {
		return nil, err
	}
	res := &Result{}
	if err := vm.readJSON(ctx, res, s); err != nil {
		return nil, err
	}
	if res.ValueError != "" {
		// JSON the host cannot read back is the function's failure, as
		// JSON.stringify throwing is.
		res.Exception, res.ValueError = "TypeError: the script returned a value JSON cannot represent: "+res.ValueError, ""
	}
	return res, nil
}
