package websearch

// Fixture servers for the search engines. Each one listens on 127.0.0.1 and
// replays its engine's real wire format; the bodies live in testdata/ and
// their shapes come from the engines' public documentation:
//
//   - SearXNG: docs.searxng.org, "Search API" (dev/search_api; GET /search
//     with q, format=json, pageno, time_range, language) and the JSON the
//     webapp writes in SearXNG 2024.x–2025.x (searx/webutils.py,
//     get_json_response): query, number_of_results, results[url, title,
//     content, publishedDate (ISO 8601 or null), engine, engines, positions,
//     score, category, template, parsed_url], answers, corrections,
//     infoboxes, suggestions, unresponsive_engines. Its limiter answers 429.
//   - Brave Search API: api-dashboard.search.brave.com API reference
//     "Web search" (GET /res/v1/web/search, X-Subscription-Token, q, count
//     1–20, freshness pd|pw|pm|py, search_lang; default API version
//     2023-01-01) and "Response headers" (X-RateLimit-Limit, -Policy,
//     -Remaining, -Reset "1, 1419704"); response {type: "search", query,
//     mixed, web{type, results[title, url, description, page_age, profile,
//     meta_url, age, extra_snippets]}}; "web" is absent when nothing was
//     found; errors {type: "ErrorResponse", error{id, status, code, detail,
//     meta}}.
//   - Tavily: docs.tavily.com API reference "Search" (POST /search, JSON
//     body query, max_results, search_depth, topic, time_range,
//     include_domains, exclude_domains; Authorization: Bearer tvly-…),
//     response {query, follow_up_questions, answer, images, results[title,
//     url, content, score, raw_content], response_time, request_id}; errors
//     {"detail": {"error": …}} with 401, 429, 432, 433.
//   - DuckDuckGo HTML: the no-JavaScript results page (POST /html/ with q,
//     kl, df) as served in 2025: div.result > a.result__a whose href is a
//     //duckduckgo.com/l/?uddg= redirect, a.result__snippet, ads marked
//     result--ad linking to /y.js, div.no-results for an empty search, and
//     a 202 "anomaly-modal" challenge page for suspected bots.

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/tools"
)

// Scenario modes a fixture can replay.
const (
	modeSuccess   = "success"
	modeEmpty     = "empty"
	modeLimited   = "429"
	mode5xx       = "5xx"
	modeMalformed = "malformed"
	modeSlow      = "slow"
	modeHeld      = "held"      // answer successfully once released
	modeChallenge = "challenge" // html only: 202 bot check
	modeMixed     = "mixed"     // searxng only: results from many domains
	modeQuota     = "432"       // tavily only: plan usage limit
)

// engineFixture describes one engine's endpoint and canned bodies.
type engineFixture struct {
	kind        string
	method      string
	path        string
	contentType string
	bodies      map[string]string // mode → testdata file
	malformed   string            // a 200 body that is not the engine's format
	limitBody   string            // testdata file for 429, "" for a plain text body
	key         string            // API key the fixture demands ("" for none)
}

var engines = []engineFixture{
	{
		kind: KindSearXNG, method: http.MethodGet, path: "/search", contentType: "application/json",
		bodies:    map[string]string{modeSuccess: "searxng/search", modeEmpty: "searxng/empty.json", modeMixed: "searxng/mixed.json"},
		malformed: `<!DOCTYPE html><html><body>format json is not enabled</body></html>`,
	},
	{
		kind: KindBrave, method: http.MethodGet, path: "/res/v1/web/search", contentType: "application/json",
		bodies:    map[string]string{modeSuccess: "brave/success.json", modeEmpty: "brave/empty.json"},
		malformed: `{"type": "search", "web": {"results": [{"title": 1`,
		limitBody: "brave/ratelimited.json",
		key:       "BSA-test-secret-7f3a9c",
	},
	{
		kind: KindTavily, method: http.MethodPost, path: "/search", contentType: "application/json",
		bodies:    map[string]string{modeSuccess: "tavily/success.json", modeEmpty: "tavily/empty.json"},
		malformed: `{"query": "x", "answer": null}`,
		limitBody: "tavily/ratelimited.json",
		key:       "tvly-test-secret-41b2e8",
	},
	{
		kind: KindHTML, method: http.MethodPost, path: "/html/", contentType: "text/html; charset=UTF-8",
		bodies:    map[string]string{modeSuccess: "html/success.html", modeEmpty: "html/empty.html", modeChallenge: "html/challenge.html"},
		malformed: "@notresults",
	},
}

func engineByKind(t testing.TB, kind string) engineFixture {
	t.Helper()
	for _, e := range engines {
		if e.kind == kind {
			return e
		}
	}
	t.Fatalf("no fixture for %s", kind)
	return engineFixture{}
}

// request is what a fixture saw.
type request struct {
	Method string
	Path   string
	Query  map[string][]string
	Form   map[string][]string
	Header http.Header
	Body   []byte
}

