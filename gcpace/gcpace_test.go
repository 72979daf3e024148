package gcpace

import (
	"context"
	"runtime/debug"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	const mib = 1 << 20
	o := Options{} // Quiet 100, Busy 400, MaxQuietCycles 2
	for _, tc := range []struct {
		name  string
		cur   int
		alloc float64 // bytes a second
		live  float64
		want  int
	}{
		{"idle stays quiet", 100, 0, 60 * mib, 100},
		{"calls one at a time stay quiet (35 MiB/s on 60 MiB live: 0.6 cycles/s)", 100, 35 * mib, 60 * mib, 100},
		{"load turns busy (1.6 GiB/s: 27 cycles/s)", 100, 1600 * mib, 60 * mib, 400},
		{"just over the limit turns busy", 100, 121 * mib, 60 * mib, 400},
		{"between the two keeps busy", 400, 90 * mib, 60 * mib, 400},
		{"between the two keeps quiet", 100, 90 * mib, 60 * mib, 100},
		{"under half the limit turns quiet again", 400, 59 * mib, 60 * mib, 100},
		{"a larger live heap needs more garbage to turn busy", 100, 121 * mib, 600 * mib, 100},
		{"no live heap read yet keeps the setting", 400, 10 * mib, 0, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := o.Next(tc.cur, tc.alloc, tc.live); got != tc.want {
				t.Errorf("Next(%d, %.0f MiB/s, %.0f MiB) = %d, want %d", tc.cur, tc.alloc/mib, tc.live/mib, got, tc.want)
			}
		})
	}
	custom := Options{Quiet: 50, Busy: 800, MaxQuietCycles: 10}
	// 400 MiB/s on 60 MiB live at GOGC=50 is 13.3 cycles a second.
	if got := custom.Next(50, 400*mib, 60*mib); got != 800 {
		t.Errorf("custom options over their limit: got %d, want 800", got)
	}
	if got := custom.Next(800, 120*mib, 60*mib); got != 50 { // 4 cycles, under 5
		t.Errorf("custom options under half their limit: got %d, want 50", got)
	}
}

// Run really changes the process's GOGC: busy under a burst of garbage,
// quiet once it stops, and back to the setting it found when it ends.
func TestRunFollowsTheAllocationRate(t *testing.T) {
	orig := debug.SetGCPercent(123)
	defer debug.SetGCPercent(orig)
	switched := make(chan int, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{Interval: 50 * time.Millisecond, MaxQuietCycles: 2,
			Changed: func(gogc int, _, _ float64) { switched <- gogc }})
	}()
	stop := make(chan struct{})
	go func() { // garbage far beyond 2 cycles a second of a test binary's small heap
		var sink []byte
		for {
			select {
			case <-stop:
				_ = sink
				return
			default:
				sink = make([]byte, 64<<10)
			}
		}
	}()
	wait := func(want int) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-switched:
				if got == want {
					return
				}
			case <-deadline:
				t.Fatalf("GOGC never became %d", want)
			}
		}
	}
	wait(400)
	close(stop)
	wait(100)
	cancel()
	<-done
	if got := debug.SetGCPercent(orig); got != 123 {
		t.Errorf("after Run, GOGC = %d, want the 123 it found", got)
	}
}
