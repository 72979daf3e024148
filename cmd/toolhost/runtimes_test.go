package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRuntimes is the checkout's runtimes/ folder (make runtimes).
func repoRuntimes(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "runtimes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "quickjs.wasm")); err != nil {
		t.Fatalf("runtimes missing in %s: run `make runtimes` first (%v)", dir, err)
	}
	return dir
}

// The binary finds its runtimes however it is started: from a working
// directory that has nothing to do with the checkout, as Claude Desktop
// starts it, it looks beside itself (an install), beside its bin/ folder (the
// checkout), in the data folder and in the user cache. A runtime found in
// none is reported with every folder searched.
func TestRuntimesAreFoundWhereverTheBinaryIsStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary from many folders, seconds; runs in make test")
	}
	bin := buildBinary(t)
	src := repoRuntimes(t)
	elsewhere := t.TempDir()
	link := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"python.wasm", "quickjs.wasm"} {
			if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	install := func(t *testing.T, layout string) (string, []string) {
		root := t.TempDir()
		exe := filepath.Join(root, "bin", "toolhost")
		if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(root, "data")
		env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(root, "cache"), "TOOLHOST_RUNTIMES=")
		switch layout {
		case "beside the binary":
			link(filepath.Join(root, "bin", "runtimes"))
		case "the checkout":
			link(filepath.Join(root, "runtimes"))
		case "the data folder":
			link(filepath.Join(data, "runtimes"))
		case "the user cache":
			link(filepath.Join(root, "cache", "toolhost", "runtimes"))
		}
		return exe, append(env, "TOOLHOST_DATA="+data)
	}
	for _, layout := range []string{"beside the binary", "the checkout", "the data folder", "the user cache"} {
		t.Run(layout, func(t *testing.T) {
			exe, env := install(t, layout)
			cmd := exec.Command(exe, "call", "run_code", `{"language":"javascript","code":"6*7"}`)
			cmd.Dir, cmd.Env = elsewhere, env
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"result": 42`) {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
	t.Run("nowhere", func(t *testing.T) {
		exe, env := install(t, "nowhere")
		cmd := exec.Command(exe, "call", "run_code", `{"language":"javascript","code":"6*7"}`)
		cmd.Dir, cmd.Env = elsewhere, env
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != exitStartup {
			t.Fatalf("exit %d, want %d\n%s", cmd.ProcessState.ExitCode(), exitStartup, out)
		}
		root := filepath.Dir(filepath.Dir(exe))
		for _, dir := range []string{filepath.Join(root, "bin", "runtimes"), filepath.Join(root, "runtimes"), filepath.Join(root, "data", "runtimes"),
			filepath.Join(root, "cache", "toolhost", "runtimes"), filepath.Join(elsewhere, "runtimes")} {
			if !strings.Contains(string(out), dir) {
				t.Errorf("the error does not name %s:\n%s", dir, out)
			}
		}
	})
}
