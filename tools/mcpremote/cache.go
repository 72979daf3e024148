package mcpremote

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/ttlcache"
)

// Cache is a Store that keeps each account's list of servers in memory for
// a short time: every call of a remote tool looks its server up in the
// list (the gateway's RemoteTool), and with the cache that costs a map
// lookup instead of a query per call. Only ListMCPServers is answered
// from it; GetMCPServer, the snapshots and every write go to the store.
// The list holds what the store holds: Sealed stays sealed, nothing is
// opened here.
//
// Consistency (package ttlcache): a write through the cache forgets
// the account's entry before and after it runs, so a registration,
// update, toggle or delete is what the very next call sees on this
// replica; another replica sees it within the TTL.
type Cache struct {
	Store
	lists *ttlcache.Cache[[]Server]
}

// NewCache wraps s; ttl 0 means one second. now is the clock that ages
// the entries; nil means time.Now.
func NewCache(s Store, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{Store: s, lists: ttlcache.New[[]Server](ttlcache.Options{TTL: ttl, Now: now})}
}

var _ Store = (*Cache)(nil)

// ListMCPServers answers from the account's cached list while it is
// fresh, else reads the store. Each caller gets its own copies.
func (c *Cache) ListMCPServers(ctx context.Context, account string) ([]Server, error) {
	servers, err := c.lists.Get(ctx, account, func(ctx context.Context) ([]Server, error) { return c.Store.ListMCPServers(ctx, account) })
	if err != nil {
		return nil, err
	}
	out := make([]Server, len(servers))
	for i, s := range servers {
		out[i] = clone(s)
	}
	return out, nil
}

// Forget drops the account's cached list: its next list reads the store.
func (c *Cache) Forget(account string) { c.lists.Forget(account) }

// CreateMCPServer implements Store.
func (c *Cache) CreateMCPServer(ctx context.Context, s Server, limit int) error {
	c.Forget(s.AccountID)
	defer c.Forget(s.AccountID)
	return c.Store.CreateMCPServer(ctx, s, limit)
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

// UpdateMCPSecrets implements Store; the account's cached list, which
// holds Sealed, is forgotten.
func (c *Cache) UpdateMCPSecrets(ctx context.Context, account, id string, update func([]byte) ([]byte, error)) error {
	defer c.Forget(account)
	return c.Store.UpdateMCPSecrets(ctx, account, id, update)
}
