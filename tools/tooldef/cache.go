package tooldef

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/ttlcache"
)

// Cache is a Store that keeps each account's definitions in memory for a
// short time, so a call of a custom tool (and MCP tools/list) costs a map
// lookup and a filter instead of a query on every call. Only unpaged
// lists are answered from it — the pipeline's lookups; the REST API's
// paged lists and GetDefinition always read the store.
//
// Consistency (package ttlcache): a write through the cache forgets
// the account's entry before and after it runs, so a create, update,
// toggle or delete is visible at once on this replica; another replica
// (PostgreSQL-backed servers share one database) sees it within the TTL.
type Cache struct {
	Store
	lists *ttlcache.Cache[[]Definition]
}

// NewCache wraps s; ttl 0 means one second. now is the clock that ages
// the entries; nil means time.Now.
func NewCache(s Store, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{Store: s, lists: ttlcache.New[[]Definition](ttlcache.Options{TTL: ttl, Now: now})}
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
	return c.lists.Get(ctx, account, func(ctx context.Context) ([]Definition, error) {
		defs, _, err := c.Store.ListDefinitions(ctx, Query{AccountID: account})
		return defs, err
	})
}

// Forget drops the account's cached definitions: its next list reads
// the store.
func (c *Cache) Forget(account string) { c.lists.Forget(account) }

func (c *Cache) CreateDefinition(ctx context.Context, d Definition, limit int) error {
	c.Forget(d.AccountID)
	defer c.Forget(d.AccountID)
	return c.Store.CreateDefinition(ctx, d, limit)
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
