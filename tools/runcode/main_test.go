package runcode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// The package's tests share one compilation cache directory, so only the
// first sandbox of the test binary compiles the runtimes.
var testCacheDir string

func TestMain(m *testing.M) {
	// One compilation cache for every test binary of the repository and
	// every run: wazero keys entries by module hash, its version and the
	// CPU, and writes them atomically, so sharing is safe, and only the
	// first run on a machine pays for compiling CPython.
	testCacheDir = filepath.Join(os.TempDir(), "toolhost-test-wasm-cache")
	if err := os.MkdirAll(testCacheDir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	closeShared()
	os.Exit(code)
}

// runtimesDir is the repository's runtimes folder.
func runtimesDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "runtimes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{sandbox.PythonFile, sandbox.JavaScriptFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("runtime %s missing in %s: run `make runtimes` first (%v)", f, dir, err)
		}
	}
	return dir
}

// newSandbox builds a sandbox over the real runtimes and waits until both
// languages are compiled and their pools are full.
func newSandbox(t testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(context.Background(), sandbox.Options{Config: cfg, RuntimesDir: runtimesDir(t), CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, l := range []sandbox.Language{sandbox.Python, sandbox.JavaScript} {
		if err := sb.Ready(ctx, l); err != nil {
			_ = sb.Close()
			t.Fatalf("%s not ready: %v", l, err)
		}
	}
	return sb
}

func newExecutor(t testing.TB, sb *sandbox.Sandbox) *tools.Executor {
	t.Helper()
	ex, err := tools.NewExecutor(tools.Options{}, New(sb))
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

var (
	sharedMu  sync.Mutex
	sharedSB  *sandbox.Sandbox
	sharedDir string
)

// shared is the default sandbox most tests use, with its run directories
// under a folder the tests can inspect.
func shared(t testing.TB) (*tools.Executor, *sandbox.Sandbox, string) {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedSB == nil {
		dir, err := os.MkdirTemp("", "runcode-test-runs-")
		if err != nil {
			t.Fatal(err)
		}
		sharedDir = dir
		// A smaller memory cap and work-dir quota than the defaults keep the
		// memory and disk bombs quick; the limits work the same way.
		sharedSB = newSandbox(t, sandbox.Config{TempDir: dir, MemoryLimitMiB: 128, WorkDirLimitMiB: 8})
	}
	return newExecutor(t, sharedSB), sharedSB, sharedDir
}

func closeShared() {
	if sharedSB != nil {
		_ = sharedSB.Close()
		_ = os.RemoveAll(sharedDir)
	}
}

// call runs run_code with args through the executor.
func call(t testing.TB, ex *tools.Executor, args any) *tools.Outcome {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ex.Execute(context.Background(), tools.Proposal{Tool: "run_code", Args: b, CallID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decoded is an Outcome's structured content: the Output on success, the
// error body (with the output fields for timeout and memory_exceeded) on
// failure.
type decoded struct {
	Output
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Output
	} `json:"error"`
}

func decode(t testing.TB, out *tools.Outcome) decoded {
	t.Helper()
	var d decoded
	if err := json.Unmarshal(out.Structured, &d); err != nil {
		t.Fatalf("structured content %s: %v", out.Structured, err)
	}
	if d.Error != nil {
		d.Output = d.Error.Output
	}
	return d
}
