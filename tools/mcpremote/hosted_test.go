package mcpremote_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/session"
)

// countingDial is the SSRF-checked loopback dial with a count of the
// connections it opened.
func countingDial(t *testing.T) (func(ctx context.Context, network, addr string) (net.Conn, error), *atomic.Int64) {
	t.Helper()
	base, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return base(ctx, network, addr)
	}, &n
}

// restarted is the rig's store and sealer under a new gateway and
// executor: toolhost after a restart, which knows the servers only from
// their snapshots.
func (r *rig) restarted(dial func(ctx context.Context, network, addr string) (net.Conn, error), probe time.Duration) *tools.Executor {
	r.t.Helper()
	gw := mcpremote.New(mcpremote.Options{Store: r.store, Sealer: r.seal, Dial: dial, ProbeTimeout: probe})
	r.t.Cleanup(gw.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: gw}, builtin.NewGetTime(time.Now))
	if err != nil {
		r.t.Fatal(err)
	}
	return exec
}

func hostedCatalog(t *testing.T, exec *tools.Executor, account string) *tools.ToolSet {
	t.Helper()
	ts, err := exec.HostedCatalog(context.Background(), account, "")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// The hosted catalog holds exactly the remote tools Execute runs: their
// exposed names, remote schemas and side-effect levels after the
// account's overrides; a tool the account disabled and one whose schema
// does not compile are not there; another account has none of them.
func TestHostedCatalogIsWhatExecuteRuns(t *testing.T) {
	up := startUpstream(t, true)
	r := newRig(t, mcpremote.Options{})
	off, level, slots := false, "sandbox", []string{"narrator"}
	r.register("acct_a", "demo", up.url(), func(s *mcpremote.Server, _ *mcpremote.Secrets) {
		s.Tools = map[string]mcpremote.Override{"write": {Enabled: &off}, "add": {SideEffectLevel: &level}, "echo": {AllowedSlots: &slots}}
	})
	if out := r.call("acct_a", "demo__add", `{"a":1,"b":2}`); out.IsError {
		t.Fatalf("first call (lists the server): %+v", out)
	}
	ts := hostedCatalog(t, r.exec, "acct_a")
	for name, side := range map[string]catalog.SideEffect{"demo__echo": catalog.SideEffectNone, "demo__add": catalog.SideEffectSandbox} {
		got, ok := ts.Lookup(name)
		rt, err := r.gw.RemoteTool(context.Background(), "acct_a", name)
		if !ok || err != nil || rt == nil {
			t.Fatalf("%s: in the hosted catalog %v, remote tool %v (%v)", name, ok, rt, err)
		}
		want := rt.Tool.Spec()
		if got.Name != want.Name || got.Version != want.Version || !bytes.Equal(got.Input, want.Input) || got.SideEffect != side || want.SideEffect != side {
			t.Errorf("%s: hosted %+v, Execute runs %+v", name, got, want)
		}
	}
	if _, ok := ts.Lookup("demo__write"); ok {
		t.Error("a tool the account disabled is in the hosted catalog")
	}
	if _, ok := ts.Lookup("demo__badref"); ok {
		t.Error("a tool whose schema does not compile is in the hosted catalog")
	}
	wantCode(t, r.call("acct_a", "demo__badref", `{}`), tools.CodeInvalidRemoteSchema)
	if _, ok := ts.Lookup("get_time"); !ok {
		t.Error("the builtins are gone from the hosted catalog")
	}
	for _, s := range hostedCatalog(t, r.exec, "acct_b").List() {
		if s.Name != "get_time" && s.Name != tools.ReadResultTool && s.Name != tools.WaitJobTool && s.Name != tools.CancelJobTool {
			t.Errorf("acct_b's hosted catalog has %s", s.Name)
		}
	}
}

// Building the hosted catalog never dials a server: after a restart with
// the server down, and with a server that accepts and never answers while
// a call is stuck connecting to it (holding the link), the catalog comes
// from the snapshot and opens no connection; the call itself then fails
// upstream_unavailable.
func TestHostedCatalogDoesNotAskTheServer(t *testing.T) {
	up := startUpstream(t, false)
	r := newRig(t, mcpremote.Options{})
	r.register("acct_a", "demo", up.url(), nil)
	if out := r.call("acct_a", "demo__echo", `{"message":"hi"}`); out.IsError {
		t.Fatalf("first call: %+v", out)
	}
	live := hostedCatalog(t, r.exec, "acct_a")
	want, ok := live.Lookup("demo__echo")
	if !ok {
		t.Fatalf("demo__echo not in the live hosted catalog: %v", live.List())
	}
	up.stop()

	dial, dials := countingDial(t)
	down := r.restarted(dial, time.Second)
	got, ok := hostedCatalog(t, down, "acct_a").Lookup("demo__echo")
	if n := dials.Load(); n != 0 {
		t.Fatalf("building the hosted catalog dialed %d times", n)
	}
	if !ok || got.Version != want.Version || !bytes.Equal(got.Input, want.Input) {
		t.Fatalf("from the snapshot: %+v, live was %+v", got, want)
	}
	out, err := down.Execute(context.Background(), tools.Proposal{Tool: "demo__echo", Args: []byte(`{"message":"hi"}`),
		Caller: tools.Caller{Face: "hosted", Identity: identity.Identity{AccountID: "acct_a"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, out, tools.CodeUpstreamUnavailable)
	if dials.Load() == 0 {
		t.Fatal("the call did not dial: the counter counts nothing")
	}

	// A server that accepts and never answers.
	ln, err := net.Listen("tcp", up.addr)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	var acceptOnce sync.Once
	var conns sync.WaitGroup
	stuck := make(chan net.Conn, 16)
	go func() {
		defer close(stuck)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			acceptOnce.Do(func() { close(accepted) })
			stuck <- c
		}
	}()
	hangDial, hangDials := countingDial(t)
	// The stuck call gives up only when the test closes its connection: a
	// catalog that waited for it would never return (go test's timeout).
	hanging := r.restarted(hangDial, time.Hour)
	callDone := make(chan *tools.Outcome, 1)
	conns.Add(1)
	go func() {
		defer conns.Done()
		out, _ := hanging.Execute(context.Background(), tools.Proposal{Tool: "demo__echo", Args: []byte(`{"message":"hi"}`),
			Caller: tools.Caller{Face: "hosted", Identity: identity.Identity{AccountID: "acct_a"}}})
		callDone <- out
	}()
	<-accepted
	before := hangDials.Load()
	catDone := make(chan *tools.ToolSet, 1)
	go func() { catDone <- hostedCatalog(t, hanging, "acct_a") }()
	select {
	case ts := <-catDone:
		if _, ok := ts.Lookup("demo__echo"); !ok {
			t.Errorf("demo__echo not in the catalog beside a hanging server: %v", ts.List())
		}
		if n := hangDials.Load() - before; n != 0 {
			t.Errorf("building the catalog beside a hanging server dialed %d times", n)
		}
	case out := <-callDone:
		t.Fatalf("the stuck call ended before the catalog was built (%+v)", out)
	}
	if len(callDone) != 0 {
		t.Fatal("the call was not stuck while the catalog was built")
	}
	_ = ln.Close()
	for c := range stuck {
		_ = c.Close()
	}
	conns.Wait()
}
