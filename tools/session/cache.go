package session

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/ttlcache"
)

// Cache is a Store that remembers what TouchSession returned for a short
// time, so the pipeline's permission check costs a map lookup instead of a
// query on every call. Writes through the cache take effect at once in
// this process; another replica's writes take effect within the TTL. A
// session in use is read again in the background before it expires
// (ttlcache's keep-warm, with GetSession: a refresh never creates a
// session that another replica deleted), so a call never waits for it.
type Cache struct {
	Store
	sessions *ttlcache.Cache[[2]string, Session]
}

// NewCache wraps s; ttl 0 means one second.
func NewCache(s Store, ttl time.Duration) *Cache {
	return &Cache{Store: s, sessions: ttlcache.New(ttlcache.Options[[2]string, Session]{
		TTL: ttl,
		Refresh: func(ctx context.Context, k [2]string) (Session, error) {
			return s.GetSession(ctx, k[0], k[1])
		},
	})}
}

// Close stops the background reads.
func (c *Cache) Close() { c.sessions.Close() }

// TouchSession answers from the cache while the entry is fresh.
func (c *Cache) TouchSession(ctx context.Context, account, id string, now time.Time) (Session, error) {
	return c.sessions.Get(ctx, [2]string{account, id}, func(ctx context.Context) (Session, error) {
		return c.Store.TouchSession(ctx, account, id, now)
	})
}

// forget drops the session: the next call reads the store, and a read
// that began before is not kept.
func (c *Cache) forget(account, id string) { c.sessions.Forget([2]string{account, id}) }

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
