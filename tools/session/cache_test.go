package session

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// counted is another replica's view of the store: it counts the reads
// the cache's keep-warm makes.
type counted struct {
	*MemStore
	gets atomic.Int32
}

func (c *counted) GetSession(ctx context.Context, account, id string) (Session, error) {
	c.gets.Add(1)
	return c.MemStore.GetSession(ctx, account, id)
}

// waitGets waits (up to 10 s) until the store has been read n times.
func waitGets(t *testing.T, st *counted, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); st.gets.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d background reads, want %d", st.gets.Load(), n)
		}
	}
}

func TestCacheKeepsASessionInUseFresh(t *testing.T) {
	ctx := context.Background()
	st := &counted{MemStore: NewMemStore()}
	c := NewCache(st, 40*time.Millisecond)
	defer c.Close()
	if _, err := c.TouchSession(ctx, "acct", "s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	// Another replica changes the permissions: a background read brings
	// the change in without a call reading the store itself.
	p := Permissions{Enabled: true}
	if err := st.SetSessionPermissions(ctx, "acct", "s1", p, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitGets(t, st, 2)
	s, err := c.TouchSession(ctx, "acct", "s1", time.Now())
	if err != nil || !s.Permissions.Enabled {
		t.Fatalf("after a background read: %+v, %v; want the other replica's permissions", s.Permissions, err)
	}
}

func TestCacheRefreshNeverCreatesADeletedSession(t *testing.T) {
	ctx := context.Background()
	st := &counted{MemStore: NewMemStore()}
	c := NewCache(st, 40*time.Millisecond)
	defer c.Close()
	if _, err := c.TouchSession(ctx, "acct", "s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	// Another replica deletes the session while this one keeps it warm.
	n := st.gets.Load()
	if err := st.DeleteSession(ctx, "acct", "s1"); err != nil {
		t.Fatal(err)
	}
	waitGets(t, st, n+1)
	if _, err := st.MemStore.GetSession(ctx, "acct", "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after background reads the deleted session is back: %v", err)
	}
}
