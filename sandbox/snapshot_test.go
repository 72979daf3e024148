package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runPy(t *testing.T, s *Sandbox, code string) *Result {
	t.Helper()
	res, err := s.Run(context.Background(), Request{Language: Python, Code: code, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPythonRunsAreRestoredFromTheSnapshot: the engine took (or loaded) a
// snapshot, cached it next to the compilation cache, and a run without any
// pool still gets a working interpreter from it.
func TestPythonRunsAreRestoredFromTheSnapshot(t *testing.T) {
	s := newTestSandbox(t, Config{PythonPool: -1, JavaScriptPool: -1})
	if s.py.snap == nil {
		t.Fatalf("no snapshot: %v", s.py.snapErr)
	}
	wasm, err := os.ReadFile(filepath.Join(runtimesDir(t), PythonFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(snapshotPath(testCacheDir, snapshotKey(wasm))); err != nil {
		t.Errorf("snapshot not cached: %v", err)
	}
	for range 3 {
		res := runPy(t, s, "import sys, json\nprint(json.dumps([1, 2]), sys.argv, __name__)")
		if string(res.Stdout) != "[1, 2] ['main.py'] __main__\n" || res.ExitCode != 0 || len(res.Stderr) != 0 {
			t.Fatalf("stdout %q stderr %q exit %d", res.Stdout, res.Stderr, res.ExitCode)
		}
	}
}

// TestPythonProgramStackIsItsOwn: nothing of the sandbox shows in a
// program's tracebacks or stack, as if python ran main.py itself.
func TestPythonProgramStackIsItsOwn(t *testing.T) {
	s := sharedSandbox(t)
	cases := []struct {
		name, code string
		exit       int
		out, err   string
	}{
		{"uncaught", "def f():\n    raise ValueError('x')\nf()", 1, "",
			"Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n  File \"main.py\", line 2, in f\nValueError: x\n"},
		{"syntax error", "x = (", 1, "", "  File \"main.py\", line 1\n    x = (\n        ^\nSyntaxError: '(' was never closed\n"},
		{"print_stack", "import traceback\ntraceback.print_stack()", 0, "", "  File \"main.py\", line 2, in <module>\n    traceback.print_stack()\n"},
		{"f_back", "import sys\nprint(sys._getframe().f_back)", 0, "None\n", ""},
		{"inspect", "import inspect\nprint([f.filename for f in inspect.stack()])", 0, "['main.py']\n", ""},
		{"warning at module level", "import warnings\nwarnings.warn('w', stacklevel=2)", 0, "", "sys:1: UserWarning: w\n"},
		{"exit code", "import sys\nprint('a')\nsys.exit(3)", 3, "a\n", ""},
		{"exit message", "exit('bye')", 1, "", "bye\n"},
		{"docstring and future import stay first", "'doc'\nfrom __future__ import annotations\nx: undefined_name = 1\nprint(__doc__, x)", 0, "doc 1\n", ""},
		{"globals are a module's", "print(sorted(k for k in globals() if not k.startswith('__')), __name__, __file__)", 0, "[] __main__ main.py\n", ""},
		{"the program is __main__", "import __main__, pickle\nfrom dataclasses import dataclass\n@dataclass\nclass P:\n    x: 'int'\ndef f(): pass\nprint(__main__.f is f, pickle.loads(pickle.dumps(f)) is f, pickle.loads(pickle.dumps(P(1))))", 0, "True True P(x=1)\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runPy(t, s, c.code)
			if res.ExitCode != c.exit || string(res.Stdout) != c.out || string(res.Stderr) != c.err {
				t.Errorf("exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr, c.exit, c.out, c.err)
			}
		})
	}
}

// TestPythonRunsAreIsolated: whatever a run changes in its interpreter — a
// module attribute, a module of its own, the environment, a builtin, the
// random state, the bootstrap's own helpers — the next run starts from the
// pristine snapshot.
func TestPythonRunsAreIsolated(t *testing.T) {
	s := newTestSandbox(t, Config{PythonPool: 2, JavaScriptPool: -1})
	dirty := `import json, os, sys, builtins, random, types
json.dumps = lambda *a, **k: 'patched'
sys.modules['planted'] = types.ModuleType('planted')
os.environ['PLANTED'] = '1'
os.putenv('PLANTED2', '1')
builtins.len = lambda x: -1
builtins.planted = True
sys.path.insert(0, '/planted')
builtins.exit.__globals__['_toolhost'].caught = None
builtins.exit.__globals__['_run']['status'] = b'mem'
random.seed(1)
open('planted.txt', 'w').write('x')
print(random.random())
`
	probe := `import json, os, sys, builtins, random
print(json.dumps(1), 'planted' in sys.modules, os.environ.get('PLANTED'), os.getenv('PLANTED2'),
      len('ab'), hasattr(builtins, 'planted'), '/planted' in sys.path, os.path.exists('planted.txt'))
print(random.random())
raise KeyError('reported')
`
	first := runPy(t, s, dirty)
	if first.ExitCode != 0 {
		t.Fatalf("dirty run: %q %q", first.Stdout, first.Stderr)
	}
	seen := map[string]bool{}
	for i := range 3 {
		res := runPy(t, s, probe)
		lines := strings.Split(string(res.Stdout), "\n")
		if len(lines) < 2 || lines[0] != "1 False None None 2 False False False" {
			t.Fatalf("run %d sees the dirty run's changes: stdout %q stderr %q", i, res.Stdout, res.Stderr)
		}
		if lines[1] == strings.TrimSpace(string(first.Stdout)) || seen[lines[1]] {
			t.Errorf("run %d repeats a random sequence: %q", i, lines[1])
		}
		seen[lines[1]] = true
		if res.ExitCode != 1 || !strings.HasSuffix(string(res.Stderr), "KeyError: 'reported'\n") {
			t.Errorf("run %d: exception not reported: exit %d stderr %q", i, res.ExitCode, res.Stderr)
		}
	}
}

// TestPythonProgramThatBreaksReportingEndsCleanly: a program that empties
// what an import needs still has its exception reported (the guard reaches
// the bootstrap's hook without importing), and one that breaks the hook
// itself still ends, with a clear message; the next run is unaffected.
func TestPythonProgramThatBreaksReportingEndsCleanly(t *testing.T) {
	s := sharedSandbox(t)
	for _, c := range []struct{ code, stderr string }{
		{"import sys\nprint('before')\nsys.modules.clear()\nraise ValueError('x')", "ValueError: x\n"},
		{"import builtins\ndel builtins.__import__\nraise ValueError('x')", "ValueError: x\n"},
		{"import builtins\nbuiltins.exit.__globals__['_caught'].__code__ = (lambda e: 1 / 0).__code__\nraise ValueError('x')", "exception reporting"},
	} {
		res := runPy(t, s, c.code)
		if res.ExitCode == 0 || !bytes.Contains(res.Stderr, []byte(c.stderr)) {
			t.Errorf("%q: exit %d stdout %q stderr %q, want %q", c.code, res.ExitCode, res.Stdout, res.Stderr, c.stderr)
		}
	}
	if res := runPy(t, s, "print('ok')"); string(res.Stdout) != "ok\n" {
		t.Errorf("next run: %q %q", res.Stdout, res.Stderr)
	}
}

// TestBadSnapshotCacheIsReplaced: a cached snapshot that is truncated,
// foreign or whose image is garbage is not used; a new one is taken and
// cached in its place.
func TestBadSnapshotCacheIsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the Python snapshot again for each bad cache, seconds; runs in make test")
	}
	s := sharedSandbox(t)
	wasm, err := os.ReadFile(filepath.Join(runtimesDir(t), PythonFile))
	if err != nil {
		t.Fatal(err)
	}
	key := snapshotKey(wasm)
	good, err := os.ReadFile(snapshotPath(testCacheDir, key))
	if err != nil {
		t.Fatal(err)
	}
	garbage := append([]byte(nil), good...)
	for i := snapshotImgOffset; i < len(garbage); i += 4096 {
		garbage[i] ^= 0xa5
	}
	cases := map[string][]byte{
		"truncated":     good[:len(good)/2],
		"garbage image": garbage,
		"not a header":  bytes.Repeat([]byte{0xff}, 8192),
		"empty":         nil,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := snapshotPath(dir, key)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sn, from, err := s.py.snapshot(ctx, dir, wasm)
			if err != nil {
				t.Fatal(err)
			}
			defer sn.close()
			if from != "boot" {
				t.Errorf("snapshot from %s, want a new one", from)
			}
			if fresh, err := loadSnapshot(dir, key); err != nil {
				t.Errorf("the replacement is not cached: %v", err)
			} else {
				fresh.close()
			}
		})
	}
}
