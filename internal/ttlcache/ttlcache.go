// Package ttlcache keeps what the stores look up on every call — a
// session, an account's tool definitions or remote MCP servers, an API
// key — in memory for a short time, so a call costs a map lookup instead
// of a query.
//
// Bound: a value is served only while younger than the TTL, counted from
// when the load that read it began, so another replica's write (or
// another process's, on a shared SQLite file) is seen within the TTL.
//
// Consistency on this replica: a writer calls Forget (or Clear) before and
// after its write, so the very next read sees it. A load that began before
// a Forget never stores what it read (a per-key generation is checked), so
// a stale value cannot outlive the write that replaced it.
//
// Keep-warm: with Options.Refresh, a value in use is read again in the
// background before it expires — three quarters of the TTL after its last
// load — for as long as it was used in the last KeepWarm (10 s by
// default). A user whose calls come seconds apart (a model's turn between
// two tool calls) then never waits for a reload, and the bound still
// holds; once the key goes quiet the reloads stop, so an idle server
// sleeps. The price is at most one background load per key in use per
// three quarters of the TTL.
package ttlcache

import (
	"context"
	"sync"
	"time"
)

// Options configures a Cache. The zero value is a one-second cache
// without keep-warm.
type Options[K comparable, V any] struct {
	// TTL is how long a value is served; 0 means one second.
	TTL time.Duration
	// Refresh reads a key's value again in the background; nil turns
	// keep-warm off. An error leaves the value to expire, so the next
	// Get loads it on its own path and sees the error itself.
	Refresh func(context.Context, K) (V, error)
	// KeepWarm is how long after its last use a value is refreshed;
	// 0 means ten seconds.
	KeepWarm time.Duration
	// MaxEntries bounds the cache: past it the cache starts again empty.
	// 0 means 100 000.
	MaxEntries int
	// Now is the clock that ages values; nil means time.Now.
	Now func() time.Time
}

// Cache keeps one V per K.
type Cache[K comparable, V any] struct {
	opts Options[K, V]
	// now and after are the clock and timer; tests replace them.
	now   func() time.Time
	after func(time.Duration, func()) func() bool

	mu sync.Mutex
	m  map[K]*entry[V]
	// loads counts the loads in flight per key and gen is bumped by a
	// Forget of a key while one is: both are dropped when the key's last
	// load ends, so they hold only keys being read right now.
	loads  map[K]int
	gen    map[K]uint64
	epoch  uint64 // bumped by every Clear
	closed bool
}

type entry[V any] struct {
	v    V
	at   time.Time // when the load that read v began
	used time.Time // the last Get that returned v (or loaded it)
	stop func() bool
}

// New returns an empty cache.
func New[K comparable, V any](opts Options[K, V]) *Cache[K, V] {
	if opts.TTL <= 0 {
		opts.TTL = time.Second
	}
	if opts.KeepWarm <= 0 {
		opts.KeepWarm = 10 * time.Second
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache[K, V]{
		opts: opts, now: opts.Now,
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		m:     map[K]*entry[V]{}, loads: map[K]int{}, gen: map[K]uint64{},
	}
}

// version is what a load must still find for its value to be stored.
type version struct{ gen, epoch uint64 }

// Get returns k's value while it is fresh, else what load reads, which it
// keeps unless k was forgotten meanwhile. The value is shared: callers
// copy what they hand out or change.
func (c *Cache[K, V]) Get(ctx context.Context, k K, load func(context.Context) (V, error)) (V, error) {
	now := c.now()
	c.mu.Lock()
	if e, ok := c.m[k]; ok && now.Sub(e.at) < c.opts.TTL {
		e.used = now
		v := e.v
		c.mu.Unlock()
		return v, nil
	}
	ver := c.begin(k)
	c.mu.Unlock()
	v, err := load(ctx)
	c.mu.Lock()
	if err == nil {
		c.store(k, ver, v, now, now)
	}
	c.end(k)
	c.mu.Unlock()
	return v, err
}

// begin registers a load of k and returns what it must still find for its
// value to be stored. The caller holds c.mu.
func (c *Cache[K, V]) begin(k K) version {
	c.loads[k]++
	return version{c.gen[k], c.epoch}
}

// end deregisters a load of k. The caller holds c.mu.
func (c *Cache[K, V]) end(k K) {
	if c.loads[k]--; c.loads[k] <= 0 {
		delete(c.loads, k)
		delete(c.gen, k)
	}
}

// store keeps v, read by a load that began at at, unless k was forgotten
// since ver; it schedules the value's refresh while it is in use. The
// caller holds c.mu.
func (c *Cache[K, V]) store(k K, ver version, v V, at, used time.Time) {
	if c.gen[k] != ver.gen || c.epoch != ver.epoch {
		return
	}
	if old, ok := c.m[k]; ok && old.stop != nil {
		old.stop()
	}
	if len(c.m) >= c.opts.MaxEntries {
		c.dropAll()
	}
	e := &entry[V]{v: v, at: at, used: used}
	c.m[k] = e
	if c.opts.Refresh != nil && !c.closed && c.now().Sub(used) < c.opts.KeepWarm {
		// Three quarters of the TTL after the load began, but never
		// sooner than a quarter from now: a store slower than that is
		// not read again in a loop.
		d := max(at.Add(c.opts.TTL*3/4).Sub(c.now()), c.opts.TTL/4)
		e.stop = c.after(d, func() { c.refresh(k, e) })
	}
}

// refresh reads k again for e, if e is still k's value and in use.
func (c *Cache[K, V]) refresh(k K, e *entry[V]) {
	now := c.now()
	c.mu.Lock()
	if c.closed || c.m[k] != e {
		c.mu.Unlock()
		return
	}
	if now.Sub(e.used) >= c.opts.KeepWarm {
		delete(c.m, k) // quiet: let it go rather than keep it, stale
		c.mu.Unlock()
		return
	}
	ver := c.begin(k)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.TTL)
	v, err := c.opts.Refresh(ctx, k)
	cancel()
	c.mu.Lock()
	// An error leaves e to expire by itself: the next Get loads on its
	// own path and sees the error itself.
	if err == nil && c.m[k] == e {
		c.store(k, ver, v, now, e.used)
	}
	c.end(k)
	c.mu.Unlock()
}

// Forget drops k's value: its next Get loads it again, and a load that
// began before is not kept.
func (c *Cache[K, V]) Forget(k K) {
	c.mu.Lock()
	if e, ok := c.m[k]; ok && e.stop != nil {
		e.stop()
	}
	delete(c.m, k)
	if c.loads[k] > 0 {
		c.gen[k]++
	}
	c.mu.Unlock()
}

// Clear drops every value: every next Get loads, and no load that began
// before is kept.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	c.dropAll()
	c.epoch++
	c.mu.Unlock()
}

// Close stops every refresh; Get still works, without keep-warm.
func (c *Cache[K, V]) Close() {
	c.mu.Lock()
	c.dropAll()
	c.closed = true
	c.mu.Unlock()
}

func (c *Cache[K, V]) dropAll() {
	for _, e := range c.m {
		if e.stop != nil {
			e.stop()
		}
	}
	c.m = map[K]*entry[V]{}
}
