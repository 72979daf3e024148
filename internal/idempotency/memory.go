package idempotency

import (
	"context"
	"sync"
	"time"
)

// Memory is a Store in process memory: right for one process (and for
// tests); a key is honoured only by the process that holds it, and
// forgotten on restart.
type Memory struct {
	lim Limits

	mu      sync.Mutex
	entries map[string]*memEntry
	order   []slot // claim order, oldest first
	seq     uint64
	bytes   int64
	byAcct  map[string]int64
}

// slot is a claim's place in the order; seq tells a key claimed again
// from its earlier place.
type slot struct {
	key string
	seq uint64
}

type memEntry struct {
	seq        uint64
	account    string
	digest     [32]byte
	owner      string
	leaseUntil time.Time
	done       bool
	resp       Response
	size       int64
	storedAt   time.Time
}

// NewMemory keeps responses within lim (zero fields take the defaults).
func NewMemory(lim Limits) *Memory {
	return &Memory{lim: lim.WithDefaults(), entries: map[string]*memEntry{}, byAcct: map[string]int64{}}
}

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, c Claim, now time.Time, lease time.Duration) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	took := false
	if e, ok := m.entries[c.Key]; ok {
		switch {
		case e.done && now.Sub(e.storedAt) > m.lim.TTL:
			m.drop(c.Key)
		case !e.done && !now.Before(e.leaseUntil):
			m.drop(c.Key)
			took = true
		case e.digest != c.Digest:
			return Result{Outcome: Reused}, nil
		case !e.done:
			return Result{Outcome: InFlight, Retry: e.leaseUntil.Sub(now)}, nil
		default:
			return Result{Outcome: Replay, Response: e.resp}, nil
		}
	}
	m.seq++
	m.entries[c.Key] = &memEntry{seq: m.seq, account: c.Account, digest: c.Digest, owner: c.Owner, leaseUntil: now.Add(lease)}
	m.order = append(m.order, slot{c.Key, m.seq})
	m.evict(func() bool { return len(m.entries) > m.lim.Entries }, "")
	return Result{Outcome: Claimed, TookOver: took}, nil
}

// Renew implements Store.
func (m *Memory) Renew(_ context.Context, key, owner string, now time.Time, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok || e.owner != owner || e.done {
		return false, nil
	}
	e.leaseUntil = now.Add(lease)
	return true, nil
}

// Complete implements Store.
func (m *Memory) Complete(_ context.Context, key, owner string, resp Response, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok || e.owner != owner || e.done {
		return false, nil
	}
	size := Size(key, resp)
	if size > m.lim.AccountBytes {
		m.drop(key)
		return false, nil
	}
	e.done, e.resp, e.storedAt, e.size = true, resp, now, size
	m.bytes += size
	m.byAcct[e.account] += size
	// The account's oldest first, then anyone's, until both caps hold.
	m.evict(func() bool { return m.byAcct[e.account] > m.lim.AccountBytes }, e.account)
	m.evict(func() bool { return m.bytes > m.lim.MaxBytes }, "")
	return true, nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, key, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[key]; ok && e.owner == owner && !e.done {
		m.drop(key)
	}
	return nil
}

// drop forgets key (its place in order is skipped later).
func (m *Memory) drop(key string) {
	e, ok := m.entries[key]
	if !ok {
		return
	}
	delete(m.entries, key)
	m.bytes -= e.size
	if m.byAcct[e.account] -= e.size; m.byAcct[e.account] <= 0 {
		delete(m.byAcct, e.account)
	}
}

// evict drops the oldest answered entries (of account, or of anyone when
// "") while over() holds, and compacts order. Claims in flight go only
// when the entry count is over its cap.
func (m *Memory) evict(over func() bool, account string) {
	kept := m.order[:0]
	for _, sl := range m.order {
		k := sl.key
		e, ok := m.entries[k]
		if !ok || e.seq != sl.seq {
			continue // dropped earlier, or claimed again since
		}
		if over() && (account == "" || e.account == account) && (e.done || len(m.entries) > m.lim.Entries) {
			m.drop(k)
			continue
		}
		kept = append(kept, sl)
	}
	m.order = kept
}
