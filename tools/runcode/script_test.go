package runcode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// scriptExecutor is a pipeline whose account "local" has one script tool
// per case, run in the shared sandbox, and the tools in also. Its scripts
// may run for sandbox.MaxTimeout instead of ScriptTimeout: the tests that
// use it check what a script returns or how it fails, not how fast, and a
// heavy script (a million levels of nesting) can take more than
// ScriptTimeout of wall time on a loaded machine. A test of ScriptTimeout
// itself uses scriptExecutorWithin.
func scriptExecutor(t *testing.T, enabled bool, scripts map[string]string, also ...tools.Tool) *tools.Executor {
	t.Helper()
	return scriptExecutorWithin(t, sandbox.MaxTimeout, enabled, scripts, also...)
}

// scriptExecutorWithin is scriptExecutor whose scripts run for timeout.
func scriptExecutorWithin(t *testing.T, timeout time.Duration, enabled bool, scripts map[string]string, also ...tools.Tool) *tools.Executor {
	t.Helper()
	_, sb, _ := shared(t)
	st := tooldef.NewMemStore()
	now := time.Now()
	for name, body := range scripts {
		h, _ := json.Marshal(map[string]string{"script": body})
		d := tooldef.New()
		d.ID, d.AccountID, d.Name, d.HandlerType, d.Handler, d.CreatedAt, d.UpdatedAt = "tooldef_"+name, tools.LocalAccount, name, tooldef.HandlerScript, h, now, now
		d.Parameters = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
		if err := st.CreateDefinition(context.Background(), d, 0); err != nil {
			t.Fatal(err)
		}
	}
	sc := NewScripts(sb)
	sc.timeout = timeout
	ex, err := tools.NewExecutor(tools.Options{Definitions: st, Scripts: sc, ScriptsEnabled: enabled, MaxResultBytes: 64 << 10}, also...)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func TestScriptToolsRunInTheSandbox(t *testing.T) {
	ex := scriptExecutor(t, true, map[string]string{
		"lookup_npc": `return { found: true, info: args.name };`,
		"number":     `return 42;`,
		"thrower":    `throw new Error("no such NPC: " + args.name);`,
		"bomb":       `const a = []; for (;;) a.push(new ArrayBuffer(16 << 20));`,
		"undef":      `return;`,
		"fn":         `return function () {};`,
		"huge":       `return { s: "x".repeat(1 << 20) };`,
		"proto":      `Object.prototype.toJSON = function () { throw new Error("poisoned"); }; return {a: 1};`,
		"frozen":     `args.name = "changed"; return { name: args.name, proto: Object.getPrototypeOf(args) === Object.prototype };`,
		"escape":     `return 1; }); globalThis.x = (function () { return 2;`,
		// Closes the function early and puts a function of its own in
		// its place: a syntax error, and nothing of it runs.
		"escapebig": `return 1; }); (function () { return "x".repeat(200000);`,
		// An error's line is the script's own (line 3 here).
		"line3":     "const a = 1;\nconst b = 2;\nthrow new Error('on three: ' + args.name);",
		"syntax":    "const a = 1;\n\nconst = 2;",
		"callhost":  `return toolScript(function () { return 1; }, "{}", 1e9, "x");`,
		"redefine":  `globalThis.toolScript = () => { throw new Error("hijacked"); }; return {ok: typeof toolScript};`,
		"stringify": `JSON.stringify = () => '"forged"'; JSON.parse = () => ({}); return {name: args.name};`,
		"bigint":    `return {n: 10n};`,
		"cycle":     `const o = {}; o.o = o; return o;`,
		"deep":      `let v = []; for (let i = 1; i < 998; i++) v = [v]; return v;`,
		"deeper":    `let v = []; for (let i = 1; i < 1e6; i++) v = {v}; return v;`,
	})
	// The one case about the time limit runs within the product's own.
	limited := scriptExecutorWithin(t, ScriptTimeout, true, map[string]string{"spin": `for (;;) {}`})
	ctx := context.Background()
	cases := []struct {
		tool, args   string
		code, result string
	}{
		{"lookup_npc", `{"name":"Ayla"}`, "", `{"found":true,"info":"Ayla"}`},
		{"lookup_npc", `{"name":"\")}); throw 1; //"}`, "", `{"found":true,"info":"\")}); throw 1; //"}`},
		{"number", `{}`, "", `{"value":42}`},
		{"thrower", `{"name":"Bo"}`, tools.CodeScriptError, "no such NPC: Bo"},
		{"spin", `{}`, CodeTimeout, "within " + ScriptTimeout.String()},
		{"bomb", `{}`, CodeMemoryExceeded, ""},
		{"huge", `{}`, tools.CodeResultTooLarge, "131072 allowed"},
		{"escape", `{}`, tools.CodeScriptError, "closes that function before its end (a \"}\" with no \"{\" of its own)\n    at <eval>:1:11"},
		{"escapebig", `{}`, tools.CodeScriptError, "SyntaxError: the script must be the body of one function"},
		{"proto", `{}`, tools.CodeScriptError, "poisoned"},
		{"undef", `{}`, "", `{"value":null}`},
		{"fn", `{}`, tools.CodeScriptError, "JSON cannot represent"},
		{"frozen", `{"name":"Cy"}`, "", `{"name":"Cy","proto":true}`},
		{"lookup_npc", `{"name":7}`, tools.CodeInvalidArgs, ""},
		{"line3", `{"name":"Di"}`, tools.CodeScriptError, "<eval>:3:"},
		{"syntax", `{}`, tools.CodeScriptError, "<eval>:3:"},
		{"callhost", `{}`, tools.CodeScriptError, "toolScript is not defined"},
		{"redefine", `{}`, "", `{"ok":"function"}`},
		{"stringify", `{"name":"Ed"}`, "", `{"name":"Ed"}`},
		{"bigint", `{}`, tools.CodeScriptError, "JSON cannot represent: TypeError"},
		{"cycle", `{}`, tools.CodeScriptError, "circular"},
		{"deep", `{}`, tools.CodeScriptError, "nests more than 997 levels deep"},
		{"deeper", `{}`, tools.CodeScriptError, "nests more than 997 levels deep"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			if testing.Short() && (c.tool == "spin" || c.tool == "bomb" || c.tool == "deeper") {
				t.Skip("runs to its deadline, fills its memory or nests a million levels, seconds; runs in make test")
			}
			ex := ex
			if c.tool == "spin" {
				ex = limited
			}
			out, err := ex.Execute(ctx, tools.Proposal{Tool: c.tool, Args: json.RawMessage(c.args), Caller: tools.Caller{Face: "mcp"}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Code != c.code {
				t.Fatalf("code %q (%s), want %q", out.Code, out.Message, c.code)
			}
			if c.code == "" && string(out.Structured) != c.result {
				t.Errorf("structured %s, want %s", out.Structured, c.result)
			}
			if c.code != "" && c.result != "" && !strings.Contains(out.Message, c.result) {
				t.Errorf("message %q lacks %q", out.Message, c.result)
			}
			if strings.Contains(out.Message, "<prelude>") || strings.Contains(out.Message, "toolScript (") {
				t.Errorf("message %q shows the sandbox's frames", out.Message)
			}
			rec, err := ex.Journal().Store().Get(ctx, tools.LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.ProviderType != "preset" || rec.ProviderID != "tooldef:tooldef_"+c.tool {
				t.Errorf("journal provider %s %s", rec.ProviderType, rec.ProviderID)
			}
		})
	}
	// The sandbox is still healthy after the hostile ones.
	out, err := ex.Execute(ctx, tools.Proposal{Tool: "lookup_npc", Args: json.RawMessage(`{"name":"again"}`)})
	if err != nil || out.IsError {
		t.Fatalf("after the hostile scripts: %v %+v", err, out)
	}
}

// While script handlers are off, a call to a script tool is denied before
// anything runs.
func TestScriptToolDeniedWhileScriptsAreOff(t *testing.T) {
	ex := scriptExecutor(t, false, map[string]string{"lookup_npc": `return {};`})
	out, err := ex.Execute(context.Background(), tools.Proposal{Tool: "lookup_npc", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := ex.Journal().Store().Get(context.Background(), tools.LocalAccount, out.ExecutionID)
	if out.Code != tools.CodeScriptsDisabled || rec.Status != journal.StatusDenied {
		t.Errorf("code %q status %s", out.Code, rec.Status)
	}
}

// BenchmarkScriptTool is a trivial script tool through the whole pipeline
// (parse, schema, journal in memory, the QuickJS sandbox), without a
// transport, on an idle sandbox: each call waits, untimed, until the warm
// pool is full again, as BenchmarkLatency does for run_code.
//
//	go test -run '^$' -bench 'ScriptTool|Latency/javascript/warm' -benchtime 300x ./tools/runcode/
func BenchmarkScriptTool(b *testing.B) {
	_, sb, _ := shared(b)
	st := tooldef.NewMemStore()
	d := tooldef.New()
	now := time.Now()
	d.ID, d.AccountID, d.Name, d.HandlerType, d.Handler, d.CreatedAt, d.UpdatedAt = "tooldef_b", tools.LocalAccount, "lookup_npc", tooldef.HandlerScript,
		json.RawMessage(`{"script":"return { found: true, info: args.name };"}`), now, now
	if err := st.CreateDefinition(context.Background(), d, 0); err != nil {
		b.Fatal(err)
	}
	ex, err := tools.NewExecutor(tools.Options{Definitions: st, Scripts: NewScripts(sb), ScriptsEnabled: true})
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"name":"Ayla"}`)
	lat := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := sb.Ready(ctx, sandbox.JavaScript); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		out, err := ex.Execute(ctx, tools.Proposal{Tool: "lookup_npc", Args: args})
		if err != nil || out.IsError {
			b.Fatalf("%v %+v", err, out)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}
