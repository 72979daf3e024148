package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/tools/websearch"
)

// newWebSearch builds web_search from the "search" config section. API keys
// named by api_key_env are read here (only cmd reads the environment), and
// the query cache is persisted under --data/websearch-cache unless
// search.cache.memory_only is set, so that two `toolhost call` processes and
// a restarted server share it.
func newWebSearch(c *common, logger *slog.Logger) (*websearch.Tool, error) {
	cfg := c.cfg.Search
	if cfg.Providers != nil {
		// A copy, so resolving keys does not write them into c.cfg; nil
		// (the embedded default) and [] (search off) stay distinct.
		cfg.Providers = append(make([]websearch.ProviderConfig, 0, len(cfg.Providers)), cfg.Providers...)
	}
	cfg.ResolveKeys(os.LookupEnv)
	if cfg.Cache.Dir == "" && !cfg.Cache.MemoryOnly {
		cfg.Cache.Dir = filepath.Join(c.data, "websearch-cache")
	}
	ws, err := websearch.New(cfg, websearch.Deps{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("web_search: %w", err)
	}
	return ws, nil
}
