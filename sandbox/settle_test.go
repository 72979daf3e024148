package sandbox

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestSettleWaitsForEveryHandOff: Settle returns at once with nothing
// handed off, waits while any hand-off (delayed or running) is pending,
// and returns once the last one ended; a cancelled ctx ends the wait.
func TestSettleWaitsForEveryHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Sandbox{}
		if err := s.Settle(context.Background()); err != nil {
			t.Fatalf("nothing handed off: %v", err)
		}
		release := make(chan struct{})
		var done atomic.Int64
		s.handOff(0, func() { <-release; done.Add(1) })
		s.handOff(time.Second, func() { done.Add(1) })
		settled := make(chan error, 1)
		go func() { settled <- s.Settle(context.Background()) }()
		ctx, cancel := context.WithCancel(context.Background())
		cancelled := make(chan error, 1)
		go func() { cancelled <- s.Settle(ctx) }()
		synctest.Wait()
		if len(settled) != 0 || len(cancelled) != 0 {
			t.Fatal("Settle returned while both hand-offs were pending")
		}
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("Settle with a cancelled ctx: %v", err)
		}
		close(release)
		synctest.Wait()
		if len(settled) != 0 {
			t.Fatal("Settle returned while the delayed hand-off was pending")
		}
		// Everything else is blocked: the bubble's clock moves on to the
		// delayed hand-off.
		if err := <-settled; err != nil || done.Load() != 2 {
			t.Fatalf("Settle = %v after %d of 2 hand-offs", err, done.Load())
		}
		s.wg.Wait()
	})
}
