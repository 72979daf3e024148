package runcode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
)

// TestDeadlineDuringTheRuntimeLoadIsRuntimeLoading: a call whose deadline
// ends while its runtime is still compiling is told so, with its own code
// and a retry hint, not that it waited for a free slot: no run held one.
// The executor's deadline has passed before the tool runs, and a fresh
// sandbox cannot have read and compiled CPython by then (that takes at
// least a read of the 26 MB file), so the load is always under way.
func TestDeadlineDuringTheRuntimeLoadIsRuntimeLoading(t *testing.T) {
	sb, err := sandbox.New(context.Background(), sandbox.Options{
		Config: sandbox.Config{PythonPool: -1}, RuntimesDir: runtimesDir(t), CacheDir: testCacheDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ex, err := tools.NewExecutor(tools.Options{DefaultTimeout: time.Nanosecond}, New(sb))
	if err != nil {
		t.Fatal(err)
	}
	out := call(t, ex, args("python", "print(1)"))
	if !out.IsError || out.Code != CodeRuntimeLoading || out.RetryAfter != runtimeLoadingRetry ||
		!strings.Contains(out.Message, "python runtime was still loading") || strings.Contains(out.Message, "free slot") {
		t.Errorf("call whose deadline ended during the load: %s %q (retry after %s), want %s saying the runtime was still loading",
			out.Code, out.Message, out.RetryAfter, CodeRuntimeLoading)
	}
}

// TestRuntimeLoadingNamesTheWait: the message says how long the call
// waited for the runtime, and a call cancelled by its caller during the
// load stays a cancellation.
func TestRuntimeLoadingNamesTheWait(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	err := runError(expired, &sandbox.LoadingError{Language: sandbox.Python, Waited: 60 * time.Second, Err: context.DeadlineExceeded})
	te, ok := err.(*tools.Error)
	if !ok || te.Code != CodeRuntimeLoading || !strings.Contains(te.Message, "waited 60 s") {
		t.Errorf("deadline during a 60 s load: %v, want %s naming the 60 s wait", err, CodeRuntimeLoading)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err = runError(cancelled, &sandbox.LoadingError{Language: sandbox.Python, Waited: time.Second, Err: context.Canceled})
	if err != context.Canceled {
		t.Errorf("cancelled during the load: %v, want the context's own error", err)
	}
}
