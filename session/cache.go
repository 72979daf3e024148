package session

import (
	"context"
	"sync"
	"time"
)

// Cache is a Store that remembers what TouchSession returned for a short
// time, so the pipeline's permission check costs a map lookup instead of a
// query on every call. Writes through the cache take effect at once in
// this process; another replica's writes take effect within the TTL.
type Cache struct {
	Store
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[[2]string]cached
}

type cached struct {
	s  Session
	at time.Time
}

// maxCached bounds the cache; past it the cache starts again empty.
const maxCached = 100_000

// NewCache wraps s; ttl 0 means one second.
func NewCache(s Store, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = time.Second
	}
	return &Cache{Store: s, ttl: ttl, now: time.Now, m: map[[2]string]cached{}}
}

// TouchSession answers from the cache while the entry is fresh.
func (c *Cache) TouchSession(ctx context.Context, account, id string, now time.Time) (Session, error) {
	k := [2]string{account, id}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.s, nil
	}
	s, err := c.Store.TouchSession(ctx, account, id, now)
	if err != nil {
		return Session{}, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCached {
		c.m = map[[2]string]cached{}
	}
	c.m[k] = cached{s: s, at: c.now()}
	c.mu.Unlock()
	return s, nil
}

func (c *Cache) forget(account, id string) {
	c.mu.Lock()
	delete(c.m, [2]string{account, id})
	c.mu.Unlock()
}

func (c *Cache) CreateSession(ctx context.Context, s Session) error {
	defer c.forget(s.AccountID, s.ID)
	return c.Store.CreateSession(ctx, s)
}

func (c *Cache) DeleteSession(ctx context.Context, account, id string) error {
	defer c.forget(account, id)
	return c.Store.DeleteSession(ctx, account, id)
}

func (c *Cache) SetSessionPermissions(ctx context.Context, account, id string, p Permissions, now time.Time) error {
	defer c.forget(account, id)
	return c.Store.SetSessionPermissions(ctx, account, id, p, now)
}

func (c *Cache) SetSessionCharacter(ctx context.Context, account, id string, ch *Character, now time.Time) error {
	defer c.forget(account, id)
	return c.Store.SetSessionCharacter(ctx, account, id, ch, now)
}
