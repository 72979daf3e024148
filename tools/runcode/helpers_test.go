package runcode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/sandbox"
)

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
