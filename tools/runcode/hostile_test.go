package runcode

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileCase is a program written to break out or break the server.
type hostileCase struct {
	name string
	args map[string]any
	// code is the tool error code the call must end with; "" means a normal
	// result.
	code string
	// check inspects the output (for errors: the output in the details).
	check func(t *testing.T, d decoded)
}

func py(code string, extra ...any) map[string]any { return args("python", code, extra...) }
func js(code string, extra ...any) map[string]any { return args("javascript", code, extra...) }
func args(lang, code string, extra ...any) map[string]any {
	m := map[string]any{"language": lang, "code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func exitNonZero(sub string) func(t *testing.T, d decoded) {
	return func(t *testing.T, d decoded) {
		t.Helper()
		if d.ExitCode == 0 {
			t.Errorf("exit_code 0, want non-zero; stdout %q stderr %q", d.Stdout, d.Stderr)
		}
		if !strings.Contains(d.Stderr, sub) {
			t.Errorf("stderr %q does not contain %q", d.Stderr, sub)
		}
	}
}

func stdoutIs(want string) func(t *testing.T, d decoded) {
	return func(t *testing.T, d decoded) {
		t.Helper()
		if d.ExitCode != 0 || d.Stdout != want {
			t.Errorf("exit %d stdout %q, want 0 and %q (stderr %q)", d.ExitCode, d.Stdout, want, d.Stderr)
		}
	}
}

func timedOut(t *testing.T, d decoded) {
	t.Helper()
	if !d.TimedOut || d.ExitCode != -1 {
		t.Errorf("timed_out %v exit %d, want true and -1", d.TimedOut, d.ExitCode)
	}
}

func memoryExceeded(t *testing.T, d decoded) {
	t.Helper()
	if !d.MemoryExceeded {
		t.Errorf("memory_exceeded false; exit %d stderr %q", d.ExitCode, d.Stderr)
	}
}

func hostileCases() []hostileCase {
	big := strings.Repeat("a", 1<<20)
	manyFiles := []map[string]any{}
	for i := 0; i < 21; i++ {
		manyFiles = append(manyFiles, map[string]any{"name": "f" + strings.Repeat("x", i), "content": "x"})
	}
	hugeFiles := []map[string]any{}
	for i := 0; i < 11; i++ {
		hugeFiles = append(hugeFiles, map[string]any{"name": "big" + string(rune('a'+i)), "content": big})
	}
	return []hostileCase{
		// Host files and the file system.
		{name: "python reads /etc/passwd", args: py("print(open('/etc/passwd').read())"), check: exitNonZero("FileNotFoundError")},
		{name: "python climbs out with ..", args: py("print(open('../../../../etc/passwd').read())"), check: exitNonZero("PermissionError")},
		{name: "python reads /proc/self/environ", args: py("print(open('/proc/self/environ','rb').read())"), check: exitNonZero("FileNotFoundError")},
		{name: "python lists / and sees only its own files", args: py("import os\nprint(sorted(os.listdir('/')))", "files", []map[string]any{{"name": "data.txt", "content": "hi"}}), check: stdoutIs("['data.txt', 'out']\n")},
		{name: "python writes outside its directory", args: py("import os\nfor p in ['/../escape.txt', '../escape.txt', '/tmp/escape.txt']:\n    try:\n        open(p, 'w').write('x')\n        print('wrote', p)\n    except OSError as e:\n        print(type(e).__name__)\nprint(sorted(os.listdir('/')))"), check: func(t *testing.T, d decoded) {
			// "/../escape.txt" is "/escape.txt" inside the directory; the
			// others fail. Nothing reaches the host (checked after the run).
			if d.ExitCode != 0 || !strings.Contains(d.Stdout, "PermissionError") {
				t.Errorf("exit %d stdout %q stderr %q", d.ExitCode, d.Stdout, d.Stderr)
			}
		}},
		{name: "python symlink to a host file", args: py("import os\nos.symlink('../../../../../etc/hostname', 'x')\nprint(open('x').read())"), check: exitNonZero("PermissionError")},
		{name: "python absolute symlink", args: py("import os\nos.symlink('/etc/hostname', 'x')"), check: exitNonZero("PermissionError")},
		{name: "python hard link", args: py("import os\nopen('a','w').write('x')\nos.link('a', 'b')"), check: exitNonZero("PermissionError")},
		{name: "python fills the disk", args: py("f = open('big', 'wb')\nfor i in range(200):\n    f.write(b'0' * (1 << 20))\n    f.flush()", "timeout_ms", 60000), check: exitNonZero("OSError")},
		{name: "python environment variables", args: py("import os\nprint(dict(os.environ), os.getenv('HOME'), os.getenv('PATH'))"), check: stdoutIs("{} None None\n")},
		{name: "python arguments", args: py("import sys\nprint(sys.argv)"), check: stdoutIs("['main.py']\n")},
		// Network.
		{name: "python opens a socket", args: py("import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 22))"), check: exitNonZero("OSError")},
		{name: "python urllib", args: py("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:1/')"), check: exitNonZero("Error")},
		// Processes and threads.
		{name: "python fork bomb", args: py("import os\nwhile True:\n    os.fork()"), check: exitNonZero("AttributeError")},
		{name: "python subprocess", args: py("import subprocess\nsubprocess.run(['/bin/sh', '-c', 'id'])"), check: exitNonZero("Error")},
		{name: "python thread bomb", args: py("import threading\nwhile True:\n    threading.Thread(target=lambda: None).start()"), check: exitNonZero("Error")},
		{name: "python kills pid 1", args: py("import os, signal\nos.kill(1, signal.SIGKILL)"), check: exitNonZero("Error")},
		// CPU and time.
		{name: "python infinite loop", args: py("while True:\n    pass", "timeout_ms", 1000), code: CodeTimeout, check: timedOut},
		{name: "python sleeps forever", args: py("import time\nprint('before', flush=True)\ntime.sleep(3600)", "timeout_ms", 1500), code: CodeTimeout, check: func(t *testing.T, d decoded) {
			timedOut(t, d)
			if d.Stdout != "before\n" {
				t.Errorf("partial stdout %q, want before", d.Stdout)
			}
		}},
		{name: "python waits on stdin", args: py("import sys\nprint(len(sys.stdin.read()))", "stdin", "abc"), check: stdoutIs("3\n")},
		{name: "python deep recursion", args: py("def f(n):\n    return f(n + 1)\nf(0)"), check: exitNonZero("RecursionError")},
		{name: "python deep recursion, limit raised", args: py("import sys\nsys.setrecursionlimit(10**5)\ndef f(n):\n    return f(n + 1)\nf(0)", "timeout_ms", 60000), check: exitNonZero("RecursionError")},
		{name: "python deeply nested data", args: py("l = []\nfor i in range(10**5):\n    l = [l]\nprint(repr(l)[:5])", "timeout_ms", 60000), check: exitNonZero("RecursionError")},
		// Memory.
		{name: "python allocates 1 GiB", args: py("x = bytearray(1 << 30)", "timeout_ms", 60000), code: CodeMemoryExceeded, check: memoryExceeded},
		{name: "python grows a list until memory ends", args: py("l = []\nwhile True:\n    l.append(bytearray(16 << 20))", "timeout_ms", 60000), code: CodeMemoryExceeded, check: memoryExceeded},
		// Output.
		{name: "python stdout flood", args: py("import sys\nfor i in range(2000):\n    sys.stdout.write('x' * 10000)\nprint('done', file=sys.stderr)"), check: func(t *testing.T, d decoded) {
			if !d.StdoutTruncated || len(d.Stdout) != 64<<10 || d.ExitCode != 0 || d.Stderr != "done\n" {
				t.Errorf("truncated %v len %d exit %d stderr %q", d.StdoutTruncated, len(d.Stdout), d.ExitCode, d.Stderr)
			}
		}},
		{name: "python endless flood", args: py("while True:\n    print('y' * 1000)", "timeout_ms", 1500), code: CodeTimeout, check: func(t *testing.T, d decoded) {
			timedOut(t, d)
			if !d.StdoutTruncated || len(d.Stdout) > 64<<10 {
				t.Errorf("truncated %v len %d", d.StdoutTruncated, len(d.Stdout))
			}
		}},
		{name: "python stderr flood", args: py("import sys\nsys.stderr.write('e' * 10_000_000)"), check: func(t *testing.T, d decoded) {
			if !d.StderrTruncated || len(d.Stderr) != 64<<10 {
				t.Errorf("truncated %v len %d", d.StderrTruncated, len(d.Stderr))
			}
		}},
		// Inputs the tool refuses.
		{name: "code too large", args: py(strings.Repeat("#", 100<<10+1)), code: CodeCodeTooLarge},
		{name: "too many files", args: py("pass", "files", manyFiles), code: CodeInvalidInput},
		{name: "huge files", args: py("pass", "files", hugeFiles), code: CodeInvalidInput},
		{name: "file name climbs out", args: py("pass", "files", []map[string]any{{"name": "../x", "content": "x"}}), code: CodeInvalidInput},
		{name: "absolute file name", args: py("pass", "files", []map[string]any{{"name": "/etc/x", "content": "x"}}), code: CodeInvalidInput},
		{name: "bad base64", args: py("pass", "files", []map[string]any{{"name": "x", "content": "!!", "encoding": "base64"}}), code: CodeInvalidInput},

		// JavaScript.
		{name: "javascript has no host objects", args: js("[typeof require, typeof process, typeof std, typeof os, typeof fetch, typeof XMLHttpRequest, typeof WebSocket].join()"), check: func(t *testing.T, d decoded) {
			if string(d.Result) != `"undefined,undefined,undefined,undefined,undefined,undefined,undefined"` {
				t.Errorf("result %s stderr %q", d.Result, d.Stderr)
			}
		}},
		{name: "javascript dynamic import", args: js("await import('os')"), check: exitNonZero("")},
		{name: "javascript infinite loop", args: js("for (;;) {}", "timeout_ms", 500), code: CodeTimeout, check: timedOut},
		{name: "javascript builtin that ignores interrupts", args: js("const a = new Array(2e6).fill('abcdefgh'); for (;;) JSON.stringify(a)", "timeout_ms", 1000), code: CodeTimeout, check: timedOut},
		{name: "javascript endless microtasks", args: js("for (;;) await Promise.resolve(1)", "timeout_ms", 500), code: CodeTimeout, check: timedOut},
		{name: "javascript endless interval", args: js("setInterval(() => {}, 1)", "timeout_ms", 500), code: CodeTimeout, check: timedOut},
		{name: "javascript deep recursion", args: js("function f(n) { return f(n + 1) + 1 } f(0)"), check: exitNonZero("RangeError")},
		{name: "javascript memory bomb", args: js("const a = []; for (;;) a.push(new ArrayBuffer(16 << 20))", "timeout_ms", 60000), code: CodeMemoryExceeded, check: memoryExceeded},
		{name: "javascript string doubling", args: js("let s = 'x'; for (;;) s += s"), check: func(t *testing.T, d decoded) {
			// QuickJS caps string length below the memory cap: a RangeError
			// or an out-of-memory, never a crash of the server.
			if d.ExitCode == 0 {
				t.Errorf("exit 0")
			}
		}},
		{name: "javascript output flood", args: js("for (let i = 0; i < 10000; i++) console.log('x'.repeat(1000)); 7"), check: func(t *testing.T, d decoded) {
			if !d.StdoutTruncated || len(d.Stdout) > 64<<10 || string(d.Result) != "7" {
				t.Errorf("truncated %v len %d result %s", d.StdoutTruncated, len(d.Stdout), d.Result)
			}
		}},
		{name: "javascript reads files only from its input", args: js("Object.keys(files).join() + ':' + files['a.txt']", "files", []map[string]any{{"name": "a.txt", "content": base64.StdEncoding.EncodeToString([]byte("hi")), "encoding": "base64"}}), check: func(t *testing.T, d decoded) {
			if string(d.Result) != `"a.txt:hi"` {
				t.Errorf("result %s stderr %q", d.Result, d.Stderr)
			}
		}},
	}
}

// TestHostileCodeBattery runs each hostile program through the pipeline and
// checks its code, then that the server still answers.
func TestHostileCodeBattery(t *testing.T) {
	if testing.Short() {
		t.Skip("a hostile-program sweep (memory bombs, floods, endless loops), tens of seconds; runs in make test")
	}
	ex, sb, runs := shared(t)
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			// A case that must end otherwise than in a timeout gets all
			// the time run_code allows: what it asserts is the outcome.
			if _, set := c.args["timeout_ms"]; !set && c.code != CodeTimeout {
				c.args["timeout_ms"] = noRush
			}
			out := call(t, ex, c.args)
			if c.code == "" && out.IsError {
				t.Fatalf("error %s: %s", out.Code, out.Message)
			}
			if c.code != "" && out.Code != c.code {
				t.Fatalf("code %q (%s), want %q", out.Code, out.Message, c.code)
			}
			if c.check != nil {
				c.check(t, decode(t, out))
			}
			alive := call(t, ex, js("1+2"))
			if alive.IsError || string(decode(t, alive).Result) != "3" {
				t.Fatalf("server stopped answering after %q: %s %s", c.name, alive.Code, alive.Structured)
			}
		})
	}
	// Nothing escaped into the folder holding the run directories, and every
	// run directory is gone once its run ended.
	assertNoStrayFiles(t, sb, runs)
	for _, p := range []string{"/escape.txt", "/tmp/escape.txt", filepath.Join(filepath.Dir(runs), "escape.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the host", p)
		}
	}
}
