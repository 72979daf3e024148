package keys

import (
	"context"
	"sync"
	"time"
)

// Window is the span of the calls-per-minute limit.
const Window = time.Minute

// Limiter keeps the state of the per-key MCP limits.
//
// The per-minute limit is a sliding-window log: a call is admitted when fewer
// than n calls were admitted in the last minute, and a refused call is told
// when the oldest of those leaves the window. Unlike a token bucket, which
// refills continuously, this admits exactly n calls in any minute — the
// property the acceptance test asks for (200 concurrent calls at 60/min: 60
// run, 140 are refused).
type Limiter interface {
	// TakeCall admits one call under a limit of perMinute calls per Window.
	TakeCall(ctx context.Context, keyID string, perMinute int) (ok bool, retryAfter time.Duration, err error)
	// Acquire takes one of limit concurrency slots for lease until ttl passes
	// (so a crashed replica's slots come back by themselves).
	Acquire(ctx context.Context, keyID, lease string, limit int, ttl time.Duration) (bool, error)
	// Renew extends a slot the lease holds to ttl from now; false when it
	// holds none (its slot ran out).
	Renew(ctx context.Context, keyID, lease string, ttl time.Duration) (bool, error)
	// Release gives the slot back.
	Release(ctx context.Context, keyID, lease string) error
}

// MemoryLimiter keeps limit state in process memory: right for a single
// process (the embedded SQLite default), wrong for replicas.
type MemoryLimiter struct {
	mu     sync.Mutex
	now    func() time.Time
	calls  map[string][]time.Time
	leases map[string]map[string]time.Time
}

// NewMemoryLimiter returns an empty in-process limiter.
func NewMemoryLimiter(now func() time.Time) *MemoryLimiter {
	if now == nil {
		now = time.Now
	}
	return &MemoryLimiter{now: now, calls: map[string][]time.Time{}, leases: map[string]map[string]time.Time{}}
}

func (m *MemoryLimiter) TakeCall(_ context.Context, keyID string, perMinute int) (bool, time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	log := m.calls[keyID]
	i := 0
	for i < len(log) && !log[i].After(now.Add(-Window)) {
		i++
	}
	log = log[i:]
	if len(log) < perMinute {
		m.calls[keyID] = append(log, now)
		return true, 0, nil
	}
	m.calls[keyID] = log
	retry := log[0].Add(Window).Sub(now)
	return false, max(retry, time.Millisecond), nil
}

func (m *MemoryLimiter) Acquire(_ context.Context, keyID, lease string, limit int, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	ls := m.leases[keyID]
	if ls == nil {
		ls = map[string]time.Time{}
		m.leases[keyID] = ls
	}
	for id, exp := range ls {
		if !exp.After(now) {
			delete(ls, id)
		}
	}
	if len(ls) >= limit {
		return false, nil
	}
	ls[lease] = now.Add(ttl)
	return true, nil
}

func (m *MemoryLimiter) Renew(_ context.Context, keyID, lease string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	exp, ok := m.leases[keyID][lease]
	if !ok || !exp.After(now) {
		return false, nil
	}
	m.leases[keyID][lease] = now.Add(ttl)
	return true, nil
}

func (m *MemoryLimiter) Release(_ context.Context, keyID, lease string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.leases[keyID], lease)
	return nil
}
