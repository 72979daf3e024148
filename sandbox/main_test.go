package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The tests share one on-disk compilation cache, so only the first sandbox
// of the test binary pays for compiling the runtimes.
var (
	testCacheDir string
	sharedOnce   sync.Once
	shared       *Sandbox
	sharedErr    error
)

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
	if shared != nil {
		_ = shared.Close()
	}
	os.Exit(code)
}

// runtimesDir is the repository's runtimes folder; the tests need the real
// runtimes and say how to get them.
func runtimesDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "runtimes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{PythonFile, JavaScriptFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("runtime %s missing in %s: run `make runtimes` first (%v)", f, dir, err)
		}
	}
	return dir
}

// newTestSandbox builds a sandbox with cfg over the real runtimes and waits
// until both languages are ready.
func newTestSandbox(t testing.TB, cfg Config) *Sandbox {
	t.Helper()
	s, err := New(context.Background(), Options{Config: cfg, RuntimesDir: runtimesDir(t), CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ready(t, s)
	return s
}

func ready(t testing.TB, s *Sandbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, l := range []Language{Python, JavaScript} {
		if err := s.Ready(ctx, l); err != nil {
			t.Fatalf("%s not ready: %v", l, err)
		}
	}
}

// sharedSandbox is the default-config sandbox most tests use.
func sharedSandbox(t testing.TB) *Sandbox {
	t.Helper()
	sharedOnce.Do(func() {
		shared, sharedErr = New(context.Background(), Options{RuntimesDir: runtimesDir(t), CacheDir: testCacheDir})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	ready(t, shared)
	return shared
}
