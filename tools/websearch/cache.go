package websearch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// cacheEntry is one cached answer.
type cacheEntry struct {
	Stored   time.Time `json:"stored_at"`
	Provider string    `json:"provider"`
	// ProviderID is the identity (kind and base URL) of the provider that
	// answered, so a provider renamed since is named as it is called now.
	ProviderID string `json:"provider_id,omitempty"`
	Results    []Item `json:"results"`
	// Leader is the execution that ran the search (in memory only: which
	// of several identical calls in flight pays for it).
	Leader string `json:"-"`
}

// cache is the query cache: an LRU in memory (bounded by entries, with a TTL
// checked on read against the injected clock) in front of a cache the
// replicas share (Deps.Shared: Redis) or else an optional directory of one
// JSON file per entry, written atomically, so separate processes on one
// machine share answers. The shared and disk sides are best effort: a
// failure to read or write them is logged and the call goes on.
//
// The LRU comes from hashicorp/golang-lru; its "expirable" variant is not
// used because it starts a clean-up goroutine that can never be stopped and
// reads the wall clock, which tests cannot move.
type cache struct {
	ttl    time.Duration
	max    int
	dir    string
	now    func() time.Time
	logger *slog.Logger
	mem    *lru.Cache[string, cacheEntry]
	mu     sync.Mutex // serializes disk pruning within the process
	shared SharedCache
}

// SharedCache is a cache every replica reads and writes (Redis:
// internal/sharedcache); it bounds its own entries and the time it takes.
type SharedCache interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

func newCache(cfg CacheConfig, shared SharedCache, now func() time.Time, logger *slog.Logger) (*cache, error) {
	if cfg.MaxEntries < 0 {
		return nil, nil
	}
	c := &cache{ttl: time.Duration(cfg.TTL), max: cfg.MaxEntries, now: now, logger: logger, shared: shared}
	if c.ttl <= 0 {
		c.ttl = defaultCacheTTL
	}
	if c.max == 0 {
		c.max = defaultCacheSize
	}
	if !cfg.MemoryOnly && shared == nil {
		c.dir = cfg.Dir
	}
	mem, err := lru.New[string, cacheEntry](c.max)
	if err != nil {
		return nil, fmt.Errorf("web_search cache: %w", err)
	}
	c.mem = mem
	return c, nil
}

func (c *cache) fresh(e cacheEntry) bool {
	age := c.now().Sub(e.Stored)
	return age >= 0 && age < c.ttl
}

func (c *cache) get(ctx context.Context, key string) (cacheEntry, bool) {
	if e, ok := c.mem.Get(key); ok {
		if c.fresh(e) {
			return e, true
		}
		c.mem.Remove(key)
	}
	if c.shared != nil {
		return c.getShared(ctx, key)
	}
	if c.dir == "" {
		return cacheEntry{}, false
	}
	path := filepath.Join(c.dir, key+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.logger.Warn("web_search cache read failed", "err", err)
		}
		return cacheEntry{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Results == nil {
		_ = os.Remove(path)
		return cacheEntry{}, false
	}
	if !c.fresh(e) {
		_ = os.Remove(path)
		return cacheEntry{}, false
	}
	c.mem.Add(key, e)
	return e, true
}

// getShared reads key from the shared cache into the LRU.
func (c *cache) getShared(ctx context.Context, key string) (cacheEntry, bool) {
	b, ok, err := c.shared.Get(ctx, key)
	if err != nil {
		c.logger.WarnContext(ctx, "web_search shared cache read failed", "err", err)
	}
	if !ok {
		return cacheEntry{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Results == nil || !c.fresh(e) {
		return cacheEntry{}, false
	}
	c.mem.Add(key, e)
	return e, true
}

func (c *cache) put(ctx context.Context, key string, e cacheEntry) {
	c.mem.Add(key, e)
	if c.shared != nil {
		b, err := json.Marshal(e)
		if err == nil {
			err = c.shared.Set(ctx, key, b, c.ttl-c.now().Sub(e.Stored))
		}
		if err != nil {
			c.logger.WarnContext(ctx, "web_search shared cache write failed", "err", err)
		}
		return
	}
	if c.dir == "" {
		return
	}
	if err := c.write(key, e); err != nil {
		c.logger.Warn("web_search cache write failed", "dir", c.dir, "err", err)
		return
	}
	c.prune()
}

func (c *cache) write(key string, e cacheEntry) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(f.Name())
		return errors.Join(werr, cerr)
	}
	// Rename is atomic: a concurrent reader sees the old file or the new
	// one, never half of one.
	if err := os.Rename(f.Name(), filepath.Join(c.dir, key+".json")); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// prune keeps at most max files, removing the least recently written.
// Expired files are removed when read, so the directory stays bounded either
// way.
func (c *cache) prune() {
	c.mu.Lock()
	defer c.mu.Unlock()
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, de := range ents {
		if de.IsDir() || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		files = append(files, file{de.Name(), info.ModTime()})
	}
	if len(files) <= c.max {
		return
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	for _, f := range files[:len(files)-c.max] {
		_ = os.Remove(filepath.Join(c.dir, f.name))
	}
}

// cacheKey is a digest of everything that changes the answer: the query
// (case-folded, whitespace collapsed), the options, and the identities
// (kind and base URL, not the names) of the configured providers, so a new
// provider list is not served old answers and a renamed one still is.
func cacheKey(q query, providers string) string {
	b, _ := json.Marshal(struct {
		V         int      `json:"v"`
		Q         string   `json:"q"`
		Count     int      `json:"count"`
		Freshness string   `json:"freshness"`
		Lang      string   `json:"lang"`
		Site      string   `json:"site"`
		Allowed   []string `json:"allowed"`
		Blocked   []string `json:"blocked"`
		Providers string   `json:"providers"`
	}{2, strings.ToLower(strings.Join(strings.Fields(q.Text), " ")), q.Count, q.Freshness, q.Lang, q.Site, q.Allowed, q.Blocked, providers})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
