package sharedcache

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhost/toolhost/internal/sharedcache/sharedcachetest"
)

func open(t *testing.T, o Options) (*Redis, redis.UniversalClient, string) {
	t.Helper()
	rdb, prefix := sharedcachetest.Redis(t)
	return New(rdb, prefix, o), rdb, prefix
}

// What one replica stores another reads (two clients, one Redis), with the
// TTL it was given; a miss is no error.
func TestSharedCacheIsReadByAnotherClient(t *testing.T) {
	a, rdb, prefix := open(t, Options{})
	ctx := context.Background()
	if _, ok, err := a.Get(ctx, "q"); ok || err != nil {
		t.Fatalf("empty cache: %v %v", ok, err)
	}
	val := []byte("{\"results\":[\"\x00\xff\"]}")
	if err := a.Set(ctx, "q", val, time.Minute); err != nil {
		t.Fatal(err)
	}
	opt, _ := redis.ParseURL(os.Getenv("TOOLHOST_TEST_REDIS"))
	other := redis.NewClient(opt)
	defer other.Close()
	b := New(other, prefix, Options{})
	got, ok, err := b.Get(ctx, "q")
	if err != nil || !ok || !bytes.Equal(got, val) {
		t.Fatalf("other client reads %q %v %v", got, ok, err)
	}
	if ttl := rdb.PTTL(ctx, prefix+"v:q").Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("entry TTL %v, want at most the minute given", ttl)
	}
}

// The cache holds at most Entries values, the oldest going first, and
// refuses a value over the size cap; hostile keys are plain keys.
func TestSharedCacheIsCapped(t *testing.T) {
	c, _, _ := open(t, Options{Entries: 3, MaxValueBytes: 64})
	ctx := context.Background()
	keys := []string{"a", "b\x00", "\u202egnp.exe", "d d", "e\n*"}
	for _, k := range keys {
		if err := c.Set(ctx, k, []byte("v:"+k), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range keys {
		_, ok, err := c.Get(ctx, k)
		if err != nil || ok != (i >= 2) {
			t.Fatalf("key %d %q: present %v (%v), want only the 3 newest", i, k, ok, err)
		}
	}
	if err := c.Set(ctx, "big", bytes.Repeat([]byte("x"), 65), time.Hour); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a value over the cap: %v", err)
	}
	if _, ok, _ := c.Get(ctx, "big"); ok {
		t.Fatal("a value over the cap was stored")
	}
}

// A Redis that does not answer is a miss with an error, within the
// timeout, never a hang.
func TestSharedCacheDownIsAnError(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	c := New(rdb, "x:", Options{})
	if _, ok, err := c.Get(context.Background(), "q"); ok || err == nil {
		t.Fatalf("down: %v %v", ok, err)
	}
	if err := c.Set(context.Background(), "q", []byte("v"), time.Minute); err == nil {
		t.Fatal("a set to a Redis that is down succeeded")
	}
}
