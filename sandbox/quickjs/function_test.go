package quickjs

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// callFunction runs body with CallFunction in a fresh VM.
func callFunction(t *testing.T, opts Options, body, args string) *Result {
	t.Helper()
	ctx, cancel := cpuBudget(60 * time.Second)
	defer cancel()
	vm, err := sharedModule(t).Instantiate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close(context.Background())
	res, err := vm.CallFunction(ctx, body, json.RawMessage(args))
	if err != nil {
		t.Fatalf("CallFunction: %v", err)
	}
	return res
}

// A last value JSON cannot represent is null with the reason beside it,
// never a silent null; what JSON has no text for (undefined, a function, a
// symbol) stays a plain null.
func TestLastValueJSONCannotRepresentSaysWhy(t *testing.T) {
	m := sharedModule(t)
	for _, tc := range []struct{ name, code, why string }{
		{"bigint", "10n ** 20n", "BigInt"},
		{"bigint inside", "({n: 1n})", "BigInt"},
		{"cycle", "const o = {}; o.self = o; o", "circular"},
		{"cycle through an array", "const a = [1]; a.push({a}); a", "circular"},
		{"throwing toJSON", "({toJSON() { throw new Error('poisoned') }})", "Error: poisoned\n    at toJSON (<eval>:1:"},
		{"throwing getter", "({get x() { throw new RangeError('no x') }})", "RangeError: no x"},
		{"poisoned prototype toJSON", "Object.prototype.toJSON = function () { throw new TypeError('everywhere') }; ({})", "TypeError: everywhere"},
		{"JSON.stringify replaced", "JSON.stringify = () => '1'; 5n", "BigInt"},
		{"nesting deeper than a result carries", "let v = ['[{\\\\\"[']; for (let i = 1; i < 998; i++) v = [v]; v", "nests more than 997 levels deep, more than a tool result can carry"},
		{"a million levels", "let v = []; for (let i = 1; i < 1e6; i++) v = {v}; v", "nests more than 997 levels deep"},
		{"nesting made by toJSON", "({toJSON() { let v = ['[{\\\\\"[']; for (let i = 1; i < 998; i++) v = [v]; return v }})", "nests more than 997 levels deep"},
		{"nesting made by a getter", "let v = []; for (let i = 1; i < 998; i++) v = [v]; ({get v() { return v }})", "nests more than 997 levels deep"},
		{"a cycle deep down", "let v = {}; const top = v; for (let i = 1; i < 500; i++) v = {v}; top.v = v; v", "circular"},
		{"nesting a result carries", "let v = []; for (let i = 1; i < 997; i++) v = [v]; v", ""},
		{"thrown non-error", "({toJSON() { throw 'plain' }})", `Uncaught "plain"`},
		{"undefined", "undefined", ""},
		{"function", "(function f() {})", ""},
		{"symbol", "Symbol('s')", ""},
		{"a string that looks like the marker", "'!not an error'", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skipMillionLevelsInShort(t, tc.code)
			res, _, err := run(t, m, Options{}, tc.code)
			if err != nil || res.Exception != "" {
				t.Fatalf("Eval: %v, exception %q (the program did not fail)", err, res.Exception)
			}
			if tc.why == "" {
				if res.ValueError != "" || (tc.name != "a string that looks like the marker" && tc.name != "nesting a result carries" && string(res.Value) != "null") {
					t.Errorf("value %s, ValueError %q", res.Value, res.ValueError)
				}
				return
			}
			if string(res.Value) != "null" || !strings.Contains(res.ValueError, tc.why) {
				t.Errorf("value %s, ValueError %q, want null and %q", res.Value, res.ValueError, tc.why)
			}
			if strings.Contains(res.ValueError, "<prelude>") {
				t.Errorf("ValueError shows the prelude: %q", res.ValueError)
			}
		})
	}
}

