package loop

import (
	"unicode/utf8"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// fillCall records a call's outcome: done, failed (the machine code before
// the message the model reads) or waiting for an approval.
func fillCall(c *Call, out *tools.Outcome, lang catalog.Lang) {
	c.ExecutionID = out.ExecutionID
	c.Duration = out.Duration
	c.Units = out.Units
	c.Result = out.Text
	c.IsError = out.IsError
	c.Code = out.Code
	c.Continued = out.Continuation != nil
	c.Deferred = out.Receipt != nil
	if out.IsError && out.Code == tools.CodeApprovalRequired {
		pending(c, out, lang)
		return
	}
	if out.IsError {
		// The model gets the machine code before the message, as an MCP
		// client gets it in structuredContent: it can tell a server that
		// is down (upstream_unavailable) from arguments it should fix.
		if out.Code != "" {
			c.Result = out.Code + ": " + out.Text
		}
		c.Status = StatusFailed
		c.Summary = failedSummary(lang, out)
		return
	}
	c.Status = StatusDone
	c.Summary = out.Summary
	c.Structured = out.Structured
}

func failedSummary(lang catalog.Lang, out *tools.Outcome) string {
	msg := out.Message
	if msg == "" {
		msg = out.Code
	}
	if utf8.RuneCountInString(msg) > 120 {
		msg = string([]rune(msg)[:119]) + "…"
	}
	if lang == catalog.English {
		return out.Tool + " failed: " + msg
	}
	return out.Tool + " 失败：" + msg
}

func skippedSummary(lang catalog.Lang, final bool) string {
	switch {
	case final && lang == catalog.English:
		return "not run: tool round limit reached"
	case final:
		return "未执行：已达工具轮数上限"
	case lang == catalog.English:
		return "not run: the same round called the caller's function"
	default:
		return "未执行：同一轮请求了调用方的函数"
	}
}
