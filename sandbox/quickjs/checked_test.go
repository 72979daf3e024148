package quickjs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// moduleWithBodies is the shared module with a cache of passed bodies of
// its own, holding at most n, so that its compile count is this test's.
func moduleWithBodies(t *testing.T, n int) *Module {
	m := *sharedModule(t)
	m.passedBodies = newCheckedBodies(n)
	return &m
}

// callOnFreshVM calls body on a new instance of m, as every tool call
// does, and returns the result and how many check compiles it cost.
func callOnFreshVM(t *testing.T, m *Module, body string) (*Result, int64) {
	t.Helper()
	ctx, cancel := cpuBudget(60 * time.Second)
	defer cancel()
	vm, err := m.Instantiate(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close(context.Background())
	before := m.passedBodies.compiles.Load()
	res, err := vm.CallFunction(ctx, body, json.RawMessage(`{"n":2}`))
	if err != nil {
		t.Fatal(err)
	}
	return res, m.passedBodies.compiles.Load() - before
}

// The break-out check runs once per body: the second call of the same
// body, on another instance, compiles no check; a body that differs by one
// character is checked again; a body that failed the check fails it again
// at every call, never running.
func TestBodyCheckIsCompiledOncePerBody(t *testing.T) {
	m := moduleWithBodies(t, maxCheckedBodies)
	const good = "return args.n * 21;"
	for i, want := range []int64{1, 0, 0} {
		res, compiles := callOnFreshVM(t, m, good)
		if res.Exception != "" || string(res.Value) != "42" || compiles != want {
			t.Errorf("call %d: value %s exception %q, %d check compiles, want 42 and %d", i+1, res.Value, res.Exception, compiles, want)
		}
	}
	if res, compiles := callOnFreshVM(t, m, good+" "); compiles != 1 || string(res.Value) != "42" {
		t.Errorf("another body: %d check compiles (value %s), want 1", compiles, res.Value)
	}
	const escape = "return 1; }); globalThis.pwned = 1; (function () { return 2;"
	for i := range 3 {
		res, compiles := callOnFreshVM(t, m, escape)
		if !strings.Contains(res.Exception, "closes that function before its end") || compiles != 1 {
			t.Errorf("escape, call %d: exception %q, %d check compiles, want the refusal and 1", i+1, res.Exception, compiles)
		}
	}
	// A syntax error of the body's own is a failure too, not remembered.
	for i := range 2 {
		res, compiles := callOnFreshVM(t, m, "return )")
		if !strings.HasPrefix(res.Exception, "SyntaxError") || compiles != 1 {
			t.Errorf("syntax error, call %d: exception %q, %d check compiles", i+1, res.Exception, compiles)
		}
	}
	if n := m.passedBodies.len(); n != 2 {
		t.Errorf("%d bodies remembered, want the 2 that passed", n)
	}
}

// Many distinct bodies keep the cache at its bound, least recently used
// out: an evicted body is checked again (and still refused if it is a
// break-out, which was never remembered), a recent one is not.
func TestBodyCheckCacheIsBounded(t *testing.T) {
	m := moduleWithBodies(t, 3)
	body := func(i int) string { return "return " + strings.Repeat("1 + ", i) + "0;" }
	for i := range 20 {
		if _, compiles := callOnFreshVM(t, m, body(i)); compiles != 1 {
			t.Fatalf("body %d: %d check compiles, want 1", i, compiles)
		}
	}
	if n := m.passedBodies.len(); n != 3 {
		t.Errorf("%d bodies remembered, want the bound 3", n)
	}
	if _, compiles := callOnFreshVM(t, m, body(19)); compiles != 0 {
		t.Errorf("the latest body: %d check compiles, want 0", compiles)
	}
	if res, compiles := callOnFreshVM(t, m, body(0)); compiles != 1 || string(res.Value) != "0" {
		t.Errorf("an evicted body: %d check compiles (value %s), want 1", compiles, res.Value)
	}
	res, compiles := callOnFreshVM(t, m, "}); globalThis.pwned = 1; (function () {")
	if compiles != 1 || !strings.Contains(res.Exception, "closes that function") {
		t.Errorf("a break-out after the churn: %d check compiles, exception %q", compiles, res.Exception)
	}
}
