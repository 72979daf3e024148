package approval

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Memory is a Store in memory, for a process without a database.
type Memory struct {
	mu sync.Mutex
	m  map[string]Approval // by id
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[string]Approval{}} }

// CreateApproval implements Store.
func (s *Memory) CreateApproval(_ context.Context, a Approval) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Args = slices.Clone(a.Args)
	s.m[a.ID] = a
	return nil
}

// GetApproval implements Store.
func (s *Memory) GetApproval(_ context.Context, accountID, id string) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[id]
	if !ok || a.AccountID != accountID {
		return Approval{}, ErrNotFound
	}
	return a, nil
}

// ListApprovals implements Store.
func (s *Memory) ListApprovals(_ context.Context, q Query) ([]Approval, int, error) {
	s.mu.Lock()
	var out []Approval
	for _, a := range s.m {
		if a.AccountID != q.AccountID || q.SessionID != "" && a.SessionID != q.SessionID ||
			q.Tool != "" && a.Tool != q.Tool || q.Status != "" && a.Effective(q.Now) != q.Status {
			continue
		}
		out = append(out, a)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Approval) int {
		if c := b.RequestedAt.Compare(a.RequestedAt); c != 0 {
			return c
		}
		return compare(b.ID, a.ID)
	})
	total := len(out)
	out = out[min(q.Offset, total):]
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, total, nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// DecideApproval implements Store.
func (s *Memory) DecideApproval(_ context.Context, accountID, id string, d Decision, now time.Time) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[id]
	if !ok || a.AccountID != accountID {
		return Approval{}, ErrNotFound
	}
	if st := a.Effective(now); st != Pending {
		return a, &StateError{Status: st}
	}
	a.Status = Declined
	if d.Approve {
		a.Status = Approved
	}
	a.DecidedBy, a.DecidedVia, a.Reason, a.DecidedAt = d.By, d.Via, d.Reason, now
	s.m[id] = a
	return a, nil
}

// ConsumeApproval implements Store: the oldest matching approval.
func (s *Memory) ConsumeApproval(_ context.Context, accountID, digest, executionID string, now time.Time) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *Approval
	for _, a := range s.m {
		if a.AccountID == accountID && a.Digest == digest && a.Status == Approved && now.Before(a.ExpiresAt) &&
			(best == nil || a.RequestedAt.Before(best.RequestedAt) || a.RequestedAt.Equal(best.RequestedAt) && a.ID < best.ID) {
			best = &a
		}
	}
	if best == nil {
		return Approval{}, ErrNoneApproved
	}
	a := *best
	a.Status, a.ConsumedBy, a.ConsumedAt = Consumed, executionID, now
	s.m[a.ID] = a
	return a, nil
}
