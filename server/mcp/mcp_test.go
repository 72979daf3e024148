package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/sleep"
)

// headerTransport adds fixed headers to every request of the MCP client.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// watcher is a tool that tells the test when its context ends.
type watcher struct {
	started chan struct{}
	ended   chan error
}

func (w *watcher) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "watch", Version: "1", Description: catalog.Text{ZH: "等", EN: "wait"},
		Input: json.RawMessage(`{"type":"object"}`), SideEffect: catalog.SideEffectNone,
	}
}

func (w *watcher) Call(ctx context.Context, _ *tools.Invocation) (*tools.Result, error) {
	close(w.started)
	<-ctx.Done()
	w.ended <- ctx.Err()
	return nil, ctx.Err()
}

type env struct {
	url     string
	watcher *watcher
}

func start(t *testing.T, opts mcpface.Options) env {
	t.Helper()
	w := &watcher{started: make(chan struct{}), ended: make(chan error, 1)}
	ts := append(builtin.All(), sleep.New(), w)
	exec, err := tools.NewExecutor(tools.Options{}, ts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{MCP: mcpface.New(exec, opts).Handler()})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return env{url: hs.URL + "/mcp", watcher: w}
}

func connect(t *testing.T, url string, header http.Header, copts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts)
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headerTransport{header}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestToolsListFollowsAcceptLanguage(t *testing.T) {
	e := start(t, mcpface.Options{Lang: catalog.English})
	tests := []struct {
		header string
		want   string // start of get_time's description
	}{
		{"", "Returns the current time"},
		{"en-US,en;q=0.9", "Returns the current time"},
		{"zh-CN", "返回指定时区"},
		{"de-DE", "返回指定时区"},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Accept-Language", tt.header)
			}
			cs := connect(t, e.url, h, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*sdk.Tool{}
			for _, tl := range res.Tools {
				byName[tl.Name] = tl
			}
			gt := byName["get_time"]
			if gt == nil || !strings.HasPrefix(gt.Description, tt.want) {
				t.Fatalf("get_time = %+v, want description starting %q", gt, tt.want)
			}
			for _, name := range []string{"get_time", "roll_dice", "random_choice"} {
				a := byName[name].Annotations
				if a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
					t.Errorf("%s annotations = %+v, want read-only and closed-world", name, a)
				}
				if byName[name].OutputSchema == nil {
					t.Errorf("%s has no output schema", name)
				}
			}
		})
	}
}

func TestToolsCallThroughThePipeline(t *testing.T) {
	e := start(t, mcpface.Options{})
	cs := connect(t, e.url, nil, nil)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 20, "count": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("roll_dice failed: %+v", res.Content)
	}
	var dice struct {
		Results []int `json:"results"`
		Total   int   `json:"total"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &dice); err != nil || len(dice.Results) != 3 {
		t.Fatalf("structured = %s (%v)", b, err)
	}
	if res.Meta["toolhost/execution_id"] == nil {
		t.Fatal("no execution id in _meta")
	}

	// Bad arguments are results with isError, never protocol errors.
	for _, tt := range []struct {
		tool string
		args any
		want string
	}{
		{"roll_dice", map[string]any{"sides": 5000}, "maximum: got 5000, want 1000"},
		{"get_time", map[string]any{"timezone": "Mars/Base"}, `"Mars/Base"`},
		{"random_choice", map[string]any{}, "missing property 'options'"},
		{"roll_dice", json.RawMessage(`{"sides":20,"sides":6}`), `duplicate key "sides"`},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tt.tool, Arguments: tt.args})
		if err != nil {
			t.Fatalf("%s: protocol error %v", tt.tool, err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if !res.IsError || !strings.Contains(text, tt.want) {
			t.Fatalf("%s(%v): isError=%v text=%q, want %q", tt.tool, tt.args, res.IsError, text, tt.want)
		}
	}
}

func TestProgressNotificationsReachTheClient(t *testing.T) {
	e := start(t, mcpface.Options{})
	got := make(chan float64, 10)
	cs := connect(t, e.url, nil, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			got <- req.Params.Progress
		},
	})
	params := &sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 30, "steps": 3}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("sleep: %v %+v", err, res)
	}
	// The client dispatches notifications on its own goroutine, so the last
	// one may be handled just after the result arrives: wait for all three.
	var seen []float64
	for len(seen) < 3 {
		select {
		case p := <-got:
			seen = append(seen, p)
		case <-time.After(10 * time.Second):
			t.Fatalf("progress = %v, want [1 2 3]", seen)
		}
	}
	sort.Float64s(seen)
	if seen[0] != 1 || seen[1] != 2 || seen[2] != 3 {
		t.Fatalf("progress = %v, want [1 2 3]", seen)
	}
}

func TestCancellationReachesTheTool(t *testing.T) {
	e := start(t, mcpface.Options{})
	cs := connect(t, e.url, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "watch", Arguments: map[string]any{}})
		done <- err
	}()
	<-e.watcher.started
	cancel() // the SDK sends notifications/cancelled
	select {
	case err := <-e.watcher.ended:
		if err == nil {
			t.Fatal("tool context ended without error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's context was not cancelled")
	}
	<-done
	// The session still works.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time"}); err != nil {
		t.Fatal(err)
	}
}

func TestStatelessModeServesCalls(t *testing.T) {
	e := start(t, mcpface.Options{Stateless: true})
	cs := connect(t, e.url, nil, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time", Arguments: map[string]any{"timezone": "Asia/Tokyo"}})
	if err != nil || res.IsError {
		t.Fatalf("get_time: %v %+v", err, res)
	}
	if !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "+09:00") {
		t.Fatalf("text = %q", res.Content[0].(*sdk.TextContent).Text)
	}
}

func TestCrossOriginRequestsRefused(t *testing.T) {
	e := start(t, mcpface.Options{})
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status = %d, want 403", resp.StatusCode)
	}
}

var _ = httptest.NewServer
