package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of four", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 0.50, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p100", ms(1, 2, 3), 1, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("%s: percentile(p=%g) = %s, want %s", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestLoopbackClientRefusesOtherAddresses(t *testing.T) {
	hc := loopbackClient(2)
	for _, u := range []string{"http://192.0.2.1:9/mcp", "http://[2001:db8::1]:9/mcp"} {
		// Documentation ranges: the dialer refuses before any packet leaves.
		_, err := hc.Get(u)
		if err == nil || !strings.Contains(err.Error(), "loopback only") {
			t.Errorf("GET %s: err = %v, want a loopback-only refusal", u, err)
		}
	}
}

func TestFloorRefusesNonLoopbackAddress(t *testing.T) {
	if err := runFloor(context.Background(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("runFloor(0.0.0.0:0) = %v, want a loopback-only refusal", err)
	}
}

// TestFloorServesEcho runs the floor server and calls its tool with the same
// client code the load uses.
func TestFloorServesEcho(t *testing.T) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runFloor(ctx, addr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && err != http.ErrServerClosed {
			t.Errorf("floor: %v", err)
		}
	})
	hc := loopbackClient(2)
	tgt := floorTarget()
	if err := waitReady(ctx, hc, "http://"+addr+"/mcp", tgt, "/nonexistent"); err != nil {
		t.Fatal(err)
	}
	cs, err := connect(ctx, hc, "http://"+addr+"/mcp", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Echo: hi" {
		t.Fatalf("echo result = %+v", res)
	}
}

func TestCPUTimeOfThisProcess(t *testing.T) {
	// Burn a little CPU so the counter cannot be zero.
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	_ = x
	d, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Fatalf("cpuTime = %s, want > 0", d)
	}
}

// TestRawClientCallsAndChecksResults: the raw load client opens a session
// on a go-sdk server (SSE answers) and on one answering plain JSON, calls
// the tool, and reports a tool error and an unknown tool as failures.
func TestRawClientCallsAndChecksResults(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}, IsError: in.Message == "fail"}, nil, nil
		})
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}))
		ctx := context.Background()
		ok, err := connectRaw(ctx, srv.Client(), srv.URL, "t", "echo", map[string]any{"message": "hi"})
		if err != nil {
			t.Fatalf("json=%v: %v", jsonResponse, err)
		}
		for range 3 { // ids advance; every answer is matched to its call
			if err := ok.call(ctx); err != nil {
				t.Fatalf("json=%v: %v", jsonResponse, err)
			}
		}
		if err := ok.close(); err != nil {
			t.Errorf("close: %v", err)
		}
		for args, want := range map[string]string{"fail": "tool error", "": "not a result"} {
			tool := "echo"
			if args == "" {
				tool = "nope"
			}
			bad, err := connectRaw(ctx, srv.Client(), srv.URL, "t", tool, map[string]any{"message": args})
			if err != nil {
				t.Fatal(err)
			}
			if err := bad.call(ctx); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("json=%v tool %s: %v, want %q", jsonResponse, tool, err, want)
			}
		}
		srv.Close()
	}
}

func TestPoolWarmReadsHealthz(t *testing.T) {
	body := `{"status":"ok"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, body string
		warm       bool
		err        string
	}{
		{"full", `{"run_code":{"python":{"state":"ready","warm":2,"pool":2}}}`, true, ""},
		{"refilling", `{"run_code":{"python":{"state":"ready","warm":1,"pool":2}}}`, false, ""},
		{"compiling", `{"run_code":{"python":{"state":"loading","warm":0,"pool":2}}}`, false, ""},
		{"missing", `{"run_code":{"python":{"state":"unavailable","error":"no file","pool":2}}}`, false, "no file"},
		{"pool not sized yet", `{"run_code":{"python":{"state":"ready","warm":0,"pool":0}}}`, false, ""},
		{"old server", `{"status":"ok"}`, false, "says nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body = tc.body
			warm, err := poolWarm(context.Background(), srv.Client(), srv.URL, "python")
			if warm != tc.warm || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("poolWarm = %v, %v; want %v, error containing %q", warm, err, tc.warm, tc.err)
			}
		})
	}
}
