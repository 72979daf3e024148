// Package accountcache keeps one list per account in memory for a short
// time: the stores whose rows every call looks up (tool definitions,
// remote MCP servers) put it in front of their reads, so a call costs a
// map lookup instead of a query.
//
// Consistency: a writer calls Forget before and after its write, so the
// very next read on this replica sees it; another replica sees it when its
// entry expires, within the TTL. A read that began before a write never
// stores what it read (a per-account generation is checked), so a stale
// list cannot outlive the write that replaced it.
package accountcache

import (
	"context"
	"sync"
	"time"
)

// maxAccounts bounds the cache; past it the cache starts again empty.
const maxAccounts = 10_000

// Lists caches one []T per account.
type Lists[T any] struct {
	ttl time.Duration

	mu  sync.Mutex
	m   map[string]entry[T]
	gen map[string]uint64 // bumped by every Forget of the account
}

type entry[T any] struct {
	list []T
	at   time.Time
}

// New returns an empty cache; ttl 0 means one second.
func New[T any](ttl time.Duration) *Lists[T] {
	if ttl <= 0 {
		ttl = time.Second
	}
	return &Lists[T]{ttl: ttl, m: map[string]entry[T]{}, gen: map[string]uint64{}}
}

// Get returns the account's list while it is fresh, else what load reads,
// which it keeps unless the account was written meanwhile. The list is
// shared: callers copy what they hand out.
func (c *Lists[T]) Get(ctx context.Context, account string, load func(context.Context) ([]T, error)) ([]T, error) {
	c.mu.Lock()
	e, ok := c.m[account]
	gen := c.gen[account]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.list, nil
	}
	at := time.Now()
	list, err := load(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen[account] == gen { // no write of the account since the read began
		if len(c.m) >= maxAccounts {
			c.m = map[string]entry[T]{}
		}
		c.m[account] = entry[T]{list: list, at: at}
	}
	c.mu.Unlock()
	return list, nil
}

// Forget drops the account's list: its next Get loads it again, and a
// load that began before is not kept.
func (c *Lists[T]) Forget(account string) {
	c.mu.Lock()
	delete(c.m, account)
	c.gen[account]++ // one word per account that ever wrote: never reset
	c.mu.Unlock()
}
