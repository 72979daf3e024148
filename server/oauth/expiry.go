package oauth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"toolhost/grants"
)

// Default lifetimes of registered clients. Registration is open to
// anyone (within its rate limit), so a client nobody uses must not stay
// forever: one never issued a token goes after a day (an authorization
// takes minutes), one whose every token has expired or been revoked after
// 90 days unused.
const (
	DefaultUnauthorizedClientTTL = 24 * time.Hour
	DefaultIdleClientTTL         = 90 * 24 * time.Hour
	// MinClientTTL is the shortest either may be: well above the 10
	// minutes an authorization request lives, so a client in the middle of
	// an authorization was used within them and is never expired under it.
	MinClientTTL = time.Hour
	// clientPurgeEvery is how often at most the expired clients are
	// purged.
	clientPurgeEvery = time.Hour
	// clientPurgeTimeout bounds one purge.
	clientPurgeTimeout = time.Minute
)

// clientPurge deletes the expired clients in the background. The table
// grows only by registrations and metadata documents, so those start a
// purge, at most once per clientPurgeEvery (the first one after start at
// once): an idle server does nothing, and no timer runs.
type clientPurge struct {
	st                       grants.Store
	unauthorizedTTL, idleTTL time.Duration
	now                      func() time.Time
	logger                   *slog.Logger

	mu      sync.Mutex
	last    time.Time
	running bool
	closed  bool
	cancel  context.CancelFunc
	ctx     context.Context
	wg      sync.WaitGroup
}

func newClientPurge(st grants.Store, unauthorizedTTL, idleTTL time.Duration, now func() time.Time, logger *slog.Logger) *clientPurge {
	ctx, cancel := context.WithCancel(context.Background())
	return &clientPurge{st: st, unauthorizedTTL: unauthorizedTTL, idleTTL: idleTTL, now: now, logger: logger, ctx: ctx, cancel: cancel}
}

// kick starts a purge unless one runs or ran within clientPurgeEvery.
func (c *clientPurge) kick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.closed || c.running || (!c.last.IsZero() && now.Sub(c.last) < clientPurgeEvery) {
		return
	}
	c.last, c.running = now, true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.run(now)
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
}

func (c *clientPurge) run(now time.Time) {
	ctx, cancel := context.WithTimeout(c.ctx, clientPurgeTimeout)
	defer cancel()
	n, err := c.st.PurgeClients(ctx, grants.ClientExpiry{Now: now,
		UnauthorizedBefore: now.Add(-c.unauthorizedTTL), IdleBefore: now.Add(-c.idleTTL)})
	if err != nil {
		c.logger.Warn("purge expired oauth clients", "deleted", n, "err", err)
		return
	}
	if n > 0 {
		c.logger.Info("purged expired oauth clients", "deleted", n)
	}
}

// close stops a purge under way and waits for it; none starts after.
func (c *clientPurge) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// wait waits for the purge under way, if any (tests).
func (c *clientPurge) wait() { c.wg.Wait() }
