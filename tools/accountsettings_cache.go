package tools

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/ttlcache"
)

// SettingsCache is AccountSettings that keeps each account's settings in
// memory for a short time: every call of a deferrable builtin without a
// delivery of its own reads the account's default deliveries, and every
// enqueued or started job its limits, so a call costs a map lookup
// instead of a query.
//
// Consistency (package ttlcache): a write through the cache forgets the
// account's entry before and after it runs, so a change is seen at once
// on this replica; another replica (PostgreSQL-backed servers share one
// database) sees it within the TTL.
type SettingsCache struct {
	AccountSettings
	deliveries *ttlcache.Cache[map[string]Delivery]
	limits     *ttlcache.Cache[JobLimits]
}

// NewSettingsCache wraps s; ttl 0 means one second. now is the clock that
// ages the entries; nil means time.Now.
func NewSettingsCache(s AccountSettings, ttl time.Duration, now func() time.Time) *SettingsCache {
	o := ttlcache.Options{TTL: ttl, Now: now}
	return &SettingsCache{AccountSettings: s, deliveries: ttlcache.New[map[string]Delivery](o), limits: ttlcache.New[JobLimits](o)}
}

var _ AccountSettings = (*SettingsCache)(nil)

// BuiltinDeliveries answers from the account's cached deliveries while
// they are fresh. The map is shared: callers only read it.
func (c *SettingsCache) BuiltinDeliveries(ctx context.Context, account string) (map[string]Delivery, error) {
	return c.deliveries.Get(ctx, account, func(ctx context.Context) (map[string]Delivery, error) {
		return c.AccountSettings.BuiltinDeliveries(ctx, account)
	})
}

// SetBuiltinDelivery writes through, forgetting the account's deliveries.
func (c *SettingsCache) SetBuiltinDelivery(ctx context.Context, account, tool string, d Delivery, at time.Time) error {
	c.deliveries.Forget(account)
	defer c.deliveries.Forget(account)
	return c.AccountSettings.SetBuiltinDelivery(ctx, account, tool, d, at)
}

// JobLimits answers from the account's cached limits while they are fresh.
func (c *SettingsCache) JobLimits(ctx context.Context, account string) (JobLimits, error) {
	return c.limits.Get(ctx, account, func(ctx context.Context) (JobLimits, error) {
		return c.AccountSettings.JobLimits(ctx, account)
	})
}

// SetJobLimits writes through, forgetting the account's limits.
func (c *SettingsCache) SetJobLimits(ctx context.Context, account string, l JobLimits) error {
	c.limits.Forget(account)
	defer c.limits.Forget(account)
	return c.AccountSettings.SetJobLimits(ctx, account, l)
}
