package keys

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLimiter keeps limit state in Redis, so every replica enforces one
// limit together. Each check is one Lua script: atomic on the server, one
// round trip, and timed by Redis's own clock so replicas' clocks cannot
// disagree about the window.
type RedisLimiter struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedisLimiter uses rdb with every key under prefix (e.g. "toolhost:").
func NewRedisLimiter(rdb redis.UniversalClient, prefix string) *RedisLimiter {
	return &RedisLimiter{rdb: rdb, prefix: prefix}
}

// takeCall: KEYS[1] sorted set of admitted calls scored by time (ms);
// ARGV[1] window ms, ARGV[2] limit, ARGV[3] unique member. Returns 0 when
// admitted, else the ms until the oldest call leaves the window.
var takeCall = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`)

// acquire: KEYS[1] sorted set of leases scored by expiry (ms); ARGV[1]
// lease, ARGV[2] limit, ARGV[3] ttl ms. Returns 1 when the slot was taken.
var acquire = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return 1
end
return 0
`)

func (r *RedisLimiter) TakeCall(ctx context.Context, keyID string, perMinute int) (bool, time.Duration, error) {
	member := NewID("c")
	v, err := takeCall.Run(ctx, r.rdb, []string{r.prefix + "rpm:" + keyID}, Window.Milliseconds(), perMinute, member).Int64()
	if err != nil {
		return false, 0, fmt.Errorf("rate limit state: %w", err)
	}
	if v == 0 {
		return true, 0, nil
	}
	return false, time.Duration(v) * time.Millisecond, nil
}

func (r *RedisLimiter) Acquire(ctx context.Context, keyID, lease string, limit int, ttl time.Duration) (bool, error) {
	v, err := acquire.Run(ctx, r.rdb, []string{r.prefix + "conc:" + keyID}, lease, limit, strconv.FormatInt(ttl.Milliseconds(), 10)).Int64()
	if err != nil {
		return false, fmt.Errorf("concurrency state: %w", err)
	}
	return v == 1, nil
}

// renew: KEYS[1] the sorted set of leases; ARGV[1] lease, ARGV[2] ttl ms.
// Returns 1 when the lease held a live slot, now extended.
var renew = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not exp or tonumber(exp) <= now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
`)

func (r *RedisLimiter) Renew(ctx context.Context, keyID, lease string, ttl time.Duration) (bool, error) {
	v, err := renew.Run(ctx, r.rdb, []string{r.prefix + "conc:" + keyID}, lease, strconv.FormatInt(ttl.Milliseconds(), 10)).Int64()
	if err != nil {
		return false, fmt.Errorf("concurrency state: %w", err)
	}
	return v == 1, nil
}

func (r *RedisLimiter) Release(ctx context.Context, keyID, lease string) error {
	if err := r.rdb.ZRem(ctx, r.prefix+"conc:"+keyID, lease).Err(); err != nil {
		return fmt.Errorf("concurrency state: %w", err)
	}
	return nil
}
