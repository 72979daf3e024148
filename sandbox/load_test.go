package sandbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunWaitsForTheRuntimeLoadWithinItsOwnDeadline: a run that arrives
// while its runtime compiles (minutes from an empty cache on a loaded
// machine) waits for the load, hearing about it, for as long as its own
// context allows. When the context ends first, the error says the runtime
// was still loading, not that the run queued. The load is held on a
// channel and the clock is synctest's, so minutes of loading pass at once.
func TestRunWaitsForTheRuntimeLoadWithinItsOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(t.Context(), Options{
			Config:      Config{Concurrency: 1, PythonPool: -1, JavaScriptPool: -1},
			RuntimesDir: runtimesDir(t), CacheDir: testCacheDir,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		compiled := make(chan struct{})
		compile := s.js.file.compile
		s.js.file.compile = func(ctx context.Context, wasm []byte) error {
			select {
			case <-compiled:
			case <-ctx.Done():
				return ctx.Err()
			}
			return compile(ctx, wasm)
		}
		var mu sync.Mutex
		var heard []string
		req := Request{Language: JavaScript, Code: "6 * 7", Progress: func(_ time.Duration, msg string) {
			mu.Lock()
			heard = append(heard, msg)
			mu.Unlock()
		}}

		// The call's own minute ends while the runtime still loads.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		_, err = s.Run(ctx, req)
		cancel()
		var le *LoadingError
		if !errors.As(err, &le) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("run whose deadline ended during the load: %v, want a LoadingError wrapping the deadline", err)
		}
		if le.Language != JavaScript || le.Waited != time.Minute || !strings.Contains(err.Error(), "still loading") {
			t.Errorf("loading error %+v (%q), want javascript, a minute waited, \"still loading\"", le, err)
		}
		mu.Lock()
		if len(heard) < 100 {
			t.Errorf("a minute of loading gave %d progress notifications, want about two a second", len(heard))
		}
		for _, m := range heard {
			if !strings.HasPrefix(m, "loading the javascript runtime") {
				t.Errorf("progress during the load: %q", m)
			}
		}
		heard = nil
		mu.Unlock()
		if st := s.Status()[JavaScript].State; st != "loading" {
			t.Errorf("after the call gave up, the runtime is %q, want still loading", st)
		}

		// The load goes on: a call with a longer deadline waits for it past
		// the minute that used to end the first call, then runs at once.
		ctx, cancel = context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		type result struct {
			res *Result
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := s.Run(ctx, req)
			done <- result{res, err}
		}()
		time.Sleep(90 * time.Second) // the load takes a minute and a half
		synctest.Wait()
		select {
		case r := <-done:
			t.Fatalf("the run returned before its runtime was loaded: %+v %v", r.res, r.err)
		default:
		}
		close(compiled)
		r := <-done
		if r.err != nil || r.res.ExitCode != 0 || string(r.res.Value) != "42" {
			t.Fatalf("run after a 90 s load: %+v %v, want 42", r.res, r.err)
		}
	})
}
