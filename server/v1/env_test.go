package v1_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"github.com/toolhost/toolhost/internal/identity"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server"
	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/server/v1/upstream/openai"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/sleep"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// labels: every test runs with the default label and another one, to prove
// the label is not hard-coded.
var labels = []string{"toolhost", "acme_tools"}

// recordingExec is the real executor with a record of the proposals it got
// and, for the internal-error test, an injected runtime failure (the way a
// journal write failure surfaces) for one tool name.
type recordingExec struct {
	*tools.Executor
	mu        sync.Mutex
	proposals []tools.Proposal
	outcomes  []*tools.Outcome
	// crashTool fails with a runtime error once waitStarted calls of other
	// tools have started.
	crashTool   string
	waitStarted int
	started     chan struct{}
	// finished receives every outcome (buffered; dropped when full).
	finished chan *tools.Outcome
}

func (e *recordingExec) Execute(ctx context.Context, p tools.Proposal) (*tools.Outcome, error) {
	e.mu.Lock()
	e.proposals = append(e.proposals, p)
	e.mu.Unlock()
	if e.crashTool != "" && p.Tool == e.crashTool {
		for range e.waitStarted {
			<-e.started
		}
		return nil, errors.New("journal: write failed (injected)")
	}
	select {
	case e.started <- struct{}{}:
	default:
	}
	out, err := e.Executor.Execute(ctx, p)
	if out != nil {
		e.mu.Lock()
		e.outcomes = append(e.outcomes, out)
		e.mu.Unlock()
		select {
		case e.finished <- out:
		default:
		}
	}
	return out, err
}

func (e *recordingExec) Proposals() []tools.Proposal {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]tools.Proposal(nil), e.proposals...)
}

// getTimeClock is the clock get_time reads in these tests: a fixed
// instant, so that its results can be in golden files.
func getTimeClock() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }

// envTools are the builtins, get_time on getTimeClock, and sl.
func envTools(sl *sleep.Tool) []tools.Tool {
	ts := builtin.All()
	for i, tl := range ts {
		if tl.Spec().Name == "get_time" {
			ts[i] = builtin.NewGetTime(getTimeClock)
		}
	}
	return append(ts, sl)
}

type env struct {
	t      *testing.T
	label  string
	url    string
	fake   *fakeupstream.Server
	exec   *recordingExec
	sleep  *sleep.Tool
	rounds *v1.RoundStore
}

type envOption func(*v1.Options, *recordingExec)

func newEnv(t *testing.T, label string, rounds []fakeupstream.Round, opts ...envOption) *env {
	t.Helper()
	return newEnvScript(t, label, fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: rounds}}}, opts...)
}

func newEnvScript(t *testing.T, label string, script fakeupstream.Script, opts ...envOption) *env {
	t.Helper()
	fake, err := fakeupstream.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	sl := sleep.New()
	ex, err := tools.NewExecutor(tools.Options{}, envTools(sl)...)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingExec{Executor: ex, started: make(chan struct{}, 16), finished: make(chan *tools.Outcome, 64)}
	store := v1.NewRoundStore(0)
	up := openai.New(openai.Config{Name: "fake", BaseURL: fake.URL(), APIKey: "sk-test"})
	router, err := loop.NewRouter(
		&loop.Route{Name: "fake", Protocol: loop.DialectOpenAI, Models: []string{"fake-*"}, SupportsTools: true,
			Prices: map[string]loop.Price{"*": {Input: 1_000_000, CachedInput: 500_000, Output: 2_000_000}}, Upstream: up},
		&loop.Route{Name: "text-only", Protocol: loop.DialectOpenAI, Models: []string{"text-*"}, SupportsTools: false, Upstream: up},
	)
	if err != nil {
		t.Fatal(err)
	}
	o := v1.Options{Label: label, Enabled: true, Router: router, Rounds: store}
	for _, f := range opts {
		f(&o, rec)
	}
	o.Runner = loop.NewRunner(rec, loop.RunnerOptions{Rounds: store})
	h := v1.New(o)
	srv := server.New(server.Options{Routes: h.Routes()})
	hs := httptest.NewServer(testKey(pinnedRequestIDs(srv.Handler())))
	t.Cleanup(hs.Close)
	return &env{t: t, label: label, url: hs.URL, fake: fake, exec: rec, sleep: sl, rounds: store}
}

