package sandbox

import (
	"context"
	"testing"
	"time"
)

// TestTakeRefillsWhenTheRunEnds: taking an instance does not start its
// replacement while the run is going (on two cores that slowed the run);
// the run's end does, and so does the delay when a run lasts.
func TestTakeRefillsWhenTheRunEnds(t *testing.T) {
	p := newPool("test", 4, 1, func(context.Context) (int, error) { return 1, nil }, func(int) {})
	p.items <- 1
	p.refillDelay = time.Hour

	it, warm, refill := p.take()
	if it != 1 || !warm {
		t.Fatalf("take = %d, %v; want the waiting instance", it, warm)
	}
	if len(p.kick) != 0 {
		t.Fatal("the refill was called for while the run goes on")
	}
	refill()
	if len(p.kick) != 1 {
		t.Fatal("the run's end did not call for the refill")
	}
	refill() // a second call (a deferred one after an early one) is harmless
	<-p.kick

	_, warm, refill = p.take()
	if warm {
		t.Fatal("an empty pool handed out an instance")
	}
	defer refill()
	if p.misses.Load() != 1 || p.takes.Load() != 2 {
		t.Errorf("misses %d, takes %d; want 1, 2", p.misses.Load(), p.takes.Load())
	}

	// A run that lasts: the refill starts after the delay without it.
	p.refillDelay = time.Millisecond
	_, _, refill = p.take()
	defer refill()
	select {
	case <-p.kick:
	case <-time.After(time.Minute):
		t.Fatal("a long run's replacement was never called for")
	}
}
