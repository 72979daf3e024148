package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fetch.max_redirects through the config file and toolhost call: 0
// follows no redirect (a tool error naming where the page redirects, the
// target never requested), a file without the key keeps following (the
// default, 5), and 1 follows one.
func TestCallFetchPageFollowsMaxRedirectsOfTheConfig(t *testing.T) {
	var targetHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", http.StatusFound) })
	mux.HandleFunc("/target", func(w http.ResponseWriter, _ *http.Request) {
		targetHits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "the target page")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := `"allow_private": ["127.0.0.1"], "ignore_robots": true, "cache_ttl": "-1s"`
	tests := []struct {
		name, fetch string
		code        int
		out         string
		hits        int32
	}{
		{"0 follows none", `"max_redirects": 0, ` + base, exitToolError,
			"too many redirects: " + srv.URL + "/start redirects to " + srv.URL + "/target, and this server follows no redirects (fetch.max_redirects is 0)", 0},
		{"no key: the default follows", base, exitOK, "the target page", 1},
		{"1 follows one", `"max_redirects": 1, ` + base, exitOK, "the target page", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targetHits.Store(0)
			cfg := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(cfg, []byte(`{"fetch": {`+tt.fetch+`}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "call", "--data", t.TempDir(), "--config", cfg, "fetch_page", `{"url": "`+srv.URL+`/start"}`)
			if code != tt.code || !strings.Contains(out, tt.out) {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s\nwant stdout containing %q", code, tt.code, out, errOut, tt.out)
			}
			if code == exitToolError && !strings.Contains(out, "too_many_redirects") {
				t.Fatalf("no too_many_redirects code in %s", out)
			}
			if got := targetHits.Load(); got != tt.hits {
				t.Fatalf("the redirect target was requested %d times, want %d", got, tt.hits)
			}
		})
	}
}
