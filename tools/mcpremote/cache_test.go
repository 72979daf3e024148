package mcpremote_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/remotetest"
)

// An hour's TTL: every read-after-write the suite checks is answered by
// the cache's invalidation, not by expiry.
func TestCacheConformance(t *testing.T) {
	remotetest.Run(t, mcpremote.NewCache(mcpremote.NewMemStore(), time.Hour, nil))
}

// countingStore counts the lists that reach the store.
type countingStore struct {
	mcpremote.Store
	lists atomic.Int64
}

func (c *countingStore) ListMCPServers(ctx context.Context, account string) ([]mcpremote.Server, error) {
	c.lists.Add(1)
	return c.Store.ListMCPServers(ctx, account)
}

// regServer is a server registered at a fixed time: the instant the fake
// clock of TestCacheOtherReplica starts from, so no test reads the wall
// clock beside it.
func regServer(id, account, name string) mcpremote.Server {
	now := time.Unix(1_700_000_000, 0)
	return mcpremote.Server{ID: id, AccountID: account, Name: name, URL: "https://example.com/mcp", Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Sealed: []byte{1, 2, 3}, CreatedAt: now, UpdatedAt: now}
}

// TestCacheListsFromMemoryAndForgetsOnWrite: repeated lists of an account
// read the store once; a create, update or delete through the cache is
// in the very next list; callers get copies they cannot corrupt the cache
// through; one account's entry is not another's.
func TestCacheListsFromMemoryAndForgetsOnWrite(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: mcpremote.NewMemStore()}
	c := mcpremote.NewCache(st, time.Hour, nil)
	names := func(account string) []string {
		t.Helper()
		l, err := c.ListMCPServers(ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range l {
			out = append(out, s.Name)
		}
		return out
	}
	a := regServer("mcpsrv_1", "acct_a", "alpha")
	if err := c.CreateMCPServer(ctx, a, 0); err != nil {
		t.Fatal(err)
	}
	if got := names("acct_a"); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("after create: %v", got)
	}
	before := st.lists.Load()
	for range 100 {
		names("acct_a")
	}
	if n := st.lists.Load() - before; n != 0 {
		t.Fatalf("100 lists of a cached account reached the store %d times, want 0", n)
	}
	l, _ := c.ListMCPServers(ctx, "acct_a")
	l[0].Name, l[0].Sealed[0] = "mutated", 9
	if l2, _ := c.ListMCPServers(ctx, "acct_a"); l2[0].Name != "alpha" || l2[0].Sealed[0] != 1 {
		t.Fatalf("a caller's change reached the cache: %+v", l2[0])
	}
	if got := names("acct_b"); len(got) != 0 {
		t.Fatalf("acct_b lists %v, want nothing", got)
	}
	a.Name, a.UpdatedAt = "beta", a.UpdatedAt.Add(time.Millisecond)
	if err := c.UpdateMCPServer(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := names("acct_a"); !slices.Equal(got, []string{"beta"}) {
		t.Fatalf("after update: %v", got)
	}
	// A failed write changes nothing (another account's delete).
	if err := c.DeleteMCPServer(ctx, "acct_b", a.ID); err == nil {
		t.Fatal("acct_b deleted acct_a's server")
	}
	if err := c.DeleteMCPServer(ctx, "acct_a", a.ID); err != nil {
		t.Fatal(err)
	}
	if got := names("acct_a"); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

// TestCacheOtherReplica: two caches over one store; a write through one
// reaches the other once its entry expires (the TTL the docs state).
func TestCacheOtherReplica(t *testing.T) {
	ctx := context.Background()
	st := mcpremote.NewMemStore()
	const ttl = 50 * time.Millisecond
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	one, two := mcpremote.NewCache(st, ttl, clock), mcpremote.NewCache(st, ttl, clock)
	if l, err := two.ListMCPServers(ctx, "acct_r"); err != nil || len(l) != 0 {
		t.Fatalf("before: %v %v", l, err)
	}
	if err := one.CreateMCPServer(ctx, regServer("mcpsrv_r", "acct_r", "gamma"), 0); err != nil {
		t.Fatal(err)
	}
	now = now.Add(ttl - time.Millisecond)
	if l, err := two.ListMCPServers(ctx, "acct_r"); err != nil || len(l) != 0 {
		t.Fatalf("within the TTL the other replica lists %v %v, want its cached empty list", l, err)
	}
	now = now.Add(time.Millisecond)
	if l, err := two.ListMCPServers(ctx, "acct_r"); err != nil || len(l) != 1 || l[0].Name != "gamma" {
		t.Fatalf("after the TTL the other replica lists %v %v, want gamma", l, err)
	}
}

// stallingStore holds its first list until released, so a write can land
// while that read is in flight.
type stallingStore struct {
	mcpremote.Store
	started, release chan struct{}
	once             atomic.Bool
}

func (s *stallingStore) ListMCPServers(ctx context.Context, account string) ([]mcpremote.Server, error) {
	l, err := s.Store.ListMCPServers(ctx, account)
	if s.once.CompareAndSwap(false, true) {
		close(s.started)
		<-s.release
	}
	return l, err
}

// TestCacheKeepsNoListReadBeforeAWrite: a list that read the store before
// a write and returns after it is not kept; the next list has the write.
func TestCacheKeepsNoListReadBeforeAWrite(t *testing.T) {
	ctx := context.Background()
	st := &stallingStore{Store: mcpremote.NewMemStore(), started: make(chan struct{}), release: make(chan struct{})}
	c := mcpremote.NewCache(st, time.Hour, nil)
	done := make(chan []mcpremote.Server)
	go func() {
		l, _ := c.ListMCPServers(ctx, "acct_s")
		done <- l
	}()
	<-st.started
	if err := c.CreateMCPServer(ctx, regServer("mcpsrv_s", "acct_s", "delta"), 0); err != nil {
		t.Fatal(err)
	}
	close(st.release)
	if l := <-done; len(l) != 0 {
		t.Fatalf("the list that began before the create: %v, want the empty list it read", l)
	}
	if l, _ := c.ListMCPServers(ctx, "acct_s"); len(l) != 1 || l[0].Name != "delta" {
		t.Fatalf("after the create: %v, want delta", l)
	}
}
