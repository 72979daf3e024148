package session

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// MemStore is a Store in memory, for tests and for processes without a
// data directory.
type MemStore struct {
	mu sync.Mutex
	m  map[[2]string]Session
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{m: map[[2]string]Session{}} }

var _ Store = (*MemStore)(nil)

func (s *MemStore) CreateSession(_ context.Context, se Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{se.AccountID, se.ID}
	if _, ok := s.m[k]; ok {
		return ErrConflict
	}
	s.m[k] = copySession(se)
	return nil
}

func (s *MemStore) GetSession(_ context.Context, account, id string) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.m[[2]string{account, id}]
	if !ok {
		return Session{}, ErrNotFound
	}
	return copySession(se), nil
}

func (s *MemStore) DeleteSession(_ context.Context, account, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{account, id}
	if _, ok := s.m[k]; !ok {
		return ErrNotFound
	}
	delete(s.m, k)
	return nil
}

func (s *MemStore) TouchSession(_ context.Context, account, id string, now time.Time) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{account, id}
	se, ok := s.m[k]
	if !ok {
		se = Session{ID: id, AccountID: account, Metadata: json.RawMessage("{}"), Permissions: Default(), CreatedAt: now, UpdatedAt: now}
		s.m[k] = se
	}
	return copySession(se), nil
}

func (s *MemStore) SetSessionPermissions(_ context.Context, account, id string, p Permissions, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{account, id}
	se, ok := s.m[k]
	if !ok {
		return ErrNotFound
	}
	se.Permissions = p.clone()
	se.UpdatedAt = now
	s.m[k] = se
	return nil
}

func copySession(se Session) Session {
	se.Metadata = append(json.RawMessage(nil), se.Metadata...)
	se.Permissions = se.Permissions.clone()
	return se
}
