//go:build unix

package quickjs

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user+system) the test process has used: on a
// shared machine it measures the work better than wall time does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
