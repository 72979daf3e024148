package docs

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"
)

// TestCodeShape keeps the code-shape targets of docs/architecture.md
// ("Code shape"): no non-test Go file over 600 lines and no function over
// 100 lines anywhere in the module. It runs bench/codeshape -check over the
// whole tree, the same command a developer runs by hand, so the limits and
// the way lines are counted live in one place.
func TestCodeShape(t *testing.T) {
	cmd := exec.Command("go", "run", "./bench/codeshape", "-check", "-files", "600", "-funcs", "100", "-top", "0", "-top-funcs", "0", ".")
	cmd.Dir = ".."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Fatalf("a file or a function is over its limit; split it into named parts (see docs/architecture.md, Code shape):\n%s", out.String())
	default:
		t.Fatalf("go run ./bench/codeshape: %v\n%s", err, out.String())
	}
}
