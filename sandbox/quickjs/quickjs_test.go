package quickjs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// wasmPath is where `make runtimes` puts the verified quickjs.wasm.
const wasmPath = "../../runtimes/quickjs.wasm"

// testPages caps linear memory at 256 MiB, the sandbox's default.
const testPages = 4096

// testCache shares compiled machine code between the tests' runtimes.
var testCache = wazero.NewCompilationCache()

var (
	wasmOnce  sync.Once
	wasmBytes []byte
	wasmErr   error
)

func readWasm(tb testing.TB) []byte {
	tb.Helper()
	wasmOnce.Do(func() { wasmBytes, wasmErr = os.ReadFile(wasmPath) })
	if wasmErr != nil {
		tb.Fatalf("quickjs.wasm is missing (%v): run `make runtimes` first", wasmErr)
	}
	return wasmBytes
}

// newModule compiles quickjs.wasm on a fresh runtime with the sandbox's page
// cap; hardStop chooses WithCloseOnContextDone.
func newModule(tb testing.TB, hardStop bool) *Module {
	tb.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCompilationCache(testCache).WithMemoryLimitPages(testPages).WithCloseOnContextDone(hardStop)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { _ = rt.Close(ctx) })
	m, err := Compile(ctx, rt, readWasm(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

var (
	sharedOnce sync.Once
	shared     *Module
)

// sharedModule is one runtime with the hard stop, compiled once for the
// tests that do not care about the runtime's configuration.
func sharedModule(t *testing.T) *Module {
	t.Helper()
	readWasm(t)
	sharedOnce.Do(func() {
		ctx := context.Background()
		cfg := wazero.NewRuntimeConfig().WithCompilationCache(testCache).WithMemoryLimitPages(testPages).WithCloseOnContextDone(true)
		m, err := Compile(ctx, wazero.NewRuntimeWithConfig(ctx, cfg), wasmBytes)
		if err != nil {
			panic(err)
		}
		shared = m
	})
	return shared
}

type output struct{ stdout, stderr bytes.Buffer }

// run evaluates code in a fresh VM within a generous budget of CPU time.
func run(t *testing.T, m *Module, opts Options, code string) (*Result, *output, error) {
	t.Helper()
	out := &output{}
	if opts.Stdout == nil {
		opts.Stdout = &out.stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = &out.stderr
	}
	ctx, cancel := cpuBudget(60 * time.Second)
	defer cancel()
	vm, err := m.Instantiate(ctx, opts)
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	defer vm.Close(context.Background())
	res, err := vm.Eval(ctx, code)
	return res, out, err
}

func TestEvalReturnsLastValueAsJSON(t *testing.T) {
	m := sharedModule(t)
	for _, tc := range []struct {
		name, code, want string
	}{
		{"arithmetic", "1+2", `3`},
		{"string", "'héllo' + \"\\u2603\"", `"héllo☃"`},
		{"object", "({a: 1, b: [true, null, 'x'], c: {d: 1.5}})", `{"a":1,"b":[true,null,"x"],"c":{"d":1.5}}`},
		{"array", "[1, 'two', [3]]", `[1,"two",[3]]`},
		{"undefined", "undefined", `null`},
		{"no expression", "let x = 1;", `null`},
		{"function", "(function f() {})", `null`},
		{"bigint", "10n ** 20n", `null`},
		{"cycle", "const o = {}; o.self = o; o", `null`},
		{"var then value", "var x = 40; x + 2", `42`},
		{"date", "new Date(0)", `"1970-01-01T00:00:00.000Z"`},
		{"patched Promise.then does not confuse the host", "Promise.prototype.then = function () { for (;;) {} }; await null; (async () => 5)()", `5`},
		{"patched JSON is not used", "JSON.stringify = () => 'bad'; ({ok: true})", `{"ok":true}`},
		{"top-level await", "await new Promise(r => setTimeout(() => r('late'), 5))", `"late"`},
		{"async value resolved", "(async () => { await null; return 9 })()", `9`},
		{"promise chain", "Promise.resolve(1).then(x => x + 1).then(x => [x])", `[2]`},
		{"timers in order", "const seen = []; setTimeout(() => seen.push('b'), 10); setTimeout(() => seen.push('a'), 1); await new Promise(r => setTimeout(r, 20)); seen", `["a","b"]`},
		{"interval cleared", "let n = 0; const id = setInterval(() => { if (++n === 3) clearInterval(id) }, 1); await new Promise(r => setTimeout(r, 30)); n", `3`},
		{"equal delays in creation order", "const seen = []; setTimeout(() => seen.push('a'), 5); setTimeout(() => seen.push('b'), 5); setTimeout(() => seen.push('c'), 1); await new Promise(r => setTimeout(r, 10)); seen", `["c","a","b"]`},
		{"cleared timer does not run", "let x = 0; const id = setTimeout(() => { x = 1 }, 1); clearTimeout(id); await new Promise(r => setTimeout(r, 5)); x", `0`},
		{"many timers", "let n = 0; for (let i = 0; i < 5000; i++) setTimeout(() => n++, i % 10); await new Promise(r => setTimeout(r, 20)); n", `5000`},
		{"timer arguments", "await new Promise(r => setTimeout((a, b) => r(a + b), 1, 2, 3))", `5`},
		{"patched Map and Array", "Map.prototype.get = Map.prototype.set = Array.prototype.push = () => { throw 1 }; await new Promise(r => setTimeout(() => r('ok'), 1))", `"ok"`},
		{"microtask", "let v = 0; queueMicrotask(() => { v = 5 }); await null; v", `5`},
		{"no require process fetch std os", "[typeof require, typeof process, typeof fetch, typeof std, typeof os, typeof scriptArgs, typeof print, typeof XMLHttpRequest, typeof WebAssembly]",
			`["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]`},
		{"no host function on globals", "Object.getOwnPropertyNames(globalThis).filter(k => /^(std|os|stdout|stderr|host|qjs|__)/i.test(k))", `[]`},
		{"local time is UTC", "new Date(2020, 0, 1).getTimezoneOffset()", `0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := run(t, m, Options{}, tc.code)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if res.Exception != "" {
				t.Fatalf("exception %q (stderr %q)", res.Exception, out.stderr.String())
			}
			if string(res.Value) != tc.want {
				t.Errorf("value = %s, want %s", res.Value, tc.want)
			}
		})
	}
}

func TestEvalReportsUncaughtExceptions(t *testing.T) {
	m := sharedModule(t)
	for _, tc := range []struct {
		name, code string
		want       []string
	}{
		{"throw error with stack", "function inner() { throw new Error('boom') }\nfunction outer() { inner() }\nouter()",
			[]string{"Error: boom", "at inner (<eval>:1:", "at outer (<eval>:2:"}},
		{"type error", "null.x", []string{"TypeError:", "at <eval> (<eval>:1:"}},
		{"syntax error", "let = ;", []string{"SyntaxError:"}},
		{"throw a string", "throw 'plain'", []string{`Uncaught "plain"`}},
		{"throw an object", "throw {code: 7}", []string{"Uncaught { code: 7 }"}},
		{"rejected promise value", "Promise.reject(new RangeError('nope'))", []string{"RangeError: nope"}},
		{"throw after await", "await null; throw new Error('later')", []string{"Error: later"}},
		{"throw in timer", "setTimeout(() => { throw new Error('tick') }, 1)", []string{"Error: tick"}},
		{"deep recursion", "function f(n) { return f(n + 1) + 1 } f(0)", []string{"RangeError: Maximum call stack size exceeded"}},
		{"recursion through a builtin", "const o = {toString() { return String(o) }}; String(o)", []string{"RangeError"}},
		{"deep JSON parse", "JSON.parse('['.repeat(1e6))", []string{"Error"}},
		{"never settles", "await new Promise(() => {})", []string{"never settled"}},
		{"dynamic import", "await import('os')", []string{"could not load module 'os'"}},
		{"static import", "import * as std from 'std'", []string{"SyntaxError"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := run(t, m, Options{}, tc.code)
			if err != nil {
				t.Fatalf("Eval: %v (a JavaScript throw is not a Go error)", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Exception, w) {
					t.Errorf("exception %q does not contain %q", res.Exception, w)
				}
			}
			if string(res.Value) != "null" {
				t.Errorf("value = %s, want null", res.Value)
			}
		})
	}
}

func TestConsoleWritesToStdoutAndStderr(t *testing.T) {
	m := sharedModule(t)
	for _, tc := range []struct {
		name, code, stdout, stderr string
	}{
		{"log", "console.log('hello', 42, {a: [1, 'x']}, null, undefined, 1n, -0)",
			"hello 42 { a: [ 1, \"x\" ] } null undefined 1n -0\n", ""},
		{"info and debug", "console.info('i'); console.debug('d')", "i\nd\n", ""},
		{"error and warn", "console.error('e', 1); console.warn('w')", "", "e 1\nw\n"},
		{"format specifiers", "console.log('%s=%d %o%%', 'n', 42.5, [1])", "n=42.5 [ 1 ]%\n", ""},
		{"map set nested", "console.log(new Map([[1, {b: 2}]]), new Set(['x']))", "Map(1) { 1 => { b: 2 } } Set(1) { \"x\" }\n", ""},
		{"circular", "const o = {}; o.o = o; console.log(o)", "{ o: [Circular] }\n", ""},
		{"error object", "console.log(new TypeError('t'))", "TypeError: t\n    at <eval> (<eval>:1:", ""},
		{"unicode", "console.log('snow ☃ \\u{1F600}')", "snow ☃ \U0001F600\n", ""},
		{"unhandled rejection", "Promise.reject(new Error('lost')); 1", "", "Uncaught (in promise) Error: lost\n"},
		{"handled rejection is quiet", "Promise.reject(new Error('kept')).catch(() => {}); 1", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := run(t, m, Options{}, tc.code)
			if err != nil || res.Exception != "" {
				t.Fatalf("Eval: %v %q", err, res.Exception)
			}
			if !strings.HasPrefix(out.stdout.String(), tc.stdout) || (tc.stdout == "" && out.stdout.Len() > 0) {
				t.Errorf("stdout = %q, want %q", out.stdout.String(), tc.stdout)
			}
			if !strings.HasPrefix(out.stderr.String(), tc.stderr) || (tc.stderr == "" && out.stderr.Len() > 0) {
				t.Errorf("stderr = %q, want %q", out.stderr.String(), tc.stderr)
			}
		})
	}
}

func TestDateUsesTheRealClock(t *testing.T) {
	m := sharedModule(t)
	before := time.Now()
	res, _, err := run(t, m, Options{}, "[new Date().getFullYear(), Date.now(), Math.floor(performance.timeOrigin), performance.now() >= 0]")
	after := time.Now()
	if err != nil || res.Exception != "" {
		t.Fatalf("Eval: %v %q", err, res.Exception)
	}
	var got [4]any
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatal(err)
	}
	if y := int(got[0].(float64)); y != before.UTC().Year() && y != after.UTC().Year() {
		t.Errorf("year = %d, want %d", y, after.UTC().Year())
	}
	// Date.now has millisecond resolution; the clock is the host's. The
	// instance started (timeOrigin) within the run too.
	for i, name := range []string{1: "Date.now()", 2: "performance.timeOrigin"} {
		if i == 0 {
			continue
		}
		if ms := int64(got[i].(float64)); ms < before.UnixMilli()-1 || ms > after.UnixMilli()+1 {
			t.Errorf("%s = %d, want between %d and %d", name, ms, before.UnixMilli(), after.UnixMilli())
		}
	}
	if got[3] != true {
		t.Errorf("performance.now() is negative")
	}
}

func TestMathRandomIsSeededPerInstance(t *testing.T) {
	m := sharedModule(t)
	const code = "Array.from({length: 4}, Math.random)"
	draw := func(seed []byte) string {
		res, _, err := run(t, m, Options{Seed: seed}, code)
		if err != nil || res.Exception != "" {
			t.Fatalf("Eval: %v %q", err, res.Exception)
		}
		var xs []float64
		if err := json.Unmarshal(res.Value, &xs); err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			if x < 0 || x >= 1 {
				t.Fatalf("Math.random() = %v, outside [0, 1)", x)
			}
		}
		return string(res.Value)
	}
	if a, b := draw(nil), draw(nil); a == b {
		t.Errorf("two instances drew the same numbers: %s", a)
	}
	seed := []byte("0123456789abcdef")
	if a, b := draw(seed), draw(seed); a != b {
		t.Errorf("the same seed drew %s and %s", a, b)
	}
}

func TestInfiniteLoopStopsAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hardStop bool
		code     string
		stop     string // "soft": the interrupt hook, "hard": the runtime, "": either
	}{
		// Without the runtime's hard stop, only the interrupt hook can end
		// the loop: proves the soft path alone.
		{"soft: busy loop", false, "while (true) {}", "soft"},
		{"soft: loop in a promise job", false, "await null; for (;;) {}", "soft"},
		{"soft: catch cannot swallow it", false, "for (;;) { try { while (true) {} } catch (e) {} }", "soft"},
		{"soft: waiting on a timer", false, "await new Promise(r => setTimeout(r, 60000))", "soft"},
		// A long BigInt conversion never polls the hook: only the module
		// being closed on the context's end stops it.
		{"hard: builtin that never polls", true, "(3n ** 1000000n).toString().length", "hard"},
		{"either: busy loop", true, "while (true) {}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModule(t, tc.hardStop)
			vm, err := m.Instantiate(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			res, err := vm.Eval(ctx, tc.code)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("err = %v, want ErrInterrupted", err)
			}
			if tc.stop == "soft" && (res == nil || !strings.Contains(res.Exception+err.Error(), "interrupted")) {
				t.Errorf("result = %+v, want the interrupted exception", res)
			}
			var exit *sys.ExitError
			if tc.stop == "hard" && !errors.As(err, &exit) {
				t.Errorf("err = %v, want the module closed by the runtime", err)
			}
		})
	}
}

func TestMemoryBombEndsWithErrMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("memory bombs fill the whole linear memory, seconds; runs in make test")
	}
	m := sharedModule(t)
	for _, tc := range []struct{ name, code string }{
		{"array buffers", "const a = []; while (true) a.push(new ArrayBuffer(1 << 20))"},
		{"strings", "const a = [], base = 'x'.repeat(1 << 20); for (let i = 0; ; i++) a.push(base + i)"},
		{"objects", "const a = []; for (let i = 0; ; i++) a.push({i, s: [i, i]})"},
		{"one huge allocation", "new Array(1e9).fill(0).length"},
		{"printing a huge string", "console.log('x'.repeat(10 << 20))"},
		{"catch cannot swallow it", "let r; try { const a = []; while (true) a.push(new ArrayBuffer(1 << 20)) } catch (e) { r = 'caught' }; r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := run(t, m, Options{MemoryLimit: 24 << 20}, tc.code)
			if !errors.Is(err, ErrMemory) {
				t.Fatalf("err = %v (result %+v), want ErrMemory", err, res)
			}
			if res == nil || !strings.Contains(res.Exception, "out of memory") {
				t.Errorf("result = %+v, want the out-of-memory exception", res)
			}
		})
	}
	// The module keeps serving.
	res, _, err := run(t, m, Options{MemoryLimit: 24 << 20}, "1+2")
	if err != nil || string(res.Value) != "3" {
		t.Fatalf("after the bombs: %v %+v", err, res)
	}
}

func TestPageCapAloneStopsAMemoryBomb(t *testing.T) {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().WithCompilationCache(testCache).WithMemoryLimitPages(512).WithCloseOnContextDone(true) // 32 MiB
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer rt.Close(ctx)
	m, err := Compile(ctx, rt, readWasm(t))
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := run(t, m, Options{}, "const a = []; while (true) a.push(new ArrayBuffer(1 << 20))")
	if !errors.Is(err, ErrMemory) {
		t.Fatalf("err = %v (result %+v), want ErrMemory", err, res)
	}
}

// cappedWriter keeps the first limit bytes and counts the rest, as the
// sandbox's writers do.
type cappedWriter struct {
	buf   bytes.Buffer
	limit int
	total int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	w.total += len(p)
	if room := w.limit - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func TestHugeOutputGoesThroughTheCappedWriter(t *testing.T) {
	m := sharedModule(t)
	stdout := &cappedWriter{limit: 64 << 10}
	stderr := &cappedWriter{limit: 1 << 10}
	res, _, err := run(t, m, Options{Stdout: stdout, Stderr: stderr},
		"const line = 'x'.repeat(1000); for (let i = 0; i < 2000; i++) { console.log(line); console.error(line) } console.log('y'.repeat(4 << 20)); 'done'")
	if err != nil || string(res.Value) != `"done"` {
		t.Fatalf("Eval: %v %+v", err, res)
	}
	if want := 2000*1001 + 4<<20 + 1; stdout.total != want {
		t.Errorf("stdout saw %d bytes, want %d", stdout.total, want)
	}
	if stdout.buf.Len() != 64<<10 || stderr.buf.Len() != 1<<10 {
		t.Errorf("kept %d and %d bytes, want the caps", stdout.buf.Len(), stderr.buf.Len())
	}
}

func TestOutputFloodStopsAtTheDeadline(t *testing.T) {
	m := sharedModule(t)
	stdout := &cappedWriter{limit: 64}
	vm, err := m.Instantiate(context.Background(), Options{Stdout: stdout})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := vm.Eval(ctx, "console.log('x'.repeat(100)); for (;;) console.log('flood')"); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if stdout.buf.Len() != 64 || stdout.total <= 100 {
		t.Errorf("kept %d of %d bytes, want the 64-byte cap of more", stdout.buf.Len(), stdout.total)
	}
}

func TestCompileRefusesASecondEnvModule(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(testCache))
	defer rt.Close(ctx)
	if _, err := Compile(ctx, rt, readWasm(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(ctx, rt, readWasm(t)); err == nil {
		t.Fatal("a second Compile on the same runtime succeeded")
	}
	if _, err := Compile(ctx, wazero.NewRuntime(ctx), []byte("\x00asm\x01\x00\x00\x00")); err == nil {
		t.Fatal("an empty module was accepted as quickjs.wasm")
	}
}

func TestInstancesDoNotShareState(t *testing.T) {
	m := sharedModule(t)
	ctx := context.Background()
	a, err := m.Instantiate(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := m.Instantiate(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if res, err := a.Eval(ctx, "globalThis.secret = 'a'; Object.prototype.polluted = 1; 1"); err != nil || res.Exception != "" {
		t.Fatalf("a: %v %+v", err, res)
	}
	res, err := b.Eval(ctx, "[typeof secret, ({}).polluted === undefined]")
	if err != nil || string(res.Value) != `["undefined",true]` {
		t.Fatalf("b sees a's state: %v %s", err, fmt.Sprint(res))
	}
}

// TestInstantiateWithoutSnapshot runs the engine's own start-up (qjs_init and
// the prelude in the instance) instead of restoring the snapshot, and checks
// that both give the same engine.
func TestInstantiateWithoutSnapshot(t *testing.T) {
	restored := sharedModule(t)
	fresh := *restored
	fresh.snap = nil
	const code = "console.log('hi', [1, {a: 2}]); [typeof performance.now(), Object.getOwnPropertyNames(globalThis).length, 1 + 2]"
	var results [2]string
	for i, m := range []*Module{restored, &fresh} {
		res, out, err := run(t, m, Options{MemoryLimit: 32 << 20}, code)
		if err != nil || res.Exception != "" {
			t.Fatalf("Eval: %v %+v", err, res)
		}
		if out.stdout.String() != "hi [ 1, { a: 2 } ]\n" {
			t.Errorf("stdout = %q", out.stdout.String())
		}
		results[i] = string(res.Value)
	}
	if results[0] != results[1] {
		t.Errorf("restored engine gives %s, fresh one %s", results[0], results[1])
	}
}

func TestLargeValuesAndExceptionsAreCapped(t *testing.T) {
	m := sharedModule(t)
	res, _, err := run(t, m, Options{MaxValue: 1000}, "'x'.repeat(5000)")
	if err != nil || !res.ValueTooLarge || string(res.Value) != "null" {
		t.Fatalf("large value: %v %+v", err, res)
	}
	res, _, err = run(t, m, Options{MaxValue: 1000}, "'x'.repeat(900)")
	if err != nil || res.ValueTooLarge || len(res.Value) != 902 {
		t.Fatalf("value under the cap: %v ValueTooLarge=%v len=%d", err, res.ValueTooLarge, len(res.Value))
	}
	res, _, err = run(t, m, Options{}, "throw new Error('e'.repeat(10 << 20))")
	if err != nil || len(res.Exception) > maxException+64 || !strings.HasSuffix(res.Exception, "(truncated)") {
		t.Fatalf("huge exception: %v, %d bytes", err, len(res.Exception))
	}
}

// TestConcurrentRunsDoNotInterfere runs programs in parallel VMs of one
// Module: each sees only its own output, globals and deadline.
func TestConcurrentRunsDoNotInterfere(t *testing.T) {
	m := sharedModule(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			opts := Options{Stdout: &out, MemoryLimit: 16 << 20}
			vm, err := m.Instantiate(ctx, opts)
			if err != nil {
				errs <- err
				return
			}
			defer vm.Close(ctx)
			code := fmt.Sprintf("globalThis.me = %d; for (let k = 0; k < 50; k++) { await null; console.log(me) } me", i)
			if i%2 == 1 {
				// Every other run is hostile: it bombs or spins.
				code = []string{"const a = []; while (true) a.push(new ArrayBuffer(1 << 20))", "while (true) {}"}[i%4/2]
				ctx2, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel2()
				ctx = ctx2
			}
			res, err := vm.Eval(ctx, code)
			if i%2 == 1 {
				if !errors.Is(err, ErrMemory) && !errors.Is(err, ErrInterrupted) {
					errs <- fmt.Errorf("hostile run %d: %v", i, err)
				}
				return
			}
			if err != nil || string(res.Value) != fmt.Sprint(i) {
				errs <- fmt.Errorf("run %d: %v %+v", i, err, res)
				return
			}
			if want := strings.Repeat(fmt.Sprintf("%d\n", i), 50); out.String() != want {
				errs <- fmt.Errorf("run %d printed %q", i, out.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDefineMakesInputDataAGlobal(t *testing.T) {
	m := sharedModule(t)
	ctx := context.Background()
	vm, err := m.Instantiate(ctx, Options{MemoryLimit: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close(ctx)
	if err := vm.Define(ctx, "args", json.RawMessage(`{"n": 2, "s": "</script>\u2028'\"", "list": [1, 2]}`)); err != nil {
		t.Fatal(err)
	}
	if err := vm.Define(ctx, "files", json.RawMessage(`{"a.txt": "hello"}`)); err != nil {
		t.Fatal(err)
	}
	if err := vm.Define(ctx, "bad", json.RawMessage(`{"unterminated": `)); err == nil {
		t.Error("invalid JSON was accepted")
	}
	if err := vm.Define(ctx, "huge", json.RawMessage(`"`+strings.Repeat("x", 10<<20)+`"`)); !errors.Is(err, ErrMemory) {
		t.Errorf("a value above the memory limit: err = %v, want ErrMemory", err)
	}
	res, err := vm.Eval(ctx, "[args.n * 21, args.s.length, files['a.txt'], Object.keys(globalThis).includes('args')]")
	if err != nil || res.Exception != "" {
		t.Fatalf("Eval: %v %+v", err, res)
	}
	if want := `[42,12,"hello",false]`; string(res.Value) != want {
		t.Errorf("value = %s, want %s", res.Value, want)
	}
}
