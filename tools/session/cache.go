package session

import (
	"context"
	"strconv"
	"time"

	"github.com/toolhost/toolhost/internal/ttlcache"
)

// Cache is a Store that remembers what TouchSession returned for a short
// time, so the pipeline's permission check costs a map lookup instead of a
// query on every call. Writes through the cache take effect at once in
// this process; another replica's writes take effect within the TTL: the
// first call after it reads the store again (package ttlcache).
type Cache struct {
	Store
	sessions *ttlcache.Cache[Session]
}

// NewCache wraps s; ttl 0 means one second. now is the clock that ages
// the entries; nil means time.Now.
func NewCache(s Store, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{Store: s, sessions: ttlcache.New[Session](ttlcache.Options{TTL: ttl, Now: now})}
}

// TouchSession answers from the cache while the entry is fresh.
func (c *Cache) TouchSession(ctx context.Context, account, id string, now time.Time) (Session, error) {
	return c.sessions.Get(ctx, cacheKey(account, id), func(ctx context.Context) (Session, error) {
		return c.Store.TouchSession(ctx, account, id, now)
	})
}

// cacheKey names a session in the cache; the account's length keeps
// every (account, id) pair apart, whatever either holds.
func cacheKey(account, id string) string {
	return strconv.Itoa(len(account)) + ":" + account + id
}

// forget drops the session: the next call reads the store, and a read
// that began before is not kept.
func (c *Cache) forget(account, id string) { c.sessions.Forget(cacheKey(account, id)) }

func (c *Cache) CreateSession(ctx context.Context, s Session) error {
	c.forget(s.AccountID, s.ID)
	defer c.forget(s.AccountID, s.ID)
	return c.Store.CreateSession(ctx, s)
}

func (c *Cache) DeleteSession(ctx context.Context, account, id string) error {
	c.forget(account, id)
	defer c.forget(account, id)
	return c.Store.DeleteSession(ctx, account, id)
}

func (c *Cache) SetSessionPermissions(ctx context.Context, account, id string, p Permissions, now time.Time) error {
	c.forget(account, id)
	defer c.forget(account, id)
	return c.Store.SetSessionPermissions(ctx, account, id, p, now)
}

func (c *Cache) SetSessionCharacter(ctx context.Context, account, id string, ch *Character, now time.Time) error {
	c.forget(account, id)
	defer c.forget(account, id)
	return c.Store.SetSessionCharacter(ctx, account, id, ch, now)
}