// fixture is a running fake engine.
type fixture struct {
	eng     engineFixture
	srv     *httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	mode    string
	headers map[string]string // extra response headers for the next answers
	last    request
	// held is closed by release: modeHeld answers then. arrived is told
	// of each request modeHeld holds.
	held        chan struct{}
	releaseOnce sync.Once
	arrived     chan struct{}
	// cancelled counts requests whose client went away before the
	// answer; cancels is told of each.
	cancelled atomic.Int64
	cancels   chan struct{}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFixture(t testing.TB, eng engineFixture, mode string) *fixture {
	t.Helper()
	f := &fixture{eng: eng, mode: mode, held: make(chan struct{}), arrived: make(chan struct{}, 16), cancels: make(chan struct{}, 16)}
	bodies := map[string][]byte{}
	for m, file := range eng.bodies {
		bodies[m] = readTestdata(t, file)
	}
	malformed := []byte(eng.malformed)
	if strings.HasPrefix(eng.malformed, "@") {
		malformed = readTestdata(t, "html/"+eng.malformed[1:]+".html")
	}
	var limitBody []byte
	if eng.limitBody != "" {
		limitBody = readTestdata(t, eng.limitBody)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		rec := request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			r.Body = io.NopCloser(bytes.NewReader(body))
			if err := r.ParseForm(); err == nil {
				rec.Form = r.PostForm
			}
		}
		f.mu.Lock()
		f.last = rec
		mode := f.mode
		extra := f.headers
		f.mu.Unlock()

		if r.Method != eng.method || r.URL.Path != eng.path {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		switch eng.kind {
		case KindBrave:
			if r.Header.Get("X-Subscription-Token") != eng.key {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				// Echo the token, as a careless proxy might: it must not
				// reach the tool's output or logs.
				_, _ = io.WriteString(w, `{"type":"ErrorResponse","error":{"status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token `+r.Header.Get("X-Subscription-Token")+` is invalid."}}`)
				return
			}
		case KindTavily:
			if r.Header.Get("Authorization") != "Bearer "+eng.key {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`)
				return
			}
		}
		for k, v := range extra {
			w.Header().Set(k, v)
		}
		switch mode {
		case modeSuccess, modeEmpty, modeMixed:
			w.Header().Set("Content-Type", eng.contentType)
			_, _ = w.Write(bodies[mode])
		case modeChallenge:
			w.Header().Set("Content-Type", eng.contentType)
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write(bodies[mode])
		case modeLimited:
			if limitBody != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write(limitBody)
			} else {
				http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
			}
		case modeQuota:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(432)
			_, _ = io.WriteString(w, `{"detail":{"error":"This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com"}}`)
		case mode5xx:
			http.Error(w, "502 Bad Gateway", http.StatusBadGateway)
		case modeMalformed:
			w.Header().Set("Content-Type", eng.contentType)
			_, _ = w.Write(malformed)
		case modeSlow:
			// Answer only when the client has given up.
			<-r.Context().Done()
			f.cancel()
		case modeHeld:
			tell(f.arrived)
			select {
			case <-f.held:
				w.Header().Set("Content-Type", eng.contentType)
				_, _ = w.Write(bodies[modeSuccess])
			case <-r.Context().Done():
				f.cancel()
			}
		default:
			http.Error(w, "unknown fixture mode "+mode, http.StatusTeapot)
		}
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(f.release) // before Close, which waits for held requests
	return f
}

// tell signals on ch without ever blocking the fixture (ch has room for
// what a test waits for).
func tell(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (f *fixture) cancel() {
	f.cancelled.Add(1)
	tell(f.cancels)
}

// hold makes the fixture hold every request until release (a slow engine
// whose answer comes exactly when the test wants it).
func (f *fixture) hold() { f.setMode(modeHeld) }

// release lets the held requests, and those to come, answer.
func (f *fixture) release() { f.releaseOnce.Do(func() { close(f.held) }) }

// waitArrival waits until the fixture holds one more request.
func (f *fixture) waitArrival(t *testing.T, what string) {
	t.Helper()
	waitOn(t, f.arrived, what)
}

// waitCancelled waits until one more request's client went away.
func (f *fixture) waitCancelled(t *testing.T, what string) {
	t.Helper()
	waitOn(t, f.cancels, what)
}

// waitOn waits for a signal on ch; the bound only turns a hang into a
// failure that says what did not happen.
func waitOn(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func (f *fixture) setMode(m string) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

func (f *fixture) setHeaders(h map[string]string) {
	f.mu.Lock()
	f.headers = h
	f.mu.Unlock()
}

func (f *fixture) lastRequest() request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// providerConfig points a provider of the fixture's kind at it.
func (f *fixture) providerConfig(name string, timeout time.Duration) ProviderConfig {
	return ProviderConfig{Kind: f.eng.kind, Name: name, BaseURL: f.srv.URL, APIKey: f.eng.key, Timeout: duration.Duration(timeout)}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// harness is web_search behind the real executor pipeline.
type harness struct {
	tool  *Tool
	exec  *tools.Executor
	clock *fakeClock
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{clock: newClock(), logs: &syncBuffer{}}
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tool, err := New(cfg, Deps{Logger: logger, Clock: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := tools.NewExecutor(tools.Options{Logger: logger}, tool)
	if err != nil {
		t.Fatal(err)
	}
	h.tool, h.exec = tool, exec
	return h
}

func (h *harness) call(t *testing.T, args string, lang catalog.Lang) *tools.Outcome {
	t.Helper()
	out, err := h.exec.Execute(t.Context(), tools.Proposal{Tool: "web_search", Args: json.RawMessage(args), CallID: "t", Lang: lang})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// output decodes a successful outcome's structured content.
func output(t *testing.T, o *tools.Outcome) Output {
	t.Helper()
	if o.IsError {
		t.Fatalf("call failed: %s: %s", o.Code, o.Message)
	}
	var out Output
	if err := json.Unmarshal(o.Structured, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// errorDetails decodes the providers list of a failed outcome.
func errorDetails(t *testing.T, o *tools.Outcome) []map[string]any {
	t.Helper()
	var body struct {
		Error struct {
			Providers []map[string]any `json:"providers"`
		} `json:"error"`
	}
	if err := json.Unmarshal(o.Structured, &body); err != nil {
		t.Fatal(err)
	}
	return body.Error.Providers
}

func noCache() CacheConfig { return CacheConfig{MaxEntries: -1} }