// testKey gives a request whose X-Test-Key header names an API key the
// identity authentication would give it (the key's own account).
func testKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("X-Test-Key"); k != "" {
			r = r.WithContext(identity.NewContext(r.Context(), identity.Identity{KeyID: k}))
		}
		next.ServeHTTP(w, r)
	})
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// post sends body (LABEL replaced by the env's label) to
// /v1/chat/completions.
func (e *env) post(ctx context.Context, body string, hdr map[string]string) response {
	e.t.Helper()
	body = strings.ReplaceAll(body, "LABEL", e.label)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if _, ok := hdr["X-Request-Id"]; !ok {
		req.Header.Set("X-Request-Id", "req_golden")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// upstreamRequests decodes what the fake upstream received.
func (e *env) upstreamRequests() []map[string]any {
	var out []map[string]any
	for _, b := range e.fake.Requests() {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// normalize makes a JSON value comparable across runs and labels: every
// "ms" becomes 0 and the label key becomes LABEL.
func normalize(v any, label string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if k == "ms" {
				out[k] = 0
				continue
			}
			if k == label {
				k = "LABEL"
			}
			out[k] = normalize(val, label)
		}
		return out
	case []any:
		for i := range x {
			x[i] = normalize(x[i], label)
		}
		return x
	case string:
		return strings.ReplaceAll(x, label, "LABEL")
	}
	return v
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

func encodeJSON(v any, indent bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v)
	return buf.Bytes()
}

// normalizedBody renders a JSON body for a golden file.
func normalizedBody(t *testing.T, b []byte, label string) []byte {
	return encodeJSON(normalize(decodeJSON(t, b), label), true)
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("unexpected SSE line %q", line)
		}
		out = append(out, strings.TrimPrefix(line, "data: "))
	}
	return out
}

// normalizedStream renders an SSE body for a golden file: one normalized
// JSON payload per line. Hosted calls of a round run concurrently, so a run
// of consecutive tool notices is put in a canonical order (starts before
// ends, then by call id); checkStreamInvariants checks the real order.
func normalizedStream(t *testing.T, b []byte, label string) []byte {
	var buf bytes.Buffer
	var run []map[string]any
	flush := func() {
		sort.SliceStable(run, func(i, j int) bool {
			a, b := toolNotice(run[i], "LABEL"), toolNotice(run[j], "LABEL")
			if (a["status"] == "") != (b["status"] == "") {
				return a["status"] == ""
			}
			return a["id"].(string) < b["id"].(string)
		})
		for _, c := range run {
			buf.Write(encodeJSON(c, false))
		}
		run = nil
	}
	for _, ev := range sseEvents(t, b) {
		if ev == "[DONE]" {
			flush()
			buf.WriteString("[DONE]\n")
			continue
		}
		c := normalize(decodeJSON(t, []byte(ev)), label).(map[string]any)
		if toolNotice(c, "LABEL") != nil {
			run = append(run, c)
			continue
		}
		flush()
		buf.Write(encodeJSON(c, false))
	}
	flush()
	return buf.Bytes()
}

// toolNotice returns the "tool" object of an extension chunk, or nil.
func toolNotice(c map[string]any, label string) map[string]any {
	ext, _ := c[label].(map[string]any)
	tool, _ := ext["tool"].(map[string]any)
	return tool
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", path, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// pinnedRequestIDs lets a test choose a request's id (for golden files) by
// its X-Request-Id header: the server itself never trusts that header.
func pinnedRequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Request-Id"); id != "" {
			r.Header.Del("X-Request-Id")
			r = r.WithContext(server.WithRequestID(r.Context(), id))
		}
		next.ServeHTTP(w, r)
	})
}
