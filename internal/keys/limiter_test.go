package keys

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// limiters returns the in-memory limiter and, when TOOLHOST_TEST_REDIS is
// set (CI sets it), a Redis limiter under a unique prefix.
func limiters(t *testing.T, now func() time.Time) map[string]Limiter {
	t.Helper()
	out := map[string]Limiter{"memory": NewMemoryLimiter(now)}
	if u := os.Getenv("TOOLHOST_TEST_REDIS"); u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		prefix := fmt.Sprintf("toolhost-test:%d:", time.Now().UnixNano())
		t.Cleanup(func() {
			ctx := context.Background()
			iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
			for iter.Next(ctx) {
				rdb.Del(ctx, iter.Val())
			}
			rdb.Close()
		})
		out["redis"] = NewRedisLimiter(rdb, prefix)
	}
	return out
}

func TestTakeCallAdmitsExactlyTheLimit(t *testing.T) {
	for name, l := range limiters(t, nil) {
		t.Run(name, func(t *testing.T) {
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					admitted, retry, err := l.TakeCall(context.Background(), "k1", 60)
					if err != nil {
						t.Error(err)
						return
					}
					if admitted {
						ok.Add(1)
						return
					}
					if retry <= 0 || retry > Window {
						t.Errorf("retry after %v outside (0, 1m]", retry)
					}
					refused.Add(1)
				}()
			}
			wg.Wait()
			if ok.Load() != 60 || refused.Load() != 140 {
				t.Fatalf("admitted %d, refused %d; want 60 and 140", ok.Load(), refused.Load())
			}
			// Another key has its own window.
			if admitted, _, _ := l.TakeCall(context.Background(), "k2", 60); !admitted {
				t.Fatal("k2 refused")
			}
		})
	}
}

func TestSlidingWindowReopensAfterAMinute(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	m := NewMemoryLimiter(func() time.Time { return now })
	ctx := context.Background()
	for i := range 3 {
		if ok, _, _ := m.TakeCall(ctx, "k", 3); !ok {
			t.Fatalf("call %d refused", i)
		}
		now = now.Add(10 * time.Second)
	}
	ok, retry, _ := m.TakeCall(ctx, "k", 3)
	if ok || retry != 30*time.Second {
		t.Fatalf("4th call ok=%v retry=%v; want refused, retry 30s", ok, retry)
	}
	now = now.Add(30 * time.Second)
	if ok, _, _ := m.TakeCall(ctx, "k", 3); !ok {
		t.Fatal("refused after the oldest call left the window")
	}
}

func TestAcquireNeverExceedsTheLimit(t *testing.T) {
	const limit, calls = 4, 50
	for name, l := range limiters(t, nil) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			// inFlight counts the calls between an admitted Acquire and their
			// Release; releases counts Releases, so a refused call waits for
			// the next one instead of retrying on a timer.
			var mu sync.Mutex
			cond := sync.NewCond(&mu)
			var inFlight, peak, admitted, failed, releases int
			var wg sync.WaitGroup
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lease := fmt.Sprint("lease-", i)
					for {
						mu.Lock()
						seen := releases
						mu.Unlock()
						ok, err := l.Acquire(ctx, "k", lease, limit, time.Minute)
						if err != nil {
							t.Error(err)
							mu.Lock()
							failed++
							cond.Broadcast()
							mu.Unlock()
							return
						}
						if ok {
							break
						}
						// Refused: the limit was full, so a Release is coming.
						mu.Lock()
						for releases == seen {
							cond.Wait()
						}
						mu.Unlock()
					}
					mu.Lock()
					inFlight++
					peak = max(peak, inFlight)
					cond.Broadcast()
					// Hold the slot until the limit is full (or no other call
					// is left to fill it), so calls keep asking while it is full.
					for inFlight < limit && admitted+failed+inFlight < calls {
						cond.Wait()
					}
					inFlight--
					admitted++
					cond.Broadcast()
					mu.Unlock()
					if err := l.Release(ctx, "k", lease); err != nil {
						t.Error(err)
					}
					mu.Lock()
					releases++
					cond.Broadcast()
					mu.Unlock()
				}()
			}
			wg.Wait()
			if peak > limit || admitted != calls {
				t.Fatalf("peak %d, admitted %d; want ≤ %d and %d", peak, admitted, limit, calls)
			}
		})
	}
}

func TestLeasesExpireSoACrashedHolderFreesItsSlot(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	m := NewMemoryLimiter(func() time.Time { return now })
	ctx := context.Background()
	if ok, _ := m.Acquire(ctx, "k", "a", 1, time.Second); !ok {
		t.Fatal("first acquire refused")
	}
	if ok, _ := m.Acquire(ctx, "k", "b", 1, time.Second); ok {
		t.Fatal("second acquire admitted over the limit")
	}
	now = now.Add(2 * time.Second) // "a" never released: its holder died
	if ok, _ := m.Acquire(ctx, "k", "b", 1, time.Second); !ok {
		t.Fatal("expired lease still held the slot")
	}
}

// Renew extends a live slot only: not one that ran out, nor one released,
// nor another lease's; on both limiters.
func TestRenewExtendsOnlyALiveSlot(t *testing.T) {
	ctx := context.Background()
	for name, l := range limiters(t, nil) {
		t.Run(name, func(t *testing.T) {
			if ok, err := l.Acquire(ctx, "k-renew", "a", 1, time.Minute); err != nil || !ok {
				t.Fatalf("acquire: %v %v", ok, err)
			}
			if ok, err := l.Renew(ctx, "k-renew", "a", time.Minute); err != nil || !ok {
				t.Fatalf("renew a live slot: %v %v", ok, err)
			}
			if ok, _ := l.Renew(ctx, "k-renew", "b", time.Minute); ok {
				t.Fatal("renewed a lease that holds no slot")
			}
			if ok, _ := l.Acquire(ctx, "k-renew", "b", 1, time.Minute); ok {
				t.Fatal("a renewal freed the slot")
			}
			if err := l.Release(ctx, "k-renew", "a"); err != nil {
				t.Fatal(err)
			}
			if ok, _ := l.Renew(ctx, "k-renew", "a", time.Minute); ok {
				t.Fatal("renewed a released slot")
			}
		})
	}
}
