package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
)

// remoteEnv is the MCP face over an executor whose one remote server
// (the go-sdk test server, registered as "demo") offers the irreversible
// demo__write.
type remoteEnv struct {
	url  string
	ts   *testserver.Server
	js   journal.Store
	jr   *journal.Journal
	exec *tools.Executor
}

func startRemote(t *testing.T) remoteEnv {
	t.Helper()
	return startRemoteWith(t, remoteOptions{})
}

// remoteOptions vary startRemote: the stores the journal and the
// approvals live in (memory without), and the go-sdk stateless mode, in
// which a client negotiates protocol 2026-07-28.
type remoteOptions struct {
	journal   journal.Store
	approvals approval.Store
	stateless bool
	// upstream, when set, is another env's remote server to register
	// (a second replica of the same deployment).
	upstream *testserver.Server
}

func startRemoteWith(t *testing.T, o remoteOptions) remoteEnv {
	t.Helper()
	ctx := context.Background()
	ts := o.upstream
	if ts == nil {
		ts = testserver.New(false)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", ts.Handler())
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	st := mcpremote.NewMemStore()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: seal, Dial: dial, ProbeTimeout: time.Second})
	t.Cleanup(gw.Close)
	// Both accounts register the server as "demo": their demo__write
	// calls are the same tool, in two tenants.
	now := time.Now()
	for _, account := range []string{"acct_a", "acct_b"} {
		srv := mcpremote.Server{ID: "mcpsrv_demo_" + account, AccountID: account, Name: "demo", URL: up.URL + "/mcp", Enabled: true,
			Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, CreatedAt: now, UpdatedAt: now}
		if srv.Sealed, err = seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateMCPServer(ctx, srv, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := gw.Refresh(ctx, srv); err != nil {
			t.Fatal(err)
		}
	}
	js := o.journal
	if js == nil {
		js = journal.NewMemStore()
	}
	jr := journal.New(js, journal.Options{InstanceID: "mcp-test-" + approval.NewID()})
	t.Cleanup(jr.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: gw, Journal: jr, Approvals: o.approvals})
	if err != nil {
		t.Fatal(err)
	}
	face := mcpface.New(exec, mcpface.Options{
		Stateless: o.stateless,
		AccountOf: func(r *http.Request) string { return r.Header.Get("X-Account") },
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: extra.Header.Get("X-Account"), KeyID: extra.Header.Get("X-Key")}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	return remoteEnv{url: hs.URL + "/mcp", ts: ts, js: js, jr: jr, exec: exec}
}

// events is the states of an execution's events and its prepared event's
// detail.
func (e remoteEnv) events(t *testing.T, id string) (states []journal.State, prepared string) {
	t.Helper()
	evs, err := e.js.Events(context.Background(), "acct_a", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		states = append(states, ev.State)
		if ev.State == journal.StatePrepared {
			prepared = string(ev.Detail)
		}
	}
	return states, prepared
}

// A client that declared elicitation is asked, in form mode, whenever a
// call needs approval: accept with approve true runs exactly that call
// (journaled awaiting_approval, then prepared under the approval decided
// via mcp_elicitation by the caller's key); decline, cancel, an accept
// without approve and a failed elicitation end approval_declined with nothing run; every call,
// the same or with another argument, asks again.
func TestMCPElicitationAsksForApproval(t *testing.T) {
	e := startRemote(t)
	var mu sync.Mutex
	var asked []*sdk.ElicitParams
	answer := &sdk.ElicitResult{}
	cs := connect(t, e.url, http.Header{"X-Account": {"acct_a"}, "X-Key": {"key_1"}}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params)
			if answer == nil {
				return nil, errors.New("the client's form broke")
			}
			return answer, nil
		},
	})
	call := func(ans *sdk.ElicitResult, note string) *sdk.CallToolResult {
		t.Helper()
		mu.Lock()
		answer = ans
		mu.Unlock()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "demo__write", Arguments: map[string]any{"note": note}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	accept := &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}

	res := call(accept, "wire the money")
	if res.IsError || e.ts.Calls("write") != 1 {
		t.Fatalf("accepted call: %+v, %d runs", res, e.ts.Calls("write"))
	}
	p := asked[0]
	for _, want := range []string{"demo__write", "Writes a note", `"note":"wire the money"`, "apr_", "Side effect: irreversible"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, p.Message)
		}
	}
	if p.Mode != "form" {
		t.Errorf("mode %q", p.Mode)
	}
	id, _ := res.Meta["toolhost/execution_id"].(string)
	if err := e.jr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	states, prepared := e.events(t, id)
	if !containsInOrder(states, journal.StateAwaitingApproval, journal.StatePrepared) {
		t.Errorf("states %v", states)
	}
	if !strings.Contains(prepared, `"decided_via":"`+approval.ViaElicitation+`"`) || !strings.Contains(prepared, `"decided_by":"key_1"`) {
		t.Errorf("prepared %s", prepared)
	}

	declines := []struct {
		name string
		ans  *sdk.ElicitResult
	}{
		{"decline", &sdk.ElicitResult{Action: "decline"}},
		{"cancel", &sdk.ElicitResult{Action: "cancel"}},
		{"accept without approve", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}},
		{"elicitation error", nil},
	}
	for _, tt := range declines {
		t.Run(tt.name, func(t *testing.T) {
			res := call(tt.ans, "wire the money")
			em, _ := res.Meta["toolhost/error"].(map[string]any)
			if !res.IsError || em["code"] != tools.CodeApprovalDeclined || e.ts.Calls("write") != 1 {
				t.Fatalf("%+v, %d runs", res, e.ts.Calls("write"))
			}
		})
	}
	// The same call and another argument each ask (approvals are per call).
	if res := call(accept, "wire the money"); res.IsError || e.ts.Calls("write") != 2 {
		t.Fatalf("second accepted call: %+v", res)
	}
	if res := call(accept, "wire more money"); res.IsError || e.ts.Calls("write") != 3 {
		t.Fatalf("changed argument: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 7 || !strings.Contains(asked[len(asked)-1].Message, "wire more money") {
		t.Fatalf("asked %d times; last %q", len(asked), asked[len(asked)-1].Message)
	}
}

