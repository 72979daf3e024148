//go:build !linux

package quickjs

import (
	"context"
	"time"
)

// cpuBudget is the context of a test's program; without a thread's CPU
// time to read, it is d of wall time.
func cpuBudget(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