// The cap counts bytes of JSON: one byte over is reported with the size,
// the cap itself passes, and multi-byte characters count as bytes.
func TestValueCapIsExactAndSaysTheSize(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name, code string
		bytes      int
		tooLarge   bool
	}{
		{"at the cap", "'x'.repeat(998)", 1000, false},
		{"one byte over", "'x'.repeat(999)", 1001, true},
		{"multi-byte under in characters, over in bytes", "'é'.repeat(500)", 1002, true},
		{"escapes count", "'\\u0001'.repeat(200)", 1202, true},
		{"promise of a large value", "Promise.resolve('x'.repeat(5000))", 5002, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := run(t, sharedModule(t), Options{MaxValue: limit}, tc.code)
			if err != nil || res.Exception != "" {
				t.Fatalf("%v %q", err, res.Exception)
			}
			if res.ValueTooLarge != tc.tooLarge {
				t.Fatalf("ValueTooLarge %v, want %v", res.ValueTooLarge, tc.tooLarge)
			}
			if tc.tooLarge && (res.ValueBytes != tc.bytes || string(res.Value) != "null") {
				t.Errorf("ValueBytes %d value %.20s, want %d and null", res.ValueBytes, res.Value, tc.bytes)
			}
			if !tc.tooLarge && len(res.Value) != tc.bytes {
				t.Errorf("value of %d bytes, want %d", len(res.Value), tc.bytes)
			}
		})
	}
	// The default cap: 1 MiB of JSON.
	res, _, err := run(t, sharedModule(t), Options{}, "'x'.repeat(1024 * 1024 - 1)")
	if err != nil || !res.ValueTooLarge || res.ValueBytes != DefaultMaxValue+1 {
		t.Errorf("just over the default cap: %v ValueTooLarge=%v ValueBytes=%d", err, res.ValueTooLarge, res.ValueBytes)
	}
	res, _, err = run(t, sharedModule(t), Options{}, "'x'.repeat(1024 * 1024 - 2)")
	if err != nil || res.ValueTooLarge || len(res.Value) != DefaultMaxValue {
		t.Errorf("at the default cap: %v ValueTooLarge=%v len=%d", err, res.ValueTooLarge, len(res.Value))
	}
}

