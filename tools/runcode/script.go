package runcode

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// ScriptTimeout bounds one run of a script handler, and ScriptMaxResult
// the JSON of what it returns.
const (
	ScriptTimeout   = 5 * time.Second
	ScriptMaxResult = 128 << 10
)

// Scripts runs the script handlers of tool definitions in run_code's
// JavaScript sandbox, with its limits (memory, output, no network, no
// host files) and the account's share of its slots.
type Scripts struct {
	sb *sandbox.Sandbox
	// timeout is ScriptTimeout; a test that checks what a script returns,
	// not how fast, gives it longer so that a loaded machine does not turn
	// the answer into a timeout.
	timeout time.Duration
}

// NewScripts returns a tools.ScriptRunner on sb.
func NewScripts(sb *sandbox.Sandbox) *Scripts { return &Scripts{sb: sb, timeout: ScriptTimeout} }

var _ tools.ScriptRunner = (*Scripts)(nil)

// RunScript runs script as the body of a function of args and returns the
// JSON of what it returns. A throw is a script_error with its message; the
// time and memory limits are timeout and memory_exceeded.
func (sc *Scripts) RunScript(ctx context.Context, account, script string, args json.RawMessage) (json.RawMessage, error) {
	// The sandbox compiles the script on its own as the body of a function
	// of args and calls it through the engine's prelude
	// (sandbox/quickjs/prelude.js), which no program can reach: it parses
	// and freezes the arguments, calls the script, and serializes what it
	// returns with the engine's own JSON.stringify saved before any script
	// ran (a script that replaces it or poisons toJSON fails like any other
	// throw). No wrapper is compiled around the script, so its line numbers
	// are its own; a script that closes its function early is a syntax
	// error before anything of it runs (quickjs checkBody). The size of
	// what it returns is checked here, so nothing is ever silently dropped.
	if len(args) == 0 {
		args = json.RawMessage("{}") // never nil: nil would run the script as a program
	}
	res, err := sc.sb.Run(ctx, sandbox.Request{Language: sandbox.JavaScript, Code: script, Args: args, Timeout: sc.timeout, Account: account})
	if err != nil {
		return nil, runError(ctx, err)
	}
	switch {
	case res.TimedOut:
		return nil, tools.Errorf(CodeTimeout, "the script did not return within %s", sc.timeout)
	case res.MemoryExceeded:
		return nil, tools.Errorf(CodeMemoryExceeded, "the script used more than the sandbox's %d MiB of memory", sc.sb.Config().MemoryLimitMiB)
	case res.ExitCode != 0:
		msg := strings.TrimSpace(string(res.Stderr))
		if msg == "" {
			msg = "the script failed"
		}
		return nil, tools.Errorf(tools.CodeScriptError, "%s", msg)
	case res.ValueTooLarge:
		return nil, tooLarge(res.ValueBytes)
	case len(res.Value) > ScriptMaxResult:
		return nil, tooLarge(len(res.Value))
	}
	return res.Value, nil
}

func tooLarge(n int) error {
	return tools.Errorf(tools.CodeResultTooLarge, "the script returned %d bytes of JSON, more than the %d allowed; return less", n, ScriptMaxResult)
}
