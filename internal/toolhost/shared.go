package toolhost

import (
	"github.com/redis/go-redis/v9"

	"github.com/toolhost/toolhost/internal/sharedcache"
	"github.com/toolhost/toolhost/tools/fetchpage"
	"github.com/toolhost/toolhost/tools/websearch"
)

// sharedSearchCache is web_search's cache in the replicas' Redis, bounded
// like its local cache (search.cache.max_entries, default 1000; -1: none);
// nil without Redis.
func sharedSearchCache(o *Options, rdb *redis.Client) websearch.SharedCache {
	if rdb == nil || o.Config.Search.Cache.MaxEntries < 0 {
		return nil
	}
	return sharedcache.New(rdb, redisPrefix(o)+"websearch:", sharedcache.Options{Entries: o.Config.Search.Cache.MaxEntries})
}

// Bounds of fetch_page's pages in Redis: at most 256 pages of at most
// 1 MiB of extracted text each (a longer page stays in its replica's
// cache only).
const (
	sharedFetchEntries    = 256
	sharedFetchValueBytes = 1 << 20
)

// sharedFetchCache is fetch_page's page cache in the replicas' Redis, for
// fetch.cache_ttl; nil without Redis or with the cache off.
func sharedFetchCache(o *Options, rdb *redis.Client) fetchpage.SharedCache {
	if rdb == nil || o.Config.Fetch.CacheTTL < 0 {
		return nil
	}
	return sharedcache.New(rdb, redisPrefix(o)+"fetch:", sharedcache.Options{Entries: sharedFetchEntries, MaxValueBytes: sharedFetchValueBytes})
}
