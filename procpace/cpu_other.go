//go:build !unix

package procpace

import "time"

// cpuTime cannot be read here: the pacer stays off.
func cpuTime() (time.Duration, bool) { return 0, false }
