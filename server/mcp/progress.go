package mcp

import (
	"math"
	"sync"
)

// increasing passes on only the reports whose progress is above the last
// one passed on, one at a time and in order. MCP requires each progress
// notification of a request to increase; a tool's reports may repeat a
// value (rounded timings), and a call that waited for its approval has
// already reported 0 when the tool reports its own 0. NaN is no progress.
func increasing(send func(progress, total float64, message string)) func(progress, total float64, message string) {
	var mu sync.Mutex
	sent, last := false, 0.0
	return func(progress, total float64, message string) {
		mu.Lock()
		defer mu.Unlock()
		if math.IsNaN(progress) || (sent && progress <= last) {
			return
		}
		sent, last = true, progress
		send(progress, total, message)
	}
}
