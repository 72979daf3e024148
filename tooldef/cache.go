package tooldef

import (
	"context"
	"sync"
	"time"
)

// Cache is a Store that keeps each account's definitions in memory for a
// short time, so a call of a custom tool (and MCP tools/list) costs a map
// lookup and a filter instead of a query on every call. Only unpaged
// lists are answered from it — the pipeline's lookups; the REST API's
// paged lists and GetDefinition always read the store.
//
// Consistency: a write through the cache forgets the account's entry when
// it returns, so a create, update, toggle or delete is visible at once on
// this replica. Another replica (PostgreSQL-backed servers share one
// database) sees it when its entry expires, within the TTL. A read that
// began before a write never stores what it read after the write (a
// per-account generation is checked), so a stale list cannot outlive the
// write that replaced it.
type Cache struct {
	Store
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	m   map[string]cachedDefs
	gen map[string]uint64 // bumped by every write of the account
}

type cachedDefs struct {
	defs []Definition
	at   time.Time
}

// maxCachedAccounts bounds the cache; past it the cache starts again
// empty.
const maxCachedAccounts = 10_000

// NewCache wraps s; ttl 0 means one second.
func NewCache(s Store, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = time.Second
	}
	return &Cache{Store: s, ttl: ttl, now: time.Now, m: map[string]cachedDefs{}, gen: map[string]uint64{}}
}

var _ Store = (*Cache)(nil)

// ListDefinitions answers an unpaged query from the account's cached
// definitions while they are fresh; a paged one reads the store.
func (c *Cache) ListDefinitions(ctx context.Context, q Query) ([]Definition, int, error) {
	if q.Limit > 0 || q.Offset > 0 {
		return c.Store.ListDefinitions(ctx, q)
	}
	all, err := c.account(ctx, q.AccountID)
	if err != nil {
		return nil, 0, err
	}
	var out []Definition
	for _, d := range all {
		if (q.Name != "" && d.Name != q.Name) || (q.Source != "" && d.Source != q.Source) ||
			(q.HasSourceID && d.SourceID != q.SourceID) || (q.Enabled != nil && d.Enabled != *q.Enabled) {
			continue
		}
		out = append(out, clone(d))
	}
	out, total := page(out, q)
	return out, total, nil
}

// account returns every definition of the account, from the cache when
// fresh.
func (c *Cache) account(ctx context.Context, account string) ([]Definition, error) {
	c.mu.Lock()
	e, ok := c.m[account]
	gen := c.gen[account]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.defs, nil
	}
	at := c.now()
	defs, _, err := c.Store.ListDefinitions(ctx, Query{AccountID: account})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen[account] == gen { // no write of the account since the read began
		if len(c.m) >= maxCachedAccounts {
			c.m = map[string]cachedDefs{}
		}
		c.m[account] = cachedDefs{defs: defs, at: at}
	}
	c.mu.Unlock()
	return defs, nil
}

// Forget drops the account's cached definitions: its next list reads
// the store.
func (c *Cache) Forget(account string) {
	c.mu.Lock()
	delete(c.m, account)
	c.gen[account]++ // one word per account that ever wrote: never reset
	c.mu.Unlock()
}

func (c *Cache) CreateDefinition(ctx context.Context, d Definition) error {
	c.Forget(d.AccountID)
	defer c.Forget(d.AccountID)
	return c.Store.CreateDefinition(ctx, d)
}

func (c *Cache) UpdateDefinition(ctx context.Context, d Definition) error {
	c.Forget(d.AccountID)
	defer c.Forget(d.AccountID)
	return c.Store.UpdateDefinition(ctx, d)
}

func (c *Cache) DeleteDefinition(ctx context.Context, account, id string) error {
	c.Forget(account)
	defer c.Forget(account)
	return c.Store.DeleteDefinition(ctx, account, id)
}
