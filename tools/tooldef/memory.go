package tooldef

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
)

// MemStore is a Store in memory, for tests and processes without a data
// directory.
type MemStore struct {
	mu sync.Mutex
	m  map[string]Definition // by id
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{m: map[string]Definition{}} }

var _ Store = (*MemStore)(nil)

func (s *MemStore) clash(d Definition) bool {
	for _, o := range s.m {
		if o.ID != d.ID && o.AccountID == d.AccountID && o.Name == d.Name && o.Source == d.Source && o.SourceID == d.SourceID {
			return true
		}
	}
	return false
}

func (s *MemStore) CreateDefinition(_ context.Context, d Definition, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.m[d.ID]; dup || s.clash(d) {
		return ErrConflict
	}
	if limit > 0 && s.count(d.AccountID) >= limit {
		return ErrLimit
	}
	s.m[d.ID] = clone(d)
	return nil
}

// count is how many definitions the account has (s.mu held).
func (s *MemStore) count(account string) int {
	n := 0
	for _, d := range s.m {
		if d.AccountID == account {
			n++
		}
	}
	return n
}

func (s *MemStore) GetDefinition(_ context.Context, account, id string) (Definition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[id]
	if !ok || d.AccountID != account {
		return Definition{}, ErrNotFound
	}
	return clone(d), nil
}

func (s *MemStore) ListDefinitions(_ context.Context, q Query) ([]Definition, int, error) {
	s.mu.Lock()
	var all []Definition
	for _, d := range s.m {
		if d.AccountID != q.AccountID || (q.Name != "" && d.Name != q.Name) || (q.Source != "" && d.Source != q.Source) ||
			(q.HasSourceID && d.SourceID != q.SourceID) || (q.Enabled != nil && d.Enabled != *q.Enabled) {
			continue
		}
		all = append(all, clone(d))
	}
	s.mu.Unlock()
	out, total := page(all, q)
	return out, total, nil
}

// page sorts definitions as q says (ties by id) and cuts q's page.
func page(all []Definition, q Query) ([]Definition, int) {
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		c := 0
		if q.SortBy == SortName {
			c = strings.Compare(a.Name, b.Name)
		} else {
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if q.Asc {
			return c < 0
		}
		return c > 0
	})
	total := len(all)
	lo := min(q.Offset, total)
	hi := total
	if q.Limit > 0 {
		hi = min(lo+q.Limit, total)
	}
	return all[lo:hi], total
}

func (s *MemStore) UpdateDefinition(_ context.Context, d Definition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[d.ID]
	if !ok || o.AccountID != d.AccountID {
		return ErrNotFound
	}
	if s.clash(d) {
		return ErrConflict
	}
	s.m[d.ID] = clone(d)
	return nil
}

func (s *MemStore) DeleteDefinition(_ context.Context, account, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[id]
	if !ok || d.AccountID != account {
		return ErrNotFound
	}
	delete(s.m, id)
	return nil
}

func clone(d Definition) Definition {
	d.Parameters = slices.Clone(d.Parameters)
	d.Handler = slices.Clone(d.Handler)
	d.AllowedSlots = slices.Clone(d.AllowedSlots)
	return d
}
