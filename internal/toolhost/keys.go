package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	v1 "github.com/toolhost/toolhost/server/v1"
)

// openRedis connects to the Redis the replicas share (keys.redis,
// --redis): the per-key limit state and the web_search cache. nil when
// none is configured.
func openRedis(o *Options) (*redis.Client, error) {
	url := o.Config.Keys.Redis
	if url == "" {
		return nil, nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, ConfigError{fmt.Errorf("redis URL: %w", err)}
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis at %s: %w", opt.Addr, err)
	}
	return rdb, nil
}

// redisPrefix is the namespace of every key toolhost keeps in Redis.
func redisPrefix(o *Options) string {
	if p := o.Config.Keys.RedisPrefix; p != "" {
		return p
	}
	return "toolhost:"
}

// newKeys builds the key service on an open store: Redis limit state when
// configured (replicas), process memory otherwise.
func newKeys(o *Options, db *store.DB, rdb *redis.Client, logger *slog.Logger) *keys.Service {
	var limiter keys.Limiter
	if rdb != nil {
		limiter = keys.NewRedisLimiter(rdb, redisPrefix(o))
	}
	return keys.New(keys.Options{Store: db, Limiter: limiter, Prices: o.Config.Keys.Prices, Logger: logger})
}

// keyRoutes are the admin routes of key management.
func keyRoutes(svc *keys.Service) map[string]http.Handler {
	return (&admin.Keys{Service: svc}).Routes()
}

// setupKeys builds the key service for serve on the store. Outside Dev, a store with no
// key at all gets a first admin key, whose secret goes to o.FirstAdminKey to be shown once.
func setupKeys(ctx context.Context, o *Options, db *store.DB, rdb *redis.Client, logger *slog.Logger) (*keys.Service, func(), error) {
	svc := newKeys(o, db, rdb, logger)
	cleanup := svc.Close
	if !o.Dev {
		secret, created, err := svc.Bootstrap(ctx)
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("first admin key: %w", err)
		}
		if created && o.FirstAdminKey != nil {
			o.FirstAdminKey(secret)
		}
	}
	return svc, cleanup, nil
}

// withSlotCheck refuses a /v1 request whose X-Toolhost-Slot names no
// configured slot with a 400, before any upstream round is spent on it.
func withSlotCheck(routes map[string]http.Handler, slots []string) map[string]http.Handler {
	out := make(map[string]http.Handler, len(routes))
	for pattern, h := range routes {
		out[pattern] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			vals := r.Header.Values(v1.SlotHeader)
			if len(vals) > 1 || (len(vals) == 1 && !slices.Contains(slots, vals[0])) {
				server.WriteJSON(w, http.StatusBadRequest, slotRefusal{Error: slotRefusalError{Code: "invalid_slot",
					Message: fmt.Sprintf("%s must be one of %s (once)", v1.SlotHeader, strings.Join(slots, ", ")),
					Param:   v1.SlotHeader, Type: "invalid_request_error"}})
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	return out
}

// slotRefusal is withSlotCheck's 400 in the shape of /v1's errors (an
// OpenAI error object), its fields in sorted order of their names: the
// bytes of the map it replaced.
type slotRefusal struct {
	Error slotRefusalError `json:"error"`
}

type slotRefusalError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param"`
	Type    string `json:"type"`
}
