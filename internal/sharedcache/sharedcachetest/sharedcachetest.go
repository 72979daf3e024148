// Package sharedcachetest gives tests the Redis that TOOLHOST_TEST_REDIS
// names, with a key prefix of their own that is emptied when they end.
package sharedcachetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis returns a client of the test Redis and a prefix no other test
// uses; the test is skipped when TOOLHOST_TEST_REDIS is not set. The keys
// under the prefix are deleted and the client closed when t ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	u := os.Getenv("TOOLHOST_TEST_REDIS")
	if u == "" {
		t.Skip("TOOLHOST_TEST_REDIS is not set (CI sets it)")
	}
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	prefix := fmt.Sprintf("toolhost-test:%s:%d:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx := context.Background()
		for iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator(); iter.Next(ctx); {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return rdb, prefix
}
