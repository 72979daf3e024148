package runcode

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"toolhost/sandbox"
	"toolhost/tools"
)

// ScriptTimeout bounds one run of a script handler, and ScriptMaxResult
// the JSON of what it returns.
const (
	ScriptTimeout   = 5 * time.Second
	ScriptMaxResult = 128 << 10
)

// tooLargeMark starts the error the wrapper throws for a result over
// ScriptMaxResult.
const tooLargeMark = "toolhost:result_too_large:"

// Scripts runs the script handlers of tool definitions in run_code's
// JavaScript sandbox, with its limits (memory, output, no network, no
// host files) and the account's share of its slots.
type Scripts struct {
	sb *sandbox.Sandbox
}

// NewScripts returns a tools.ScriptRunner on sb.
func NewScripts(sb *sandbox.Sandbox) *Scripts { return &Scripts{sb: sb} }

var _ tools.ScriptRunner = (*Scripts)(nil)

// RunScript runs script as the body of a function of args and returns the
// JSON of what it returns. A throw is a script_error with its message; the
// time and memory limits are timeout and memory_exceeded.
func (sc *Scripts) RunScript(ctx context.Context, account, script string, args json.RawMessage) (json.RawMessage, error) {
	// The arguments arrive as a string literal parsed inside the program,
	// so no argument value can end the function early. The engine's
	// prelude defines toolScript (sandbox/quickjs/prelude.js): it parses
	// and freezes the arguments, calls the script, and serializes what it
	// returns with the engine's own JSON.stringify saved before any script
	// ran (a script that replaces it or poisons toJSON fails like any other
	// throw), checking its size, so nothing is ever silently dropped. Only
	// the script itself is compiled per call: compiling a wrapper around it
	// each time cost about 0.3 ms (docs/performance.md).
	lit, _ := json.Marshal(string(args))
	code := "toolScript(function (args) {\n" + script + "\n}, " + string(lit) + ", " + strconv.Itoa(ScriptMaxResult) + ", '" + tooLargeMark + "')"
	res, err := sc.sb.Run(ctx, sandbox.Request{Language: sandbox.JavaScript, Code: code, Timeout: ScriptTimeout, Account: account})
	if err != nil {
		return nil, runError(ctx, err)
	}
	switch {
	case res.TimedOut:
		return nil, tools.Errorf(CodeTimeout, "the script did not return within %s", ScriptTimeout)
	case res.MemoryExceeded:
		return nil, tools.Errorf(CodeMemoryExceeded, "the script used more than the sandbox's %d MiB of memory", sc.sb.Config().MemoryLimitMiB)
	case res.ExitCode != 0:
		msg := strings.TrimSpace(string(res.Stderr))
		if i := strings.Index(msg, tooLargeMark); i >= 0 {
			n, _, _ := strings.Cut(msg[i+len(tooLargeMark):], "\n")
			return nil, tools.Errorf(tools.CodeResultTooLarge, "the script returned %s characters of JSON, more than the %d allowed; return less", n, ScriptMaxResult)
		}
		if msg == "" {
			msg = "the script failed"
		}
		return nil, tools.Errorf(tools.CodeScriptError, "%s", msg)
	}
	var s string
	if err := json.Unmarshal(res.Value, &s); err != nil || !json.Valid([]byte(s)) {
		return nil, tools.Errorf(tools.CodeScriptError, "the script's result could not be read back")
	}
	// A script that closes the function early ends the program with a
	// value of its own: its size is checked here too.
	if len(s) > ScriptMaxResult {
		return nil, tools.Errorf(tools.CodeResultTooLarge, "the script returned %d bytes of JSON, more than the %d allowed; return less", len(s), ScriptMaxResult)
	}
	return json.RawMessage(s), nil
}
