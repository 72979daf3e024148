package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
)

// gated is a sandbox-level tool (its record is in the journal while it
// runs) that tells the test its execution id and runs until released.
type gated struct {
	ids     chan string
	release chan struct{}
}

func (g *gated) Spec() catalog.Spec {
	return catalog.Spec{
		Name: "gated", Version: "1", Description: catalog.Text{ZH: "等放行", EN: "waits to be released"},
		Input: json.RawMessage(`{"type":"object"}`), SideEffect: catalog.SideEffectSandbox,
	}
}

func (g *gated) Call(ctx context.Context, inv *tools.Invocation) (*tools.Result, error) {
	g.ids <- inv.ID
	select {
	case <-g.release:
		return &tools.Result{Structured: map[string]any{"done": true}, Text: "released"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startGated serves an MCP endpoint with the gated tool; callers name
// their account in X-Account.
func startGated(t *testing.T, stateless bool) (string, *gated) {
	t.Helper()
	g := &gated{ids: make(chan string, 1), release: make(chan struct{})}
	exec, err := tools.NewExecutor(tools.Options{Policies: nil}, g)
	if err != nil {
		t.Fatal(err)
	}
	face := mcpface.New(exec, mcpface.Options{
		Lang: catalog.English, Stateless: stateless, WatchInterval: 10 * time.Millisecond,
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			if extra == nil || extra.Header == nil {
				return identity.Identity{}
			}
			return identity.Identity{AccountID: extra.Header.Get("X-Account")}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", g
}

// A client that subscribes to a running execution is told when its status
// changes and reads the result then: resources/subscribe before
// 2026-07-28, subscriptions/listen on it. Another account's execution and
// URIs that name none cannot be subscribed to.
//
// This is also the way the background job of a deferred call is followed:
// its receipt names the execution's resource.
func TestSubscribedExecutionTellsItsEnd(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.version, func(t *testing.T) {
			url, g := startGated(t, p.stateless)
			updated := make(chan string, 8)
			cs := connectVersion(t, url, p.version, http.Header{"X-Account": {"acct_a"}}, &sdk.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
					updated <- req.Params.URI
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := callInBackground(ctx, cs, "gated", map[string]any{})
			uri := mcpface.ExecutionURI(<-g.ids)

			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			if got := readStatus(ctx, t, cs, uri); got != "running" {
				t.Errorf("while it runs the resource says %q", got)
			}
			close(g.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-updated:
				if got != uri {
					t.Errorf("updated %q, want %q", got, uri)
				}
			case <-ctx.Done():
				t.Fatal("no notifications/resources/updated after the execution ended")
			}
			if got := readStatus(ctx, t, cs, uri); got != "success" {
				t.Errorf("after the notification the resource says %q", got)
			}

			if p.version >= "2026-07-28" {
				// The go-sdk client opens subscriptions/listen in the
				// background and never reports its error; the refusals
				// below are the same check (watches.subscribe), reached
				// with the listening request's caller, which the
				// notification above shows is carried.
				return
			}
			other := connectVersion(t, url, p.version, http.Header{"X-Account": {"acct_b"}}, nil)
			for _, bad := range []string{uri, "toolhost://executions/../x", "toolhost://executions/" + "<script>", "https://example.com/"} {
				if err := other.Subscribe(ctx, &sdk.SubscribeParams{URI: bad}); err == nil {
					t.Errorf("another account subscribed to %q", bad)
				}
			}
		})
	}
}

func readStatus(ctx context.Context, t *testing.T, cs *sdk.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	var rec struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Status
}
