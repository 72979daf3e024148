// Package sharedcache is a byte cache every replica shares, in Redis: what
// one replica fetched (a web_search answer) another serves without asking
// again. It is only ever a cache: a miss, a Redis that does not answer in
// time or a value over the size cap costs the work again, never the call.
//
// Each entry is a Redis string with its own TTL, indexed in a sorted set
// by when it was written, so the cache holds at most Entries values (the
// oldest go first) however many replicas write to it; every write is one
// Lua script (one round trip, atomic on the server) and a read one GET.
package sharedcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a shared cache in one Redis namespace.
type Redis struct {
	rdb      redis.UniversalClient
	prefix   string // e.g. "toolhost:websearch:"
	entries  int
	maxValue int
	timeout  time.Duration
}

// Options bound a cache.
type Options struct {
	// Entries held at most (default 10 000).
	Entries int
	// MaxValueBytes: a larger value is not stored (default 1 MiB).
	MaxValueBytes int
	// Timeout of one Redis round trip (default 250 ms): a cache slower
	// than that is a miss.
	Timeout time.Duration
}

// New is the cache under prefix on rdb.
func New(rdb redis.UniversalClient, prefix string, o Options) *Redis {
	if o.Entries <= 0 {
		o.Entries = 10000
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = 1 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	return &Redis{rdb: rdb, prefix: prefix, entries: o.Entries, maxValue: o.MaxValueBytes, timeout: o.Timeout}
}

// ErrTooLarge: Set was given a value over MaxValueBytes.
var ErrTooLarge = errors.New("sharedcache: value over the size cap")

// Get returns key's value; ok is false on a miss.
func (c *Redis) Get(ctx context.Context, key string) (value []byte, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	b, err := c.rdb.Get(ctx, c.prefix+"v:"+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("shared cache get: %w", err)
	}
	return b, true, nil
}

// set: KEYS[1] the value, KEYS[2] the index; ARGV[1] value, ARGV[2] ttl ms,
// ARGV[3] entries cap. Index members are
// value keys scored by Redis's own time; expired members and the oldest
// over the cap are dropped with their values.
var set = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], now, KEYS[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 86400000)
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #old, 2 do redis.call('DEL', old[i]) end
end
redis.call('PEXPIRE', KEYS[2], 86400000)
return 0
`)

// Set stores value under key for ttl (at most 24 h).
func (c *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if len(value) > c.maxValue {
		return ErrTooLarge
	}
	ttl = min(ttl, 24*time.Hour)
	if ttl < time.Millisecond {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := set.Run(ctx, c.rdb, []string{c.prefix + "v:" + key, c.prefix + "index"}, value, ttl.Milliseconds(), c.entries).Err()
	if err != nil {
		return fmt.Errorf("shared cache set: %w", err)
	}
	return nil
}
