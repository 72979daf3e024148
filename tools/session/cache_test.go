package session

import (
	"context"
	"testing"
	"time"
)

// TestCacheSeesAnotherReplicasWriteAfterTheTTL: a write made past the
// cache (another replica's) is served from memory until the entry is a
// TTL old, and the first call after that reads it.
func TestCacheSeesAnotherReplicasWriteAfterTheTTL(t *testing.T) {
	ctx := context.Background()
	st := NewMemStore()
	const ttl = 40 * time.Millisecond
	now := time.Unix(1_700_000_000, 0)
	c := NewCache(st, ttl, func() time.Time { return now })
	if _, err := c.TouchSession(ctx, "acct", "s1", now); err != nil {
		t.Fatal(err)
	}
	// The default permissions are enabled; the other replica disables
	// the session's tools.
	if err := st.SetSessionPermissions(ctx, "acct", "s1", Permissions{Enabled: false}, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(ttl - time.Millisecond)
	if s, err := c.TouchSession(ctx, "acct", "s1", now); err != nil || !s.Permissions.Enabled {
		t.Fatalf("within the TTL: %+v, %v; want the cached permissions", s.Permissions, err)
	}
	now = now.Add(time.Millisecond)
	if s, err := c.TouchSession(ctx, "acct", "s1", now); err != nil || s.Permissions.Enabled {
		t.Fatalf("after the TTL: %+v, %v; want the other replica's permissions", s.Permissions, err)
	}
}

// TestCacheKeepsSessionsApart: the cache tells every (account, id) pair
// apart, also pairs whose concatenations are alike.
func TestCacheKeepsSessionsApart(t *testing.T) {
	ctx := context.Background()
	c := NewCache(NewMemStore(), time.Hour, nil)
	for _, k := range [][2]string{{"a", "bc"}, {"ab", "c"}, {"a", "bc"}, {"ab", "c"}} {
		s, err := c.TouchSession(ctx, k[0], k[1], time.Now())
		if err != nil || s.AccountID != k[0] || s.ID != k[1] {
			t.Fatalf("TouchSession(%q, %q) = %s/%s, %v", k[0], k[1], s.AccountID, s.ID, err)
		}
	}
}
