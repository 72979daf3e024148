package quickjs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A script is one function body: a script that closes its function early
// to run code at the top level is a syntax error that says where, and none
// of it runs (the marker it would set stays unset, its output unwritten).
func TestCallFunctionRefusesABodyThatClosesItsFunction(t *testing.T) {
	const pwn = "globalThis.pwned = 1, console.log('top level ran')"
	for _, tc := range []struct{ name, body, at string }{
		{"close and reopen", "return 1; }); " + pwn + "; (function () { return 2;", "<eval>:1:11"},
		{"comma expression", "return 1; }, " + pwn + ", function () {", "<eval>:1:11"},
		{"called at once", "}(" + pwn + ")\n, function () {", "<eval>:1:1"},
		{"member and call", "}.call(" + pwn + "), function () {", "<eval>:1:1"},
		{"after a line comment with braces", "// } { }\nreturn 1; }); " + pwn + "; (function () {", "<eval>:2:11"},
		{"after a block comment with braces", "/* } */ return 1; }); " + pwn + "; (function () {", "<eval>:1:19"},
		{"after strings with braces", "const s = \"}{\" + '}'; }); " + pwn + "; (function () {", "<eval>:1:23"},
		{"after a template with braces", "const t = `}${ {a: '}'}.a }{`; }); " + pwn + "; (function () {", "<eval>:1:32"},
		{"after a regular expression with a brace", "const r = /}[}]/; }); " + pwn + "; (function () {", "<eval>:1:19"},
		{"division before", "const x = 4 / 2; }); " + pwn + "; (function () {", "<eval>:1:18"},
		{"strict directive first", "'use strict'; }); " + pwn + "; (function () {", "<eval>:1:15"},
		{"on a later line", "const a = 1;\nif (a) { return a; }\n}); " + pwn + ";\n(function () {", "<eval>:3:1"},
		{"blocks before the close", "{ if (1) {} } }); " + pwn + "; (function () {", "<eval>:1:15"},
		{"arrow function reopened", "}, " + pwn + ", () => {", "<eval>:1:1"},
		{"an extra brace pair", "} {", "SyntaxError"},
		{"unbalanced: an extra closing brace", "return 1; }", "SyntaxError"},
		{"unbalanced: a missing closing brace", "if (true) { return 1;", "SyntaxError"},
		{"a template left open", "}); " + pwn + "; `", "SyntaxError"},
		{"a comment left open", "}); " + pwn + "; /*", "SyntaxError"},
		{"a string continued over the end", "}); " + pwn + "; '\\", "SyntaxError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := cpuBudget(60 * time.Second)
			defer cancel()
			out := &output{}
			vm, err := sharedModule(t).Instantiate(ctx, Options{Stdout: &out.stdout, Stderr: &out.stderr})
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close(context.Background())
			res, err := vm.CallFunction(ctx, tc.body, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Exception, "SyntaxError") || !strings.Contains(res.Exception, tc.at) {
				t.Errorf("exception %q, want a SyntaxError at %s", res.Exception, tc.at)
			}
			after, err := vm.Eval(ctx, "typeof globalThis.pwned")
			if err != nil || string(after.Value) != `"undefined"` || out.stdout.Len() != 0 {
				t.Errorf("the top-level code ran: pwned is %s (%v), stdout %q", after.Value, err, out.stdout.String())
			}
		})
	}
}

// What a function body may hold still runs: braces in strings, comments,
// templates and regular expressions, nested functions and blocks, a strict
// directive (still a directive), a last line that is a comment.
func TestCallFunctionAcceptsEveryFunctionBody(t *testing.T) {
	for _, tc := range []struct{ name, body, value string }{
		{"braces in strings and comments", "const s = '}' + \"{\"; /* } */ // }\nreturn s;", `"}{"`},
		{"template substitutions", "const o = {a: 1}; return `${ {b: o.a}.b }}${'{'}`;", `"1}{"`},
		{"regular expressions", "return [/}/.test('}'), /[{}]/.source, 4 / 2 / 1];", `[true,"[{}]",2]`},
		{"nested functions and blocks", "function f() { return { g() { return 2 } } }\n{ let x = f().g(); if (x) { return x; } }", `2`},
		{"strict directive", "'use strict';\nreturn (function () { return this === undefined })();", `true`},
		{"last line a comment", "return args.n // the end", `5`},
		{"labels of its own", "outer: for (;;) { for (;;) { break outer; } }\nreturn 'out';", `"out"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := callFunction(t, Options{}, tc.body, `{"n":5}`)
			if res.Exception != "" || string(res.Value) != tc.value {
				t.Errorf("value %s exception %q, want %s", res.Value, res.Exception, tc.value)
			}
		})
	}
}
