package mcpremote

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemStore is a Store in memory (tests, a server without a data store).
type MemStore struct {
	mu      sync.Mutex
	servers map[string]Server // by id
	snaps   map[string]Snapshot
	// updating are the locks of UpdateMCPSecrets by server id: a
	// one-slot channel, so a waiter can give up with its context.
	updating map[string]chan struct{}
	// auths are the pending authorizations by state key.
	auths map[string]PendingAuthorization
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{servers: map[string]Server{}, snaps: map[string]Snapshot{}, updating: map[string]chan struct{}{}, auths: map[string]PendingAuthorization{}}
}

var _ Store = (*MemStore)(nil)

func (m *MemStore) nameTaken(s Server) bool {
	for _, o := range m.servers {
		if o.AccountID == s.AccountID && o.Name == s.Name && o.ID != s.ID {
			return true
		}
	}
	return false
}

// CreateMCPServer implements Store.
func (m *MemStore) CreateMCPServer(_ context.Context, s Server, limit int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.servers[s.ID]; ok || m.nameTaken(s) {
		return ErrConflict
	}
	if limit > 0 {
		n := 0
		for _, o := range m.servers {
			if o.AccountID == s.AccountID {
				n++
			}
		}
		if n >= limit {
			return ErrLimit
		}
	}
	m.servers[s.ID] = clone(s)
	return nil
}

// GetMCPServer implements Store.
func (m *MemStore) GetMCPServer(_ context.Context, account, id string) (Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[id]
	if !ok || s.AccountID != account {
		return Server{}, ErrNotFound
	}
	return clone(s), nil
}

// ListMCPServers implements Store.
func (m *MemStore) ListMCPServers(_ context.Context, account string) ([]Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Server
	for _, s := range m.servers {
		if s.AccountID == account {
			out = append(out, clone(s))
		}
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateMCPServer implements Store.
func (m *MemStore) UpdateMCPServer(_ context.Context, s Server) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.servers[s.ID]
	if !ok || o.AccountID != s.AccountID {
		return ErrNotFound
	}
	if m.nameTaken(s) {
		return ErrConflict
	}
	m.servers[s.ID] = clone(s)
	return nil
}

// DeleteMCPServer implements Store.
func (m *MemStore) DeleteMCPServer(_ context.Context, account, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[id]
	if !ok || s.AccountID != account {
		return ErrNotFound
	}
	delete(m.servers, id)
	delete(m.snaps, id)
	return nil
}

// SaveMCPSnapshot implements Store.
func (m *MemStore) SaveMCPSnapshot(_ context.Context, account, id string, snap Snapshot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[id]
	if !ok || s.AccountID != account {
		return ErrNotFound
	}
	if old, ok := m.snaps[id]; ok && old.ListedAt.UnixMilli() > snap.ListedAt.UnixMilli() {
		return nil // the newer one is kept
	}
	m.snaps[id] = Snapshot{Tools: slices.Clone(snap.Tools), ListedAt: snap.ListedAt}
	return nil
}

// GetMCPSnapshot implements Store.
func (m *MemStore) GetMCPSnapshot(_ context.Context, account, id string) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.servers[id]
	if !ok || s.AccountID != account {
		return Snapshot{}, ErrNotFound
	}
	snap, ok := m.snaps[id]
	if !ok {
		return Snapshot{}, ErrNoSnapshot
	}
	return snap, nil
}

// UpdateMCPSecrets implements Store. update runs outside m.mu: only
// the other updates of the server's secrets wait for it.
func (m *MemStore) UpdateMCPSecrets(ctx context.Context, account, id string, update func([]byte) ([]byte, error)) error {
	m.mu.Lock()
	lock, ok := m.updating[id]
	if !ok {
		lock = make(chan struct{}, 1)
		m.updating[id] = lock
	}
	m.mu.Unlock()
	select {
	case lock <- struct{}{}:
		defer func() { <-lock }()
	case <-ctx.Done():
		return ctx.Err()
	}
	s, err := m.GetMCPServer(ctx, account, id)
	if err != nil {
		return err
	}
	sealed, err := update(s.Sealed)
	if err != nil || sealed == nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.servers[id]
	switch {
	case !ok || cur.AccountID != account:
		return ErrNotFound // deleted meanwhile
	case !bytes.Equal(cur.Sealed, s.Sealed):
		return ErrSecretsChanged
	}
	cur.Sealed = slices.Clone(sealed)
	m.servers[id] = cur
	return nil
}

func clone(s Server) Server {
	s.HeaderNames = slices.Clone(s.HeaderNames)
	s.Auth.Scopes = slices.Clone(s.Auth.Scopes)
	s.Sealed = slices.Clone(s.Sealed)
	if s.Defaults.AllowedSlots != nil {
		slots := slices.Clone(*s.Defaults.AllowedSlots)
		s.Defaults.AllowedSlots = &slots
	}
	if s.Tools != nil {
		t := make(map[string]Override, len(s.Tools))
		for k, v := range s.Tools {
			t[k] = v
		}
		s.Tools = t
	}
	return s
}

// PutMCPAuthorization implements Store.
func (m *MemStore) PutMCPAuthorization(_ context.Context, p PendingAuthorization) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, o := range m.auths {
		if o.AccountID == p.AccountID && o.ServerID == p.ServerID || !o.ExpiresAt.After(p.ExpiresAt.Add(-AuthorizeTimeout)) {
			delete(m.auths, k)
		}
	}
	p.Sealed = bytes.Clone(p.Sealed)
	m.auths[string(p.State)] = p
	return nil
}

// TakeMCPAuthorization implements Store.
func (m *MemStore) TakeMCPAuthorization(_ context.Context, state []byte, now time.Time) (PendingAuthorization, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.auths[string(state)]
	delete(m.auths, string(state))
	if !ok || !p.ExpiresAt.After(now) {
		return PendingAuthorization{}, ErrUnknownState
	}
	return p, nil
}
