// Package ttlcache keeps what the stores look up on every call — a
// session, an account's tool definitions, remote MCP servers or job settings, an API
// key — in memory for a short time, so a call costs a map lookup instead
// of a query.
//
// Bound: a value is served only while younger than the TTL, counted on
// the injected clock from when the load that read it began, so another
// replica's write (or another process's, on a shared SQLite file) is seen
// within the TTL. An older value is read again on the path of the call
// that asks for it; nothing is read in the background, and the cache
// starts no goroutine.
//
// Consistency on this replica: a writer calls Forget (or Clear) before and
// after its write, so the very next read sees it. A load that began before
// a Forget never stores what it read (a per-key generation is checked), so
// a stale value cannot outlive the write that replaced it, and a Get after
// a Forget never waits for such a load.
//
// Concurrent misses of one key share one load (singleflight). A failed
// load is not kept. Entries are bounded: past MaxEntries the least
// recently used goes (hashicorp/golang-lru). Its "expirable" variant is
// not used: it ages entries on the wall clock, which tests cannot move,
// and with a TTL it starts a clean-up goroutine that nothing stops.
package ttlcache

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Options configures a Cache. The zero value is a one-second cache of
// 100 000 entries on the wall clock.
type Options struct {
	// TTL is how long a value is served; 0 means one second.
	TTL time.Duration
	// MaxEntries bounds the cache: past it the least recently used
	// value goes. 0 means 100 000.
	MaxEntries int
	// Now is the clock that ages values; nil means time.Now.
	Now func() time.Time
}

// Cache keeps one V per string key.
type Cache[V any] struct {
	ttl    time.Duration
	now    func() time.Time
	values *lru.Cache[string, entry[V]]
	flight singleflight.Group

	// mu orders stores against Forget and Clear. loads counts the loads
	// in flight per key and gen is bumped by a Forget of a key while one
	// is: both are dropped when the key's last load ends, so they hold
	// only keys being read right now.
	mu    sync.Mutex
	loads map[string]int
	gen   map[string]uint64
	epoch uint64 // bumped by every Clear
}

type entry[V any] struct {
	v  V
	at time.Time // when the load that read v began
}

// New returns an empty cache.
func New[V any](opts Options) *Cache[V] {
	if opts.TTL <= 0 {
		opts.TTL = time.Second
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	values, err := lru.New[string, entry[V]](opts.MaxEntries)
	if err != nil {
		panic(err) // only for a size ≤ 0, ruled out above
	}
	return &Cache[V]{ttl: opts.TTL, now: opts.Now, values: values, loads: map[string]int{}, gen: map[string]uint64{}}
}

// version is what a load must still find for its value to be stored.
type version struct{ gen, epoch uint64 }

// result is what one load hands every caller that shared it.
type result[V any] struct {
	v V
	// abandoned: the load failed after the caller that ran it went
	// away, so its error says nothing to the others.
	abandoned bool
}

// Get returns k's value while it is fresh, else what load reads, which it
// keeps unless k was forgotten meanwhile. Concurrent misses of k share
// the load of the first, run with its context. The value is shared:
// callers copy what they hand out or change.
func (c *Cache[V]) Get(ctx context.Context, k string, load func(context.Context) (V, error)) (V, error) {
	if e, ok := c.values.Get(k); ok && c.now().Sub(e.at) < c.ttl {
		return e.v, nil
	}
	for {
		r, err, _ := c.flight.Do(k, func() (any, error) { return c.load(ctx, k, load) })
		res, _ := r.(result[V]) // nil when the load ran runtime.Goexit
		// Another caller's cancellation is not this caller's failure:
		// it loads again, now on its own context.
		if err != nil && res.abandoned && ctx.Err() == nil {
			continue
		}
		return res.v, err
	}
}

// load reads k and keeps what it read unless k was forgotten meanwhile.
func (c *Cache[V]) load(ctx context.Context, k string, load func(context.Context) (V, error)) (result[V], error) {
	c.mu.Lock()
	c.loads[k]++
	ver := version{c.gen[k], c.epoch}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.loads[k]--; c.loads[k] <= 0 {
			delete(c.loads, k)
			delete(c.gen, k)
		}
		c.mu.Unlock()
	}()
	at := c.now()
	v, err := load(ctx)
	if err != nil {
		return result[V]{v: v, abandoned: ctx.Err() != nil}, err
	}
	c.mu.Lock()
	if c.gen[k] == ver.gen && c.epoch == ver.epoch {
		c.values.Add(k, entry[V]{v: v, at: at})
	}
	c.mu.Unlock()
	return result[V]{v: v}, nil
}

// Forget drops k's value: its next Get loads it again, without waiting
// for a load that began before, and such a load is not kept.
func (c *Cache[V]) Forget(k string) {
	c.mu.Lock()
	c.values.Remove(k)
	if c.loads[k] > 0 {
		c.gen[k]++
		c.flight.Forget(k)
	}
	c.mu.Unlock()
}

// Clear drops every value: every next Get loads, and no load that began
// before is kept or waited for.
func (c *Cache[V]) Clear() {
	c.mu.Lock()
	c.values.Purge()
	c.epoch++
	for k := range c.loads {
		c.flight.Forget(k)
	}
	c.mu.Unlock()
}
