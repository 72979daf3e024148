package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Programs stopped wherever they happen to be (inside console.log, between
// prints, in a rejected promise's bookkeeping) by tiny timeouts, by their
// caller's cancel and by the sandbox closing under them must all end as
// results or errors. Each of those stops once unmapped an instance's memory
// under compiled code still running on it: a SIGSEGV that killed the
// process. So the runs happen in a child process, and the parent reports
// how it ended. Close returns only after every run has.
func TestRunsStoppedAnywhereEndCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of runs stopped at random points in a child process, seconds; runs in make test")
	}
	if !inChild(t) {
		return
	}
	s, err := New(context.Background(), Options{Config: Config{Concurrency: 4, QueueLength: 64}, RuntimesDir: runtimesDir(t), CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	ready(t, s)
	programs := []Request{
		{Language: JavaScript, Code: "for (;;) console.log('x'.repeat(100))"},
		{Language: JavaScript, Code: "for (let i = 0; ; i++) { console.error(i); Promise.reject(new Error('r' + i)) }"},
		{Language: JavaScript, Code: "let s = ''; for (;;) { s += 'y'; if (s.length % 64 == 0) console.log(s.length) }"},
		{Language: Python, Code: "while True:\n    print('z' * 100)"},
	}
	// Short runs: stopped by their timeout (1 to 40 ms, which a start
	// under load may already have used up) or by their caller.
	var short sync.WaitGroup
	for i := range 48 {
		short.Add(1)
		go func() {
			defer short.Done()
			req := programs[i%len(programs)]
			req.Timeout = time.Duration(1+i%40) * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%3 == 0 {
				// Cancel at some point of the run: where is not the test's
				// business, only that any point is safe.
				stop := time.AfterFunc(time.Duration(i%10)*time.Millisecond, cancel)
				defer stop.Stop()
			}
			if _, err := s.Run(ctx, req); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run %d: %v", i, err)
			}
		}()
	}
	short.Wait()
	// Long runs, still printing when the sandbox closes under them.
	var long sync.WaitGroup
	var returned atomic.Int32
	running := make(chan struct{}, 4) // a long run's first progress report
	for i := range 4 {
		long.Add(1)
		go func() {
			defer long.Done()
			req := programs[i%len(programs)]
			req.Timeout = time.Minute
			var once sync.Once
			req.Progress = func(time.Duration, string) { once.Do(func() { running <- struct{}{} }) }
			_, err := s.Run(context.Background(), req)
			returned.Add(1)
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("long run %d: %v", i, err)
			}
		}()
	}
	for range 4 {
		<-running
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n := returned.Load(); n != 4 {
		t.Errorf("Close returned while %d of 4 runs were still running", 4-n)
	}
	long.Wait()
}

// inChild reports whether the test runs in the child process it starts
// for itself: the failure it guards against is a fault no test survives,
// so the parent runs it there and reports how it ended.
func inChild(t *testing.T) bool {
	t.Helper()
	const env = "SANDBOX_TEST_CHILD"
	if os.Getenv(env) == t.Name() {
		return true
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		if i := bytes.Index(out, []byte("\ngoroutine ")); i > 0 {
			out = out[:i] // the fault and its signal, not every stack
		}
		t.Fatalf("the test failed in its child process (%v):\n%s", err, out)
	}
	return false
}
