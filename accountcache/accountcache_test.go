package accountcache

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLists(t *testing.T) {
	ctx := context.Background()
	loads := 0
	load := func(v string) func(context.Context) ([]string, error) {
		return func(context.Context) ([]string, error) { loads++; return []string{v}, nil }
	}
	tests := []struct {
		name      string
		ttl       time.Duration
		run       func(c *Lists[string]) []string
		want      string
		wantLoads int
	}{
		{"a fresh list is served from memory", time.Hour, func(c *Lists[string]) []string {
			_, _ = c.Get(ctx, "a", load("one"))
			l, _ := c.Get(ctx, "a", load("two"))
			return l
		}, "one", 1},
		{"an expired list is loaded again", time.Nanosecond, func(c *Lists[string]) []string {
			_, _ = c.Get(ctx, "a", load("one"))
			time.Sleep(time.Millisecond)
			l, _ := c.Get(ctx, "a", load("two"))
			return l
		}, "two", 2},
		{"Forget makes the next Get load", time.Hour, func(c *Lists[string]) []string {
			_, _ = c.Get(ctx, "a", load("one"))
			c.Forget("a")
			l, _ := c.Get(ctx, "a", load("two"))
			return l
		}, "two", 2},
		{"accounts are kept apart", time.Hour, func(c *Lists[string]) []string {
			_, _ = c.Get(ctx, "a", load("one"))
			l, _ := c.Get(ctx, "b", load("two"))
			return l
		}, "two", 2},
		{"a load that a write overtook is not kept", time.Hour, func(c *Lists[string]) []string {
			_, _ = c.Get(ctx, "a", func(context.Context) ([]string, error) {
				loads++
				c.Forget("a") // a write lands while the read is in flight
				return []string{"stale"}, nil
			})
			l, _ := c.Get(ctx, "a", load("fresh"))
			return l
		}, "fresh", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loads = 0
			got := tt.run(New[string](tt.ttl))
			if len(got) != 1 || got[0] != tt.want || loads != tt.wantLoads {
				t.Fatalf("got %v after %d loads, want [%s] after %d", got, loads, tt.want, tt.wantLoads)
			}
		})
	}
}

func TestListsKeepsNoError(t *testing.T) {
	c := New[string](time.Hour)
	boom := errors.New("store down")
	if _, err := c.Get(context.Background(), "a", func(context.Context) ([]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the load's", err)
	}
	l, err := c.Get(context.Background(), "a", func(context.Context) ([]string, error) { return []string{"ok"}, nil })
	if err != nil || len(l) != 1 || l[0] != "ok" {
		t.Fatalf("after a failed load: %v, %v", l, err)
	}
}
