package oauth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
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
	// purgeEvery is how often at most the expired clients, tokens and
	// requests are purged.
	purgeEvery = time.Hour
	// purgeTimeout bounds one purge.
	purgeTimeout = time.Minute
	// AccessTokensPerGrant is how many unexpired access tokens a grant
	// keeps through a purge, its newest: a client uses the one from its
	// last refresh, so only one refreshing in a loop loses any, and the
	// rows such a loop leaves are bounded.
	AccessTokensPerGrant = 10
	// requestGrace is how long after it expired an authorization request
	// is kept (a used code is recognised as replayed until the request
	// expires; the margin covers replicas' clocks).
	requestGrace = time.Hour
)

// storePurge deletes the expired clients, the tokens that can never be
// used again and the expired authorization requests, in the background.
// Those tables grow only by registrations, metadata documents,
// authorization requests and token issuance, so those start a purge, at
// most once per purgeEvery (the first one after start at once): an idle
// server does nothing, and no timer runs.
type storePurge struct {
	st                       identity.GrantStore
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

func newStorePurge(st identity.GrantStore, unauthorizedTTL, idleTTL time.Duration, now func() time.Time, logger *slog.Logger) *storePurge {
	ctx, cancel := context.WithCancel(context.Background())
	return &storePurge{st: st, unauthorizedTTL: unauthorizedTTL, idleTTL: idleTTL, now: now, logger: logger, ctx: ctx, cancel: cancel}
}

// kick starts a purge unless one runs or ran within purgeEvery.
func (c *storePurge) kick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.closed || c.running || (!c.last.IsZero() && now.Sub(c.last) < purgeEvery) {
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

// run purges clients first (their tokens and requests go with them),
// then the dead tokens and requests of the others; a failure of one step
// does not keep the next from running.
func (c *storePurge) run(now time.Time) {
	ctx, cancel := context.WithTimeout(c.ctx, purgeTimeout)
	defer cancel()
	steps := []struct {
		what string
		do   func() (int, error)
	}{
		{"expired oauth clients", func() (int, error) {
			return c.st.PurgeClients(ctx, identity.ClientExpiry{Now: now,
				UnauthorizedBefore: now.Add(-c.unauthorizedTTL), IdleBefore: now.Add(-c.idleTTL)})
		}},
		{"dead oauth tokens", func() (int, error) {
			return c.st.PurgeTokens(ctx, identity.TokenExpiry{Now: now, AccessPerGrant: AccessTokensPerGrant})
		}},
		{"expired oauth requests", func() (int, error) { return c.st.PurgeRequests(ctx, now.Add(-requestGrace)) }},
	}
	for _, st := range steps {
		n, err := st.do()
		if err != nil {
			c.logger.Warn("purge "+st.what, "deleted", n, "err", err)
			continue
		}
		if n > 0 {
			c.logger.Info("purged "+st.what, "deleted", n)
		}
	}
}

// close stops a purge under way and waits for it; none starts after.
func (c *storePurge) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// wait waits for the purge under way, if any (tests).
func (c *storePurge) wait() { c.wg.Wait() }
