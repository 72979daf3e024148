package runcode

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// A JavaScript last value too large for the sandbox is a result_too_large
// error that says its size and the cap, never a silent null; one the
// sandbox returns but the pipeline's smaller cap cannot carry comes back
// cut, saying so, its whole kept for read_result; under every cap it is
// returned whole.
func TestJavaScriptValueTooLargeIsAnError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds values up to every cap, seconds; runs in make test")
	}
	ex, _, _ := shared(t)
	for _, tc := range []struct {
		name, code, errCode string
		want                []string
		cut                 bool
	}{
		{"one byte over the sandbox's cap", "console.log('made it'); 'x'.repeat(1024 * 1024 - 1)", tools.CodeResultTooLarge,
			[]string{"last value is 1048577 bytes of JSON", "more than the 1048576"}, false},
		{"far over, in an array", "Array.from({length: 200000}, (_, i) => 'item' + i)", tools.CodeResultTooLarge,
			[]string{"last value is", "more than the 1048576"}, false},
		{"a promise of a huge value", "Promise.resolve('é'.repeat(1 << 20))", tools.CodeResultTooLarge,
			[]string{"last value is 2097154 bytes"}, false},
		// At the sandbox's cap the pipeline's own (smaller) cap cuts it.
		{"at the sandbox's cap", "'x'.repeat(1024 * 1024 - 2)", "", nil, true},
		{"under every cap", "'x'.repeat(1000).length", "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, ex, js(tc.code, "timeout_ms", noRush))
			if out.Code != tc.errCode || out.IsError != (tc.errCode != "") {
				t.Fatalf("code %q isError %v (%s), want %q", out.Code, out.IsError, out.Message, tc.errCode)
			}
			if out.Truncated != tc.cut || (out.Continuation != nil) != tc.cut {
				t.Fatalf("truncated %v, continuation %+v; want cut %v", out.Truncated, out.Continuation, tc.cut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.Message, w) {
					t.Errorf("message %q lacks %q", out.Message, w)
				}
			}
			if strings.Contains(tc.code, "made it") && decode(t, out).Stdout != "made it\n" {
				t.Errorf("the error's details lost the output: %s", out.Structured)
			}
		})
	}
}

// A last value JSON cannot represent leaves result null with a note in
// stderr saying why; the run itself did not fail.
func TestJavaScriptValueJSONCannotRepresentIsNoted(t *testing.T) {
	ex, _, _ := shared(t)
	for _, tc := range []struct{ name, code, why string }{
		{"bigint", "console.log('ok'); 2n ** 64n", "BigInt"},
		{"cycle", "const head = {}; head.next = {head}; head.next.head", "circular"},
		{"poisoned toJSON", "({toJSON() { throw new Error('poisoned') }})", "Error: poisoned"},
		{"nesting deeper than JSON is read", "let v = []; for (let i = 1; i < 998; i++) v = [v]; v", "nests more than 997 levels deep"},
		// JSON.stringify is quadratic in the nesting: this one took longer
		// than any deadline and ended as a timeout.
		{"a million levels", "let v = []; for (let i = 1; i < 1e6; i++) v = {v}; v", "nests more than 997 levels deep"},
		{"nesting made by toJSON", "({toJSON() { let v = []; for (let i = 1; i < 998; i++) v = [v]; return v }})", "nests more than 997 levels deep"},
		{"undefined is plain null", "console.log('ok')", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && strings.Contains(tc.code, "1e6") {
				t.Skip("builds a value a million levels deep, seconds; runs in make test")
			}
			out := call(t, ex, js(tc.code, "timeout_ms", noRush))
			d := decode(t, out)
			if out.IsError || d.ExitCode != 0 || string(d.Result) != "null" {
				t.Fatalf("isError %v exit %d result %s (%s)", out.IsError, d.ExitCode, d.Result, out.Message)
			}
			note := "[sandbox] result is null: the last value cannot be written as JSON: "
			if tc.why == "" {
				if strings.Contains(d.Stderr, "[sandbox]") {
					t.Errorf("stderr %q has a note for a value with no JSON text", d.Stderr)
				}
				return
			}
			if !strings.Contains(d.Stderr, note) || !strings.Contains(d.Stderr, tc.why) || strings.Contains(d.Stderr, "<prelude>") {
				t.Errorf("stderr %q, want the note with %q", d.Stderr, tc.why)
			}
		})
	}
}

// Errors point at the program's own lines, input files or not, and show
// nothing of the sandbox.
func TestJavaScriptErrorLinesAreTheProgramsOwn(t *testing.T) {
	ex, _, _ := shared(t)
	files := []map[string]any{{"name": "a.txt", "content": "x\ny\n"}}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"line 3", js("const a = 1;\nconst b = 2;\nnull.x;"), "<eval>:3:"},
		{"line 3 with files", js("const a = 1;\nconst b = 2;\nnull.x;", "files", files), "<eval>:3:"},
		{"in a timer", js("\nsetTimeout(() => {\n  throw new Error('tick');\n}, 1);"), "<eval>:3:"},
		{"syntax error", js("const a = 1;\n\nconst = 2;"), "<eval>:3:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decode(t, call(t, ex, tc.args))
			if d.ExitCode != 1 || !strings.Contains(d.Stderr, tc.want) || strings.Contains(d.Stderr, "<prelude>") {
				t.Errorf("exit %d stderr %q, want %q", d.ExitCode, d.Stderr, tc.want)
			}
		})
	}
}

// RunScript's cap counts bytes of JSON: the cap passes, one byte over (or
// characters that take more bytes than they count) is result_too_large
// with the size.
func TestScriptResultCapIsExact(t *testing.T) {
	_, sb, _ := shared(t)
	sc := NewScripts(sb)
	sc.timeout = sandbox.MaxTimeout // what is returned is checked, not how fast
	ctx := context.Background()
	for _, tc := range []struct {
		name, body string
		bytes      int
		tooLarge   bool
	}{
		{"at the cap", "return 'x'.repeat(" + strconv.Itoa(ScriptMaxResult-2) + ");", ScriptMaxResult, false},
		{"one over", "return 'x'.repeat(" + strconv.Itoa(ScriptMaxResult-1) + ");", ScriptMaxResult + 1, true},
		{"characters under, bytes over", "return '€'.repeat(50000);", 150002, true},
		{"over the sandbox's own cap", "return 'x'.repeat(1 << 20);", (1 << 20) + 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sc.RunScript(ctx, "", tc.body, json.RawMessage(`{}`))
			if !tc.tooLarge {
				if err != nil || len(res) != tc.bytes {
					t.Fatalf("%v, %d bytes, want %d", err, len(res), tc.bytes)
				}
				return
			}
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != tools.CodeResultTooLarge || !strings.Contains(te.Message, strconv.Itoa(tc.bytes)+" bytes") {
				t.Fatalf("%v, want result_too_large with %d bytes", err, tc.bytes)
			}
		})
	}
	if _, err := sb.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "1", Args: json.RawMessage(`{}`)}); err == nil {
		t.Error("a Python request with Args ran")
	}
}
