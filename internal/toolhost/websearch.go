package toolhost

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/toolhost/toolhost/tools/websearch"
)

// newWebSearch builds web_search from the "search" config section. API keys
// named by api_key_env are read here through o.LookupEnv (only cmd reads
// the environment), and the query cache is persisted under
// <data>/websearch-cache unless search.cache.memory_only is set, so that
// two `toolhost call` processes and a restarted server share it; with a
// shared cache (Redis, serve with --redis) the replicas share it there
// instead.
func newWebSearch(o *Options, logger *slog.Logger, shared websearch.SharedCache) (*websearch.Tool, error) {
	cfg := o.Config.Search
	if cfg.Providers != nil {
		// A copy, so resolving keys does not write them into o.Config; nil
		// (the embedded default) and [] (search off) stay distinct.
		cfg.Providers = append(make([]websearch.ProviderConfig, 0, len(cfg.Providers)), cfg.Providers...)
	}
	cfg.ResolveKeys(o.lookupEnv)
	if cfg.Cache.Dir == "" && !cfg.Cache.MemoryOnly {
		cfg.Cache.Dir = filepath.Join(o.Data, "websearch-cache")
	}
	ws, err := websearch.New(cfg, websearch.Deps{Logger: logger, Shared: shared, Tracer: o.telemetry().Tracer, Meter: o.telemetry().Meter})
	if err != nil {
		return nil, fmt.Errorf("web_search: %w", err)
	}
	return ws, nil
}
