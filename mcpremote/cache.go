package mcpremote

import (
	"context"
	"sync"
	"time"
)

// Cache is a Store that keeps each account's list of servers in memory for
// a short time: every call of a remote tool looks its server up in the
// list (the gateway's RemoteTool), and with the cache that costs a map
// lookup instead of a query per call. Only ListMCPServers is answered
// from it; GetMCPServer, the snapshots and every write go to the store.
// The list holds what the store holds: Sealed stays sealed, nothing is
// opened here.
//
// Consistency: a write through the cache forgets the account's entry
// before and after it runs, so a registration, update, toggle or delete
// is what the very next call sees on this replica. Another replica
// (PostgreSQL-backed servers share one database) sees it when its entry
// expires, within the TTL. A read that began before a write never stores
// what it read after the write (a per-account generation is checked), so
// a stale list cannot outlive the write that replaced it.
type Cache struct {
	Store
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	m   map[string]cachedServers
	gen map[string]uint64 // bumped by every write of the account
}

type cachedServers struct {
	servers []Server
	at      time.Time
}

// maxCachedAccounts bounds the cache; past it the cache starts again
// empty.
const maxCachedAccounts = 10_000

// NewCache wraps s; ttl 0 means one second.
func NewCache(s Store, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = time.Second
	}
	return &Cache{Store: s, ttl: ttl, now: time.Now, m: map[string]cachedServers{}, gen: map[string]uint64{}}
}

var _ Store = (*Cache)(nil)

// ListMCPServers answers from the account's cached list while it is
// fresh, else reads the store. Each caller gets its own copies.
func (c *Cache) ListMCPServers(ctx context.Context, account string) ([]Server, error) {
	c.mu.Lock()
	e, ok := c.m[account]
	gen := c.gen[account]
	c.mu.Unlock()
	if !ok || c.now().Sub(e.at) >= c.ttl {
		at := c.now()
		servers, err := c.Store.ListMCPServers(ctx, account)
		if err != nil {
			return nil, err
		}
		e = cachedServers{servers: servers, at: at}
		c.mu.Lock()
		if c.gen[account] == gen { // no write of the account since the read began
			if len(c.m) >= maxCachedAccounts {
				c.m = map[string]cachedServers{}
			}
			c.m[account] = e
		}
		c.mu.Unlock()
	}
	out := make([]Server, len(e.servers))
	for i, s := range e.servers {
		out[i] = clone(s)
	}
	return out, nil
}

// Forget drops the account's cached list: its next list reads the store.
func (c *Cache) Forget(account string) {
	c.mu.Lock()
	delete(c.m, account)
	c.gen[account]++ // one word per account that ever wrote: never reset
	c.mu.Unlock()
}

// CreateMCPServer implements Store.
func (c *Cache) CreateMCPServer(ctx context.Context, s Server) error {
	c.Forget(s.AccountID)
	defer c.Forget(s.AccountID)
	return c.Store.CreateMCPServer(ctx, s)
}

// UpdateMCPServer implements Store.
func (c *Cache) UpdateMCPServer(ctx context.Context, s Server) error {
	c.Forget(s.AccountID)
	defer c.Forget(s.AccountID)
	return c.Store.UpdateMCPServer(ctx, s)
}

// DeleteMCPServer implements Store.
func (c *Cache) DeleteMCPServer(ctx context.Context, account, id string) error {
	c.Forget(account)
	defer c.Forget(account)
	return c.Store.DeleteMCPServer(ctx, account, id)
}