// The prelude's helpers are not globals: a program cannot find, call or
// shadow them, and its stacks show none of the prelude's frames.
func TestPreludeHelpersAreUnreachable(t *testing.T) {
	m := sharedModule(t)
	for _, tc := range []struct{ name, code, want string }{
		{"typeof", "[typeof toolScript, typeof toJSON, typeof describe, typeof runTimers, typeof define, typeof seed]",
			`["undefined","undefined","undefined","undefined","undefined","undefined"]`},
		{"own property", "Object.getOwnPropertyNames(globalThis).filter(k => /toolScript|prelude|helper/i.test(k))", `[]`},
		{"reflect", "Reflect.ownKeys(globalThis).some(k => String(k).includes('toolScript'))", `false`},
		{"not through console", "Object.values(console).some(f => /toolScript/.test(String(f)))", `false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := run(t, m, Options{}, tc.code)
			if err != nil || res.Exception != "" || string(res.Value) != tc.want {
				t.Errorf("%v %q value %s, want %s", err, res.Exception, res.Value, tc.want)
			}
		})
	}
	_, out, err := run(t, m, Options{}, "function here() { console.trace('t') }\nhere()")
	if err != nil || out.stderr.String() != "Trace: t\n    at here (<eval>:1:26)\n    at <eval> (<eval>:2:1)\n" {
		t.Errorf("console.trace: %v %q", err, out.stderr.String())
	}
	for _, tc := range []struct{ name, code, want string }{
		{"call it", "toolScript(function () { return 1 }, '{}', 1e9, 'x')", "ReferenceError: toolScript is not defined"},
		{"timer", "setTimeout(() => { null.x }, 1)", "TypeError"},
		{"console getter", "console.log({get a() { throw new Error('getter') }})", "Error: getter"},
		{"throw inside a callback of a built-in", "[1].map(() => { throw new Error('m') })", "Error: m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := run(t, m, Options{}, tc.code)
			if err != nil || !strings.Contains(res.Exception, tc.want) {
				t.Fatalf("%v exception %q, want %q", err, res.Exception, tc.want)
			}
			for _, leak := range []string{"<prelude>", "runTimers", "inspect", "toolScript ("} {
				if strings.Contains(res.Exception, leak) {
					t.Errorf("exception shows %q: %q", leak, res.Exception)
				}
			}
		})
	}
}

func TestCallFunctionRunsAScriptAsAFunctionOfArgs(t *testing.T) {
	for _, tc := range []struct {
		name, body, args string
		value, exception string
	}{
		{"result", "return { found: true, info: args.name };", `{"name":"Ayla"}`, `{"found":true,"info":"Ayla"}`, ""},
		{"undefined is null", "return;", `{}`, `null`, ""},
		{"arguments are frozen", "'use strict'; args.name = 'x'; return 1;", `{"name":"Cy"}`, ``, "TypeError"},
		{"hostile argument text", "return args.s;", `{"s":"\")}); throw 1; //"}`, `"\")}); throw 1; //"`, ""},
		{"toolScript is not reachable", "return [typeof toolScript, 'toolScript' in globalThis];", `{}`, `["undefined",false]`, ""},
		{"redefining toolScript changes nothing", "globalThis.toolScript = () => 'hijacked'; return 7;", `{}`, `7`, ""},
		{"JSON.stringify poisoned", "JSON.stringify = () => '\"bad\"'; JSON.parse = () => 1; return {ok: true};", `{}`, `{"ok":true}`, ""},
		{"toJSON poisoned", "Object.prototype.toJSON = function () { throw new Error('poisoned') }; return {a: 1};", `{}`, ``, "Error: poisoned"},
		{"bigint", "return 1n;", `{}`, ``, "JSON cannot represent: TypeError"},
		{"cycle", "const o = {}; o.o = o; return o;", `{}`, ``, "circular"},
		{"function", "return () => 1;", `{}`, ``, "JSON cannot represent (function)"},
		{"nesting deeper than a result carries", "let v = []; for (let i = 1; i < 998; i++) v = [v]; return v;", `{}`, ``, "nests more than 997 levels deep"},
		{"a million levels", "let v = []; for (let i = 1; i < 1e6; i++) v = [v]; return v;", `{}`, ``, "nests more than 997 levels deep"},
		{"wide, shallow and shared", "const a = [1, {b: [2]}]; const o = []; for (let i = 0; i < 1000; i++) o.push(a); return o.length;", `{}`, `1000`, ""},
		{"timer failure is the function's", "setTimeout(() => { throw new Error('later') }, 1); return 1;", `{}`, ``, "Error: later"},
		{"top-level await is not allowed", "await null; return 1;", `{}`, ``, "SyntaxError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skipMillionLevelsInShort(t, tc.body)
			res := callFunction(t, Options{}, tc.body, tc.args)
			if !strings.Contains(res.Exception, tc.exception) || (tc.exception == "") != (res.Exception == "") {
				t.Fatalf("exception %q, want %q", res.Exception, tc.exception)
			}
			if tc.exception == "" && string(res.Value) != tc.value {
				t.Errorf("value %s, want %s", res.Value, tc.value)
			}
			if strings.Contains(res.Exception, "<prelude>") {
				t.Errorf("the exception shows the prelude: %q", res.Exception)
			}
		})
	}
}

// An error's line (and, on the first line, column) is the script's own.
func TestCallFunctionKeepsTheScriptsLineNumbers(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"throw on line 3", "const a = 1;\nconst b = 2;\nthrow new Error('three');", "at <anonymous> (<eval>:3:"},
		{"type error on line 2", "const a = 1;\nnull.x;\n", "<eval>:2:"},
		{"nested function", "function inner() {\n  throw new Error('x');\n}\ninner();", "at inner (<eval>:2:"},
		{"syntax error on line 4", "const a = 1;\n\n\nconst = 2;", "SyntaxError"},
		{"syntax error line", "const a = 1;\n\n\nconst = 2;", "<eval>:4:"},
		{"first line column", "const a = 1; throw new Error('one');", "<eval>:1:"},
		{"comment on the first line", "// a comment\nthrow new Error('two');", "<eval>:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := callFunction(t, Options{}, tc.body, `{}`)
			if !strings.Contains(res.Exception, tc.want) {
				t.Fatalf("exception %q lacks %q", res.Exception, tc.want)
			}
			if strings.Contains(res.Exception, "<eval>:1:") {
				col, _ := strconv.Atoi(strings.TrimRight(strings.SplitN(strings.SplitN(res.Exception, "<eval>:1:", 2)[1], ")", 2)[0], "\n"))
				if col < 1 || col > len(tc.body) {
					t.Errorf("column %d on the first line is outside the script's %d characters: %q", col, len(tc.body), res.Exception)
				}
			}
		})
	}
}

// The size of what a function returns is checked like a last value's.
func TestCallFunctionCapsTheResult(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		tooLarge   bool
		bytes      int
	}{
		{"at the cap", "return 'x'.repeat(998);", false, 1000},
		{"one over", "return 'x'.repeat(999);", true, 1001},
		{"huge", "return {s: 'x'.repeat(1 << 20)};", true, (1 << 20) + 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := callFunction(t, Options{MaxValue: 1000}, tc.body, `{}`)
			if res.Exception != "" || res.ValueTooLarge != tc.tooLarge {
				t.Fatalf("exception %q ValueTooLarge %v", res.Exception, res.ValueTooLarge)
			}
			if tc.tooLarge && res.ValueBytes != tc.bytes || !tc.tooLarge && len(res.Value) != tc.bytes {
				t.Errorf("ValueBytes %d, len %d, want %d", res.ValueBytes, len(res.Value), tc.bytes)
			}
		})
	}
}
