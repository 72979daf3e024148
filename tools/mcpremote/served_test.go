package mcpremote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
)

// countingListener counts the TCP connections a server accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// listCounter counts the server lists that reach the store under the
// cache.
type listCounter struct {
	mcpremote.Store
	lists atomic.Int64
}

func (c *listCounter) ListMCPServers(ctx context.Context, account string) ([]mcpremote.Server, error) {
	c.lists.Add(1)
	return c.Store.ListMCPServers(ctx, account)
}

// servedRig is the gateway as serve builds it: the store behind
// mcpremote.Cache (an hour's TTL, so what a call sees after a write is the
// cache's invalidation), the SSRF dialer, the real test server on a
// loopback listener that counts connections.
type servedRig struct {
	rig
	cache *mcpremote.Cache
	under *listCounter
	conns *countingListener
	url   string
}

// newServedRig starts the rig; wrap, when set, wraps the test server's
// handler.
func newServedRig(t testing.TB, wrap func(http.Handler) http.Handler) *servedRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	mux := http.NewServeMux()
	h := testserver.New(false).Handler()
	if wrap != nil {
		h = wrap(h)
	}
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(cl) }()
	t.Cleanup(func() { _ = hs.Close() })

	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seal, err := mcpremote.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	under := &listCounter{Store: mcpremote.NewMemStore()}
	cache := mcpremote.NewCache(under, time.Hour, nil)
	gw := mcpremote.New(mcpremote.Options{Store: cache, Sealer: seal, Dial: dial, ProbeTimeout: time.Second})
	t.Cleanup(gw.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: gw})
	if err != nil {
		t.Fatal(err)
	}
	return &servedRig{rig: rig{t: t, seal: seal, gw: gw, exec: exec}, cache: cache, under: under, conns: cl,
		url: "http://" + ln.Addr().String() + "/mcp"}
}

// registerDemo registers the rig's server as "demo" of acct_s, with no
// auth, through the cache the gateway reads, and returns it as stored.
func (r *servedRig) registerDemo(t testing.TB) mcpremote.Server {
	t.Helper()
	srv := mcpremote.Server{ID: "mcpsrv_s", AccountID: "acct_s", Name: "demo", URL: r.url, Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	var err error
	if srv.Sealed, err = r.seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if err := r.cache.CreateMCPServer(context.Background(), srv, 0); err != nil {
		t.Fatal(err)
	}
	return srv
}

func (r *servedRig) echo(tool string) *tools.Outcome {
	r.t.Helper()
	out, err := r.exec.Execute(context.Background(), tools.Proposal{Tool: tool, Args: json.RawMessage(`{"message":"hi"}`),
		Caller: tools.Caller{Identity: identity.Identity{AccountID: "acct_s"}}})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestCallsReuseTheUpstreamConnectionAndTheServerList: after the first
// calls, a hundred more reuse the pooled session and its keep-alive
// connections to the server, and read the account's servers from memory,
// not the store.
func TestCallsReuseTheUpstreamConnectionAndTheServerList(t *testing.T) {
	r := newServedRig(t, nil)
	r.registerDemo(t)
	for range 3 {
		if out := r.echo("demo__echo"); out.IsError {
			t.Fatalf("warm-up call: %+v", out)
		}
	}
	conns, lists := r.conns.accepted.Load(), r.under.lists.Load()
	for i := range 100 {
		if out := r.echo("demo__echo"); out.IsError || !strings.Contains(out.Text, "Echo: hi") {
			t.Fatalf("call %d: %+v", i, out)
		}
	}
	// Not always none: the SDK hands the answer over before it reads the
	// end of the POST's event stream, so a call can find its connection
	// still busy and dial another, which the pool then keeps. Cancelling
	// the request before that end closed the connection instead (2 to 26
	// new ones in a hundred calls).
	if n := r.conns.accepted.Load() - conns; n > 5 {
		t.Fatalf("100 calls opened %d new connections to the server (%d before), want the pooled ones reused", n, conns)
	}
	if n := r.under.lists.Load() - lists; n != 0 {
		t.Fatalf("100 calls listed the account's servers in the store %d times, want 0", n)
	}
}

// TestAStreamThatEndsLateKeepsItsConnection: a server that ends the
// POST's event stream a moment after the answer (Node, a proxy) must not
// cost a new connection per call: the call returns at the answer, and the
// connection goes back to the pool when the stream ends.
func TestAStreamThatEndsLateKeepsItsConnection(t *testing.T) {
	// A tools/call's stream ends only when the test sends on end, after
	// the call returned; ended is told once the handler is done.
	end, ended := make(chan struct{}), make(chan struct{}, 1)
	r := newServedRig(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method != http.MethodPost {
				h.ServeHTTP(w, req)
				return
			}
			body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
			req.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
				h.ServeHTTP(w, req)
				return
			}
			defer func() { ended <- struct{}{} }()
			h.ServeHTTP(w, req)
			// The answer is flushed; the stream's end comes later.
			select {
			case <-end:
			case <-req.Context().Done():
			}
		})
	})
	r.registerDemo(t)
	// call makes one call, which must return while its stream is still
	// open, then ends the stream and waits for the handler to finish.
	call := func(what string) {
		t.Helper()
		if out := r.echo("demo__echo"); out.IsError {
			t.Fatalf("%s: %+v", what, out)
		}
		end <- struct{}{}
		<-ended
	}
	call("warm-up call")
	conns := r.conns.accepted.Load()
	for i := range 20 {
		call(fmt.Sprintf("call %d", i))
	}
	if n := r.conns.accepted.Load() - conns; n > 5 {
		t.Fatalf("20 calls opened %d new connections to the server, want the pooled ones reused", n)
	}
}

// TestRegistrationChangesReachTheNextCall: with the cache in front of the
// store, a change through it — disabling, a per-tool override, a
// rename, a delete — is what the very next call runs under.
func TestRegistrationChangesReachTheNextCall(t *testing.T) {
	r := newServedRig(t, nil)
	ctx := context.Background()
	srv := r.registerDemo(t)
	if out := r.echo("demo__echo"); out.IsError {
		t.Fatalf("registered: %+v", out)
	}
	update := func(step string, f func(*mcpremote.Server)) {
		t.Helper()
		f(&srv)
		srv.UpdatedAt = srv.UpdatedAt.Add(time.Millisecond)
		if err := r.cache.UpdateMCPServer(ctx, srv); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	update("disable", func(s *mcpremote.Server) { s.Enabled = false })
	wantCode(t, r.echo("demo__echo"), tools.CodeUnknownTool)
	update("enable", func(s *mcpremote.Server) { s.Enabled = true })
	if out := r.echo("demo__echo"); out.IsError {
		t.Fatalf("enabled again: %+v", out)
	}
	off := false
	update("override", func(s *mcpremote.Server) { s.Tools = map[string]mcpremote.Override{"echo": {Enabled: &off}} })
	wantCode(t, r.echo("demo__echo"), tools.CodeUnknownTool)
	update("rename", func(s *mcpremote.Server) { s.Tools, s.Name = nil, "renamed" })
	wantCode(t, r.echo("demo__echo"), tools.CodeUnknownTool)
	if out := r.echo("renamed__echo"); out.IsError {
		t.Fatalf("after the rename: %+v", out)
	}
	if err := r.cache.DeleteMCPServer(ctx, srv.AccountID, srv.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.echo("renamed__echo"), tools.CodeUnknownTool)
}
