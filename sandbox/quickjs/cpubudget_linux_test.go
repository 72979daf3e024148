//go:build linux

package quickjs

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cpuBudget is the context of a test's program: it ends once the calling
// goroutine has spent d of CPU time, which wazero's guest code and host
// calls run on. A loaded machine stretches the wall time of the same work
// many times over, not its CPU time; a program that loops for ever (or
// quadratically) still ends here. Ten times d of wall time ends it too,
// for a program that waits without spending CPU. The goroutine stays on
// its OS thread, whose CPU time is read, until cancel, which the same
// goroutine must call.
func cpuBudget(d time.Duration) (context.Context, context.CancelFunc) {
	runtime.LockOSThread()
	stat := fmt.Sprintf("/proc/self/task/%d/schedstat", syscall.Gettid())
	start, err := threadCPU(stat)
	if err != nil { // no /proc: the wall clock
		ctx, cancel := context.WithTimeout(context.Background(), d)
		return ctx, func() { cancel(); runtime.UnlockOSThread() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*d)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if used, err := threadCPU(stat); err == nil && used-start >= d {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel()
		wg.Wait()
		runtime.UnlockOSThread()
	}
}

// threadCPU reads the CPU time a thread has run, the first field of its
// schedstat.
func threadCPU(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("%s: empty", path)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err
}
