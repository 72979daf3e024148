package session

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemStore is a Store in memory, for tests and for processes without a
// data directory.
type MemStore struct {
	mu   sync.Mutex
	m    map[[2]string]Session
	vars map[[2]string]map[string]Variable
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{m: map[[2]string]Session{}, vars: map[[2]string]map[string]Variable{}}
}

var (
	_ Store         = (*MemStore)(nil)
	_ VariableStore = (*MemStore)(nil)
)

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
	delete(s.vars, k)
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

func (s *MemStore) SetSessionCharacter(_ context.Context, account, id string, c *Character, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{account, id}
	se, ok := s.m[k]
	if !ok {
		return ErrNotFound
	}
	se.Character = copyCharacter(c)
	se.UpdatedAt = now
	s.m[k] = se
	return nil
}

func (s *MemStore) GetVariable(_ context.Context, account, sid, name string) (Variable, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vars[[2]string{account, sid}][name]
	if !ok {
		return Variable{}, ErrNoVariable
	}
	v.Value = append(json.RawMessage(nil), v.Value...)
	return v, nil
}

func (s *MemStore) SetVariable(_ context.Context, account, sid string, v Variable) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{account, sid}
	vs := s.vars[k]
	if vs == nil {
		vs = map[string]Variable{}
		s.vars[k] = vs
	}
	if _, ok := vs[v.Name]; !ok && len(vs) >= MaxVariablesPerSession {
		return ErrTooManyVariables
	}
	v.Value = append(json.RawMessage(nil), v.Value...)
	vs[v.Name] = v
	return nil
}

func (s *MemStore) ListVariables(_ context.Context, account, sid, after string, limit int) ([]Variable, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Variable
	for name, v := range s.vars[[2]string{account, sid}] {
		if name > after {
			v.Value = append(json.RawMessage(nil), v.Value...)
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b Variable) int { return strings.Compare(a.Name, b.Name) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func copySession(se Session) Session {
	se.Metadata = append(json.RawMessage(nil), se.Metadata...)
	se.Permissions = se.Permissions.clone()
	se.Character = copyCharacter(se.Character)
	return se
}

func copyCharacter(c *Character) *Character {
	if c == nil {
		return nil
	}
	cc := *c
	cc.Attributes = append(json.RawMessage(nil), c.Attributes...)
	return &cc
}