func containsInOrder(states []journal.State, want ...journal.State) bool {
	for _, s := range states {
		if len(want) > 0 && s == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

// Hostile arguments are shown escaped and clipped: a bidirectional
// override, control characters and a 100 KB string cannot reorder, hide
// or flood the approval message.
func TestMCPElicitationMessageEscapesArguments(t *testing.T) {
	e := startRemote(t)
	msgs := make(chan string, 1)
	cs := connect(t, e.url, http.Header{"X-Account": {"acct_a"}}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			msgs <- req.Params.Message
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	})
	note := "safe\u202eyenom erif\u200b\x1b[2J\r" + strings.Repeat("x", 100<<10)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "demo__write", Arguments: map[string]any{"note": note}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || e.ts.Calls("write") != 0 {
		t.Fatalf("%+v", res)
	}
	msg := <-msgs
	for _, bad := range []string{"\u202e", "\u200b", "\x1b", "\r"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message carries %q raw", bad)
		}
	}
	if !strings.Contains(msg, `\u202e`) || !strings.Contains(msg, `\u200b`) {
		t.Errorf("message does not show the escapes: %.300s", msg)
	}
	if len(msg) > 8<<10 || !strings.Contains(msg, "bytes in all") {
		t.Errorf("message of %d bytes, not clipped", len(msg))
	}
}

// A client that cancels the call while its user is being asked ends it
// cancelled_before_commit; nothing runs, not even when the user accepts
// afterwards. While it waits the call is
// journaled awaiting_approval, and its progress token hears that it waits.
func TestMCPElicitationCancelledWhileWaiting(t *testing.T) {
	e := startRemote(t)
	asked := make(chan struct{})
	release := make(chan struct{})
	progress := make(chan string, 4)
	cs := connect(t, e.url, http.Header{"X-Account": {"acct_a"}}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			close(asked)
			// The user has not answered when the call is cancelled.
			select {
			case <-ctx.Done():
			case <-release:
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := callInBackground(ctx, cs, "demo__write", map[string]any{"note": "later"})
	<-asked
	if msg := <-progress; !strings.Contains(msg, "waiting for the user's approval of demo__write") {
		t.Errorf("progress %q", msg)
	}
	recs, _, err := e.js.List(context.Background(), journal.Query{AccountID: "acct_a", ToolName: "demo__write", Limit: 5})
	if err != nil || len(recs) != 1 {
		cancel()
		t.Fatalf("while waiting: %d records, %v", len(recs), err)
	}
	if states, _ := e.events(t, recs[0].ID); !containsInOrder(states, journal.StateAwaitingApproval) {
		t.Errorf("while waiting: %v", states)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v", err)
	}
	r, err := e.jr.Wait(context.Background(), "acct_a", recs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if r.State != journal.StateCancelledBeforeCommit || e.ts.Calls("write") != 0 {
		t.Fatalf("after cancel: %s %s, %d runs", r.State, r.ErrorCode, e.ts.Calls("write"))
	}
}

// callInBackground calls tool with args and a progress token on cs, and
// returns where the call's error arrives once it ends (ctx cancels it).
func callInBackground(ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) <-chan error {
	done := make(chan error, 1)
	go func() {
		params := &sdk.CallToolParams{Name: tool, Arguments: args}
		params.SetProgressToken("tok")
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	return done
}
