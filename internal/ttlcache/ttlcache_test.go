package ttlcache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// clock is a hand-driven clock and timer queue: Advance fires, in order,
// every timer due by the new time.
type clock struct {
	t      time.Time
	timers []*timer
}

type timer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *clock) now() time.Time { return c.t }

func (c *clock) after(d time.Duration, f func()) func() bool {
	tm := &timer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool { was := !tm.stopped; tm.stopped = true; return was }
}

func (c *clock) Advance(d time.Duration) {
	end := c.t.Add(d)
	for {
		var next *timer
		for _, tm := range c.timers {
			if !tm.stopped && !tm.at.After(end) && (next == nil || tm.at.Before(next.at)) {
				next = tm
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		c.t = next.at
		next.f()
	}
	c.t = end
}

func (c *clock) pending() int {
	n := 0
	for _, tm := range c.timers {
		if !tm.stopped {
			n++
		}
	}
	return n
}

// fixture is a cache on a hand-driven clock whose store holds one value
// per key and counts the loads of each kind.
type fixture struct {
	c       *Cache[string, string]
	clock   *clock
	value   map[string]string
	fail    error
	loads   int // on a Get's own path
	refresh int // in the background
}

func newFixture(keepWarm bool) *fixture {
	f := &fixture{clock: &clock{t: time.Unix(1_700_000_000, 0)}, value: map[string]string{"a": "one", "b": "bee"}}
	opts := Options[string, string]{TTL: time.Second}
	if keepWarm {
		opts.Refresh = func(_ context.Context, k string) (string, error) {
			f.refresh++
			return f.value[k], f.fail
		}
	}
	f.c = New(opts)
	f.c.now, f.c.after = f.clock.now, f.clock.after
	return f
}

func (f *fixture) get(k string) (string, error) {
	return f.c.Get(context.Background(), k, func(context.Context) (string, error) {
		f.loads++
		return f.value[k], f.fail
	})
}

func TestCache(t *testing.T) {
	tests := []struct {
		name          string
		keepWarm      bool
		run           func(f *fixture) (string, error)
		want          string
		loads, reload int
	}{
		{"a fresh value is served from memory", false, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.clock.Advance(999 * time.Millisecond)
			return f.get("a")
		}, "one", 1, 0},
		{"an expired value is loaded on the call's path", false, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.clock.Advance(time.Second)
			return f.get("a")
		}, "two", 2, 0},
		{"Forget makes the next Get load", false, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.c.Forget("a")
			return f.get("a")
		}, "two", 2, 0},
		{"Clear makes the next Get load", false, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			f.c.Clear()
			return f.get("a")
		}, "two", 2, 0},
		{"keys are kept apart", false, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			return f.get("b")
		}, "bee", 2, 0},
		{"a load that a Forget overtook is not kept", false, func(f *fixture) (string, error) {
			_, _ = f.c.Get(context.Background(), "a", func(context.Context) (string, error) {
				f.loads++
				f.c.Forget("a") // a write lands while the read is in flight
				return "stale", nil
			})
			return f.get("a")
		}, "one", 2, 0},
		{"a load that a Clear overtook is not kept", false, func(f *fixture) (string, error) {
			_, _ = f.c.Get(context.Background(), "a", func(context.Context) (string, error) {
				f.loads++
				f.c.Clear()
				return "stale", nil
			})
			return f.get("a")
		}, "one", 2, 0},
		{"a value in use is refreshed before it expires, off the call's path", true, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.value["a"] = "two"
			for range 5 { // calls 1.1 s apart
				f.clock.Advance(1100 * time.Millisecond)
				if _, err := f.get("a"); err != nil {
					return "", err
				}
			}
			return f.get("a")
		}, "two", 1, 7},
		{"the refreshed value is never older than the TTL", true, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.clock.Advance(800 * time.Millisecond) // refreshed at 0.75 s
			f.value["a"] = "two"                    // written elsewhere after that
			f.clock.Advance(600 * time.Millisecond)
			if v, _ := f.get("a"); v != "one" {
				return "", errors.New("the write was seen before any read after it")
			}
			f.clock.Advance(200 * time.Millisecond) // refreshed at 1.5 s: within the TTL of the write
			return f.get("a")
		}, "two", 1, 2},
		{"a quiet key stops being refreshed and goes", true, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.clock.Advance(time.Minute)
			if n := f.clock.pending(); n != 0 {
				return "", errors.New("a timer is still pending")
			}
			return f.get("a")
		}, "one", 2, 13},
		{"a failed refresh leaves the value to expire", true, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.fail = errors.New("store down")
			f.clock.Advance(1100 * time.Millisecond)
			_, err := f.get("a")
			if err == nil {
				return "", errors.New("served a value older than the TTL")
			}
			f.fail = nil
			return f.get("a")
		}, "one", 3, 1},
		{"a refresh that a Forget overtook is not kept", true, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.c.opts.Refresh = func(context.Context, string) (string, error) {
				f.refresh++
				f.c.Forget("a")
				return "stale", nil
			}
			f.clock.Advance(800 * time.Millisecond)
			return f.get("a")
		}, "one", 2, 1},
		{"Close stops the refreshes", true, func(f *fixture) (string, error) {
			_, _ = f.get("a")
			f.c.Close()
			f.clock.Advance(1100 * time.Millisecond)
			return f.get("a")
		}, "one", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(tt.keepWarm)
			got, err := tt.run(f)
			if err != nil || got != tt.want || f.loads != tt.loads || f.refresh != tt.reload {
				t.Fatalf("got %q, %v after %d loads and %d refreshes; want %q after %d and %d",
					got, err, f.loads, f.refresh, tt.want, tt.loads, tt.reload)
			}
			if len(f.c.loads) != 0 || len(f.c.gen) != 0 {
				t.Fatalf("bookkeeping of loads left behind: %v %v", f.c.loads, f.c.gen)
			}
		})
	}
}

func TestCacheKeepsNoError(t *testing.T) {
	f := newFixture(false)
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

func TestCacheStartsAgainPastMaxEntries(t *testing.T) {
	f := newFixture(true)
	f.c.opts.MaxEntries = 2
	for _, k := range []string{"a", "b", "c"} {
		f.value[k] = k
		_, _ = f.get(k)
	}
	if len(f.c.m) != 1 || f.clock.pending() != 1 {
		t.Fatalf("%d entries and %d timers, want 1 and 1", len(f.c.m), f.clock.pending())
	}
}
