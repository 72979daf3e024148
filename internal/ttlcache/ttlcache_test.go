package ttlcache

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// fixture is a cache on a hand-driven clock whose store holds one value
// per key and counts the loads.
type fixture struct {
	c     *Cache[string]
	t     time.Time
	value map[string]string
	fail  error
	loads int
}

func newFixture(maxEntries int) *fixture {
	f := &fixture{t: time.Unix(1_700_000_000, 0), value: map[string]string{"a": "one", "b": "bee"}}
	f.c = New[string](Options{TTL: time.Second, MaxEntries: maxEntries, Now: func() time.Time { return f.t }})
	return f
}

func (f *fixture) advance(d time.Duration) { f.t = f.t.Add(d) }

func (f *fixture) get(k string) (string, error) {
	return f.c.Get(context.Background(), k, func(context.Context) (string, error) {
		f.loads++
		return f.value[k], f.fail
	})
}

func TestCache(t *testing.T) {
	tests := []struct {
		name  string
		run   func(f *fixture) (string, error)
		want  string
		loads int
	}{
		{"a fresh value is served from memory", func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.advance(999 * time.Millisecond)
			return f.get("a")
		}, "one", 1},
		{"an expired value is loaded on the call's path", func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.advance(time.Second)
			return f.get("a")
		}, "two", 2},
		{"Forget makes the next Get load", func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.c.Forget("a")
			return f.get("a")
		}, "two", 2},
		{"Clear makes the next Get load", func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.c.Clear()
			return f.get("a")
		}, "two", 2},
		{"keys are kept apart", func(f *fixture) (string, error) {
			_, _ = f.get("a")
			return f.get("b")
		}, "bee", 2},
		{"a load that a Forget overtook is not kept", func(f *fixture) (string, error) {
			_, _ = f.c.Get(context.Background(), "a", func(context.Context) (string, error) {
				f.loads++
				f.c.Forget("a") // a write lands while the read is in flight
				return "stale", nil
			})
			return f.get("a")
		}, "one", 2},
		{"a load that a Clear overtook is not kept", func(f *fixture) (string, error) {
			_, _ = f.c.Get(context.Background(), "a", func(context.Context) (string, error) {
				f.loads++
				f.c.Clear()
				return "stale", nil
			})
			return f.get("a")
		}, "one", 2},
		{"an expired value is not served when its load fails", func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.fail = errors.New("store down")
			f.advance(1100 * time.Millisecond)
			_, err := f.get("a")
			if err == nil {
				return "", errors.New("served a value older than the TTL")
			}
			f.fail = nil
			return f.get("a")
		}, "one", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(0)
			got, err := tt.run(f)
			if err != nil || got != tt.want || f.loads != tt.loads {
				t.Fatalf("got %q, %v after %d loads; want %q after %d", got, err, f.loads, tt.want, tt.loads)
			}
			if len(f.c.loads) != 0 || len(f.c.gen) != 0 {
				t.Fatalf("bookkeeping of loads left behind: %v %v", f.c.loads, f.c.gen)
			}
		})
	}
}

func TestCacheKeepsNoError(t *testing.T) {
	f := newFixture(0)
	boom := errors.New("store down")
	f.fail = boom
	if _, err := f.get("a"); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the load's", err)
	}
	f.fail = nil
	if v, err := f.get("a"); err != nil || v != "one" || f.loads != 2 {
		t.Fatalf("after a failed load: %q, %v, %d loads", v, err, f.loads)
	}
}

func TestCacheDropsTheLeastRecentlyUsedPastMaxEntries(t *testing.T) {
	f := newFixture(2)
	f.value["c"] = "sea"
	for _, k := range []string{"a", "b", "a", "c"} { // the second "a" is served from memory
		_, _ = f.get(k)
	}
	if n := f.c.values.Len(); n != 2 || f.loads != 3 {
		t.Fatalf("%d entries after %d loads, want 2 after 3", n, f.loads)
	}
	_, _ = f.get("a")
	_, _ = f.get("c")
	if f.loads != 3 {
		t.Fatalf("%d loads, want a and c still held", f.loads)
	}
	if v, err := f.get("b"); v != "bee" || err != nil || f.loads != 4 {
		t.Fatalf("b = %q, %v after %d loads, want it dropped and read again", v, err, f.loads)
	}
}

// getAsync runs a Get in a goroutine and hands back its outcome.
func getAsync(ctx context.Context, c *Cache[string], k string, load func(context.Context) (string, error)) <-chan string {
	out := make(chan string, 1)
	go func() {
		v, err := c.Get(ctx, k, load)
		if err != nil {
			v = "error: " + err.Error()
		}
		out <- v
	}()
	return out
}

func TestCacheSharesOneLoadBetweenConcurrentMisses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New[string](Options{TTL: time.Second})
		release := make(chan struct{})
		loads := 0
		load := func(context.Context) (string, error) {
			loads++
			<-release
			return "one", nil
		}
		var outs []<-chan string
		for range 5 {
			outs = append(outs, getAsync(t.Context(), c, "a", load))
		}
		synctest.Wait() // every Get waits for the one load
		close(release)
		for _, out := range outs {
			if v := <-out; v != "one" {
				t.Fatalf("a Get returned %q", v)
			}
		}
		if loads != 1 {
			t.Fatalf("%d loads for five concurrent misses, want 1", loads)
		}
	})
}

func TestCacheGetAfterForgetDoesNotShareAnOlderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New[string](Options{TTL: time.Second})
		release := make(chan struct{})
		old := getAsync(t.Context(), c, "a", func(context.Context) (string, error) {
			<-release
			return "stale", nil
		})
		synctest.Wait() // the old load is in flight
		c.Forget("a")   // a write lands
		fresh := getAsync(t.Context(), c, "a", func(context.Context) (string, error) { return "two", nil })
		synctest.Wait()
		select {
		case v := <-fresh:
			if v != "two" {
				t.Fatalf("the Get after the write returned %q", v)
			}
		default:
			t.Fatal("the Get after the write waits for the load that began before it")
		}
		close(release)
		if v := <-old; v != "stale" {
			t.Fatalf("the older Get returned %q", v)
		}
		v, err := c.Get(t.Context(), "a", func(context.Context) (string, error) { return "", errors.New("not cached") })
		if err != nil || v != "two" {
			t.Fatalf("after both loads: %q, %v; want the one after the write kept", v, err)
		}
	})
}

func TestCacheLoadsAgainWhenTheSharedLoadsCallerGoesAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New[string](Options{TTL: time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		first := getAsync(ctx, c, "a", func(ctx context.Context) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		synctest.Wait()
		second := getAsync(t.Context(), c, "a", func(context.Context) (string, error) { return "one", nil })
		synctest.Wait() // the second Get shares the first's load
		cancel()
		if v := <-first; v != "error: "+context.Canceled.Error() {
			t.Fatalf("the cancelled Get returned %q", v)
		}
		if v := <-second; v != "one" {
			t.Fatalf("the other Get returned %q, want its own load's value", v)
		}
	})
}
