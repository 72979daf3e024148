package runcode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/sandbox"
)

// noRush is the timeout_ms of a run whose test checks what it returns or
// how it fails, not how fast: the most run_code allows, so that a loaded
// machine (CPython and QuickJS get a fraction of a core) does not turn the
// answer into a timeout. The tests of the time limit set their own.
var noRush = int(sandbox.MaxTimeout / time.Millisecond)

// assertNoStrayFiles checks that dir holds nothing but the run directories
// of pooled instances (which are empty until a run uses them).
func assertNoStrayFiles(t *testing.T, sb *sandbox.Sandbox, dir string) {
	t.Helper()
	// Discards happen in the background right after a result: wait for
	// every finished run's.
	if err := sb.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	var stray []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && !strings.Contains(rel, string(filepath.Separator)) && strings.HasPrefix(rel, "run-") {
			return nil
		}
		// A pre-started instance's directory holds its empty out/
		// (anything inside it is still reported).
		if d.IsDir() && filepath.Base(rel) == "out" && strings.Count(rel, string(filepath.Separator)) == 1 && strings.HasPrefix(rel, "run-") {
			return nil
		}
		stray = append(stray, rel)
		return nil
	})
	if len(stray) != 0 {
		t.Fatalf("files left behind under %s: %v", dir, stray)
	}
}
