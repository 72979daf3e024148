package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
)

// remoteFace is the MCP face of a fresh gateway over the store st: its
// URL for a client that names its account in X-Account.
func remoteFace(t *testing.T, st mcpremote.Store, seal *mcpremote.Sealer, probe time.Duration) (*mcpremote.Gateway, string) {
	t.Helper()
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpremote.New(mcpremote.Options{Store: st, Sealer: seal, Dial: dial, ProbeTimeout: probe})
	t.Cleanup(gw.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: gw}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	face := mcpface.New(exec, mcpface.Options{
		AccountOf: func(r *http.Request) string { return r.Header.Get("X-Account") },
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: extra.Header.Get("X-Account")}
		},
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	return gw, hs.URL + "/mcp"
}

// listed is a session's tools/list by name.
func listed(t *testing.T, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// tools/list answers from what toolhost knows and never asks a remote
// server: after a restart, with the server's address taken by one that
// accepts TCP and never answers, the account's remote tools are the
// snapshot's (same names and schemas as when the server was live, the
// account's disabled tool still absent, another account without them)
// and not one connection reached the server.
func TestToolsListDoesNotAskRemoteServers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", testserver.New(false).Handler())
	up := &http.Server{Handler: mux}
	go func() { _ = up.Serve(ln) }()
	addr := ln.Addr().String()

	st := mcpremote.NewMemStore()
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	off := false
	now := time.Now()
	srv := mcpremote.Server{ID: "mcpsrv_demo", AccountID: "acct_a", Name: "demo", URL: "http://" + addr + "/mcp", Enabled: true,
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Tools: map[string]mcpremote.Override{"write": {Enabled: &off}},
		CreatedAt: now, UpdatedAt: now}
	if srv.Sealed, err = seal.Seal(srv.AccountID, srv.ID, mcpremote.Secrets{}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMCPServer(context.Background(), srv, 0); err != nil {
		t.Fatal(err)
	}
	gw, liveURL := remoteFace(t, st, seal, time.Second)
	if _, err := gw.Refresh(context.Background(), srv); err != nil { // as registration does
		t.Fatal(err)
	}
	live := listed(t, connect(t, liveURL, http.Header{"X-Account": {"acct_a"}}, nil))
	for _, name := range []string{"demo__echo", "demo__add"} {
		if live[name] == nil {
			t.Fatalf("%s not in the live tools/list: %v", name, live)
		}
	}
	if live["demo__write"] != nil {
		t.Fatal("the tool the account disabled is listed")
	}
	_ = up.Close()

	// The server's address now accepts and never answers.
	hang, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	held := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held <- c
		}
	}()
	t.Cleanup(func() {
		_ = hang.Close()
		for len(held) > 0 {
			_ = (<-held).Close()
		}
	})

	_, url := remoteFace(t, st, seal, 2*time.Second)
	got := listed(t, connect(t, url, http.Header{"X-Account": {"acct_a"}}, nil))
	if n := accepted.Load(); n != 0 {
		t.Fatalf("tools/list opened %d connections to the remote server", n)
	}
	for name, want := range live {
		g := got[name]
		if g == nil {
			t.Fatalf("%s missing from tools/list beside a hanging server: %v", name, got)
		}
		gs, _ := json.Marshal(g.InputSchema)
		ws, _ := json.Marshal(want.InputSchema)
		if !bytes.Equal(gs, ws) {
			t.Fatalf("%s schema %s, live was %s", name, gs, ws)
		}
	}
	if len(got) != len(live) {
		t.Fatalf("tools/list has %d tools, live had %d", len(got), len(live))
	}
	other := listed(t, connect(t, url, http.Header{"X-Account": {"acct_b"}}, nil))
	for name := range other {
		if name == "demo__echo" || name == "demo__add" {
			t.Fatalf("another account lists %s", name)
		}
	}
}
