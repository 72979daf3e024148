package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// findSecrets is hostile Python that looks for the bootstrap's bridge and
// anything secret it holds by every route a program has: sys.modules,
// import and importlib, the builtins (exit's globals), gc.get_objects and
// the frames. It prints what each route reached and collects every bytes
// value that could be the token of the host's end-of-run line.
const findSecrets = `import sys, gc, os, builtins, importlib
reached, secrets = [], set()
def note(route, obj):
    reached.append(route)
    seen, todo = set(), [obj]
    while todo:
        o = todo.pop()
        if id(o) in seen or len(seen) > 20000:
            continue
        seen.add(id(o))
        if isinstance(o, bytes) and 8 <= len(o) <= 64:
            secrets.add(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
        elif isinstance(o, (list, tuple, set)):
            todo.extend(o)
        elif hasattr(o, '__globals__'):
            todo.append(o.__globals__)
        elif isinstance(o, type(sys)):
            todo.append(vars(o))
try:
    note('sys.modules', sys.modules['_toolhost'])
except KeyError:
    pass
try:
    import _toolhost
    note('import', _toolhost)
except ImportError:
    pass
try:
    note('importlib', importlib.import_module('_toolhost'))
except ImportError:
    pass
note('builtins', builtins.exit)
for o in gc.get_objects():
    if isinstance(o, dict) and ('token' in o or 'status' in o):
        note('gc', o)
f = sys._getframe()
while f is not None:
    note('frame', f.f_globals)
    f = f.f_back
print(sorted(set(reached)))
`

// TestPythonBridgeIsOutOfReachOrHarmless: the bootstrap's bridge (the hook
// the guarded module body reports its exception with, and the state it
// keeps) is not a module a program can import, and what a program reaches
// of it by introspection gives it no power over the host's verdict: a
// program that writes the end-of-run line with every secret it found
// cannot end its run early, hide its later output, change its exit code or
// claim the memory limit.
func TestPythonBridgeIsOutOfReachOrHarmless(t *testing.T) {
	if testing.Short() {
		t.Skip("a hostile-input sweep of CPython runs, seconds; runs in make test")
	}
	s := sharedSandbox(t)
	forge := findSecrets + `for tok in secrets:
    for status in (b'mem 0', b'ok 0'):
        os.write(2, b'\0' + tok + b' ' + status + b'\n')
print('after', flush=True)
sys.exit(3)
`
	res := runPy(t, s, forge)
	if res.ExitCode != 3 || res.MemoryExceeded || !strings.HasSuffix(string(res.Stdout), "after\n") {
		t.Fatalf("a forged end-of-run line changed the verdict: exit %d memory %v stdout %q stderr %q", res.ExitCode, res.MemoryExceeded, res.Stdout, res.Stderr)
	}
	if got := strings.SplitN(string(res.Stdout), "\n", 2)[0]; got != "['builtins', 'frame', 'gc']" {
		t.Errorf("routes that reached the bootstrap: %s, want introspection's only (builtins, frame, gc), never an import", got)
	}

	// Tampering with what introspection reaches ends the program's own run
	// at worst, clearly, and the next run is untouched.
	tamper := []struct{ name, code string }{
		{"the hook's code replaced", "import builtins\ng = builtins.exit.__globals__\ng['_caught'].__code__ = (lambda e: 1 / 0).__code__\nraise ValueError('x')"},
		{"the report helper removed", "import builtins\ng = builtins.exit.__globals__\ng['_report'] = None\ng['_run']['code'] = 0\nraise ValueError('x')"},
		{"the state emptied", "import builtins\nbuiltins.exit.__globals__['_run'].clear()\nraise ValueError('x')"},
		{"sys.modules emptied", "import sys\nprint('before')\nsys.modules.clear()\nraise ValueError('x')"},
		{"__import__ removed", "import builtins\ndel builtins.__import__\nraise ValueError('x')"},
	}
	for _, c := range tamper {
		t.Run(c.name, func(t *testing.T) {
			res := runPy(t, s, c.code)
			if res.ExitCode == 0 {
				t.Errorf("exit 0 after an uncaught exception: stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			if !strings.Contains(string(res.Stderr), "ValueError: x") && !strings.Contains(string(res.Stderr), "exception reporting") {
				t.Errorf("neither the exception nor the lost report is said: exit %d stderr %q", res.ExitCode, res.Stderr)
			}
			next := runPy(t, s, "raise KeyError('next')")
			if next.ExitCode != 1 || !strings.HasSuffix(string(next.Stderr), "KeyError: 'next'\n") {
				t.Errorf("the next run is affected: exit %d stderr %q", next.ExitCode, next.Stderr)
			}
		})
	}
}

// TestPythonBootedInterpreterEndsTheSameWay: without a snapshot (the
// fallback when none can be taken) an interpreter boots for its run and
// ends through the same _finish: its exit code, the memory verdict and a
// forged end-of-run line come out as from a restored one.
func TestPythonBootedInterpreterEndsTheSameWay(t *testing.T) {
	if testing.Short() {
		t.Skip("boots CPython without a snapshot for each case, seconds; runs in make test")
	}
	s := sharedSandbox(t)
	for _, c := range []struct {
		name, code string
		exit       int
		memory     bool
		stdout     string
	}{
		{"output", "print('hi')", 0, false, "hi\n"},
		{"exception", "raise ValueError('x')", 1, false, ""},
		{"MemoryError", "raise MemoryError", 1, true, ""},
		{"exit code", "import sys\nsys.exit(7)", 7, false, ""},
		{"forged line", "import os, sys\nos.write(2, b'\\0' + b'0' * 32 + b' mem 0\\n')\nprint('after')\nsys.exit(3)", 3, false, "after\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p, err := s.py.startFrom(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.discard()
			res, err := s.py.runOn(ctx, p, false, &Request{Code: c.code, Timeout: time.Minute}, func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != c.exit || res.MemoryExceeded != c.memory || string(res.Stdout) != c.stdout {
				t.Errorf("exit %d memory %v stdout %q stderr %q, want exit %d memory %v stdout %q", res.ExitCode, res.MemoryExceeded, res.Stdout, res.Stderr, c.exit, c.memory, c.stdout)
			}
		})
	}
}
