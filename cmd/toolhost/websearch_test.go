package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/toolhost/toolhost/tools"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// searxngFixture replays a SearXNG JSON answer (the web_search package's
// testdata, SearXNG 2024.x–2025.x format, docs.searxng.org "Search API") on
// 127.0.0.1 and counts the requests it serves.
func searxngFixture(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "tools", "websearch", "testdata", "searxng", "search"))
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// The acceptance case of web_search: `toolhost call` against a configured
// SearXNG-format fixture returns 5 normalized results, and the same command
// run again — a new executor and a new tool, as a second process would have —
// is answered from the cache persisted under --data, without reaching the
// engine and without a paid unit.
func TestCallWebSearchTwiceIsServedFromTheCache(t *testing.T) {
	srv, hits := searxngFixture(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	cfg := `{"search": {"providers": [{"kind": "searxng", "base_url": "` + srv.URL + `", "timeout": "10s"}]}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"call", "--data", filepath.Join(dir, "data"), "--config", cfgPath,
		"web_search", `{"query":"perovskite encapsulation stability","count":5}`}

	type callResult struct {
		Status            string  `json:"status"`
		IsError           bool    `json:"isError"`
		Units             float64 `json:"units"`
		StructuredContent struct {
			Query    string `json:"query"`
			Provider string `json:"provider"`
			Cached   bool   `json:"cached"`
			Results  []struct {
				Title   string `json:"title"`
				URL     string `json:"url"`
				Snippet string `json:"snippet"`
				Source  string `json:"source"`
			} `json:"results"`
		} `json:"structuredContent"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	call := func() callResult {
		t.Helper()
		var stdout bytes.Buffer
		var stderr syncBuffer
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
		var r callResult
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, stdout.String())
		}
		return r
	}

	first := call()
	sc := first.StructuredContent
	if first.Status != "success" || sc.Cached || sc.Provider != "searxng" || len(sc.Results) != 5 || first.Units != 1 {
		t.Fatalf("first call: status %s cached %v provider %q results %d units %v", first.Status, sc.Cached, sc.Provider, len(sc.Results), first.Units)
	}
	seen := map[string]bool{}
	for _, r := range sc.Results {
		if strings.Contains(r.URL, "utm_") || strings.Contains(r.URL, "duckduckgo.com/l/") || strings.ContainsAny(r.Title+r.Snippet, "<>") || seen[r.URL] || r.Source == "" {
			t.Errorf("result not normalized (or duplicated): %+v", r)
		}
		seen[r.URL] = true
	}
	if hits.Load() != 1 {
		t.Fatalf("fixture hits after first call: %d", hits.Load())
	}

	second := call()
	if !second.StructuredContent.Cached || len(second.StructuredContent.Results) != 5 || second.Units != 0 || hits.Load() != 1 {
		t.Fatalf("second call: cached %v results %d units %v fixture hits %d", second.StructuredContent.Cached, len(second.StructuredContent.Results), second.Units, hits.Load())
	}
	// Each rendering has its own fence boundary; what is inside is the same.
	firstText, ok1 := tools.Unfence(first.Content[0].Text)
	secondText, ok2 := tools.Unfence(second.Content[0].Text)
	if !ok1 || !ok2 || secondText != firstText {
		t.Errorf("cached rendering differs (fenced %v %v):\n%s\n---\n%s", ok1, ok2, first.Content[0].Text, second.Content[0].Text)
	}
}

// A typo in the search section is a start-up error, not a silent default.
func TestSearchConfigIsStrict(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"search": {"providers": [{"kind": "searxng", "baseurl": "http://127.0.0.1:1"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	var stderr syncBuffer
	code := run(context.Background(), []string{"call", "--data", dir, "--config", cfgPath, "web_search", `{"query":"x"}`}, strings.NewReader(""), &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "baseurl") {
		t.Fatalf("exit %d stderr %q", code, stderr.String())
	}
}
