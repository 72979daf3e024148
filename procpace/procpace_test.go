package procpace

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// observe's rules, on a recorded switch instead of the runtime's.
func TestObserve(t *testing.T) {
	const iv = 100 * time.Millisecond
	type step struct {
		cpu   float64
		hold  int  // holds taken before this interval (released after it when release)
		busy  bool // the setting after the interval
		relse bool
	}
	for _, tc := range []struct {
		name     string
		steps    []step
		switches int
	}{
		{name: "quiet for QuietFor turns quiet, not before",
			steps:    []step{{cpu: 0.1, busy: true}, {cpu: 0.1, busy: true}, {cpu: 0.1, busy: false}, {cpu: 0.1, busy: false}},
			switches: 1},
		{name: "an interval between the thresholds restarts the quiet count",
			steps:    []step{{cpu: 0.1, busy: true}, {cpu: 0.3, busy: true}, {cpu: 0.1, busy: true}, {cpu: 0.1, busy: true}, {cpu: 0.1, busy: false}},
			switches: 1},
		{name: "one busy interval turns busy at once",
			steps:    []step{{cpu: 0, busy: true}, {cpu: 0, busy: true}, {cpu: 0, busy: false}, {cpu: 0.6, busy: true}, {cpu: 0.6, busy: true}},
			switches: 2},
		{name: "between the thresholds keeps quiet",
			steps:    []step{{cpu: 0, busy: true}, {cpu: 0, busy: true}, {cpu: 0, busy: false}, {cpu: 0.4, busy: false}, {cpu: 0.5, busy: false}},
			switches: 1},
		{name: "a hold keeps busy however idle, and counts no quiet",
			steps:    []step{{cpu: 0, hold: 1, busy: true}, {cpu: 0, busy: true}, {cpu: 0, busy: true}, {cpu: 0, busy: true, relse: true}, {cpu: 0, busy: true}, {cpu: 0, busy: true}, {cpu: 0, busy: false}},
			switches: 1},
		{name: "hostile: negative readings (the clock stepped back) never switch to busy",
			steps:    []step{{cpu: -5, busy: true}, {cpu: -5, busy: true}, {cpu: -5, busy: false}},
			switches: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switches := 0
			p := New(Options{Interval: iv, QuietFor: 3 * iv})
			p.set = func(bool) { switches++ }
			var releases []func()
			for i, s := range tc.steps {
				for range s.hold {
					releases = append(releases, p.Hold())
				}
				p.observe(s.cpu, iv)
				if s.relse {
					for _, r := range releases {
						r()
						r() // twice: counts once
					}
					releases = nil
				}
				if p.busy != s.busy {
					t.Fatalf("step %d (cpu %v): busy %v, want %v", i, s.cpu, p.busy, s.busy)
				}
			}
			if switches != tc.switches {
				t.Fatalf("%d switches, want %d", switches, tc.switches)
			}
		})
	}
}

// Run really moves the process's GOMAXPROCS: to 1 when idle, back at once
// on Hold, up again when the process spins, and back to the default when
// it ends.
func TestRunFollowsTheLoad(t *testing.T) {
	def := runtime.GOMAXPROCS(0)
	changed := make(chan int, 16)
	p := New(Options{Interval: 10 * time.Millisecond, QuietFor: 50 * time.Millisecond,
		Changed: func(procs int, _ float64) { changed <- procs }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() {
		cancel()
		<-done
		if got := runtime.GOMAXPROCS(0); got != def {
			t.Errorf("after Run: GOMAXPROCS %d, want %d", got, def)
		}
	}()
	if def < 2 {
		// One CPU: nothing to pace; Run must leave the setting alone.
		cancel()
		<-done
		if len(changed) != 0 {
			t.Fatalf("one CPU: the pacer switched %d times", len(changed))
		}
		return
	}
	want := func(procs int) {
		t.Helper()
		select {
		case got := <-changed:
			if got != procs {
				t.Fatalf("switched to %d, want %d", got, procs)
			}
			if now := runtime.GOMAXPROCS(0); now != procs {
				t.Fatalf("GOMAXPROCS %d after a switch to %d", now, procs)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no switch to %d", procs)
		}
	}
	want(1)
	release := p.Hold()
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("held: GOMAXPROCS %d, want %d at once", got, def)
	}
	want(def)
	release()
	want(1)
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for x := 0; !stop.Load(); x++ {
			_ = x
		}
	}()
	want(def)
	stop.Store(true)
	<-spun
}

// idleFor counts idle time only while quiet and under IdleCPU: a busy
// pacer, or one interval over IdleCPU, starts the count again.
func TestIdleFor(t *testing.T) {
	const iv = 100 * time.Millisecond
	p := New(Options{})
	if got := p.idleFor(time.Second, 0, iv); got != 0 {
		t.Fatalf("busy: idle %v, want 0", got)
	}
	p.busy = false
	for _, tc := range []struct {
		idle time.Duration
		cpu  float64
		want time.Duration
	}{
		{idle: 0, cpu: 0, want: iv},
		{idle: 3 * time.Second, cpu: 0.005, want: 3*time.Second + iv},
		{idle: 3 * time.Second, cpu: 0.01, want: 0},
		{idle: 3 * time.Second, cpu: 0.2, want: 0},
	} {
		if got := p.idleFor(tc.idle, tc.cpu, iv); got != tc.want {
			t.Errorf("idleFor(%v, %v): %v, want %v", tc.idle, tc.cpu, got, tc.want)
		}
	}
}
