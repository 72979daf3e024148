package mcpremote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// faceRig is the gateway behind the MCP face and the /mcp-servers routes
// as serve wires them: the gateway's Changed and the routes' Changed
// reach the face, whose sessions get list_changed. Its definitions store
// makes the barriers: a change whose list_changed comes after any the
// steps before it sent.
type faceRig struct {
	*rig
	defs *tooldef.MemStore
	face *mcpface.Server
	mcp  string // the face's /mcp URL
	api  string // the /mcp-servers routes' base URL
	// told counts the gateway's Changed; toldNames gets the account's
	// remote tools at each (dropped when nobody reads them).
	told      atomic.Int64
	toldNames chan []string
	barriers  int
}

func newFaceRig(t *testing.T, opts mcpremote.Options) *faceRig {
	t.Helper()
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seal, err := mcpremote.NewSealer(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	fr := &faceRig{defs: tooldef.NewMemStore(), toldNames: make(chan []string, 16)}
	var face atomic.Pointer[mcpface.Server]
	st := mcpremote.NewMemStore()
	opts.Store, opts.Sealer, opts.Dial, opts.ProbeTimeout = st, seal, dial, time.Second
	opts.Changed = func(account string) {
		fr.told.Add(1)
		if f := face.Load(); f != nil {
			f.DefinitionsChanged(account)
		}
		select {
		case fr.toldNames <- fr.remoteNames(account):
		default:
		}
	}
	gw := mcpremote.New(opts)
	t.Cleanup(gw.Close)
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Remote: gw, Definitions: fr.defs}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	fr.rig = &rig{t: t, store: st, seal: seal, gw: gw, exec: exec}
	fr.face = mcpface.New(exec, mcpface.Options{
		AccountOf: func(r *http.Request) string { return r.Header.Get("X-Account") },
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: extra.Header.Get("X-Account")}
		},
	})
	face.Store(fr.face)
	hs := httptest.NewServer(server.New(server.Options{MCP: fr.face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	fr.mcp = hs.URL + "/mcp"
	m := &admin.MCPServers{Store: st, Sealer: seal, Gateway: gw, Rules: mcpremote.Rules{Slots: []string{"narrator"}},
		Changed: fr.face.DefinitionsChanged, Account: func(r *http.Request) string { return r.Header.Get("X-Account") }}
	mux := http.NewServeMux()
	for p, h := range m.Routes() {
		mux.Handle(p, h)
	}
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)
	fr.api = as.URL
	return fr
}

// remoteNames are the account's remote tools as tools/list offers them.
func (fr *faceRig) remoteNames(account string) []string {
	specs, err := fr.exec.RemoteSpecs(context.Background(), account)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// call sends a request to the /mcp-servers routes as acct_a and returns
// the data of its answer.
func (fr *faceRig) call(t *testing.T, method, path, body string, status int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, fr.api+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Account", "acct_a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct {
		Data map[string]any `json:"data"`
	}
	if resp.StatusCode != status || json.Unmarshal(raw, &b) != nil {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, status)
	}
	return b.Data
}

// watcher is an MCP client session of an account, subscribed to
// list_changed.
type watcher struct {
	cs      *sdk.ClientSession
	changes chan struct{}
	n       atomic.Int64
}

type accountHeader string

func (a accountHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Account", string(a))
	return http.DefaultTransport.RoundTrip(r)
}

func (fr *faceRig) watch(t *testing.T, account string) *watcher {
	t.Helper()
	w := &watcher{changes: make(chan struct{}, 64)}
	client := sdk.NewClient(&sdk.Implementation{Name: "watcher", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			w.n.Add(1)
			select {
			case w.changes <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: fr.mcp, HTTPClient: &http.Client{Transport: accountHeader(account)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	w.cs = cs
	return w
}

// next waits for the session's next list_changed (the deadline only
// ends a test that would otherwise hang).
func (w *watcher) next(t *testing.T, why string) {
	t.Helper()
	select {
	case <-w.changes:
	case <-time.After(30 * time.Second):
		t.Fatalf("no notifications/tools/list_changed: %s", why)
	}
}

// names is the session's tools/list.
func (w *watcher) names(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := w.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// barrier adds a definition to the account and waits for its
// list_changed, then checks the session had want in all: a spurious
// list_changed before the barrier makes the count too high.
func (fr *faceRig) barrier(t *testing.T, w *watcher, account string, want int64) {
	t.Helper()
	fr.barriers++
	d := tooldef.New()
	now := time.Now()
	d.ID, d.AccountID, d.Name, d.CreatedAt, d.UpdatedAt = "tooldef_barrier"+string(rune('a'+fr.barriers)), account, "barrier_"+string(rune('a'+fr.barriers)), now, now
	if err := fr.defs.CreateDefinition(context.Background(), d, 0); err != nil {
		t.Fatal(err)
	}
	fr.face.DefinitionsChanged(account)
	w.next(t, "the barrier")
	if !slices.Contains(w.names(t), d.Name) {
		t.Fatalf("the barrier's list_changed came before its tool was listed")
	}
	if n := w.n.Load(); n != want {
		t.Fatalf("the session got %d list_changed up to the barrier, want %d (one per change)", n, want)
	}
}

func hasPrefix(names []string, prefix string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}

// After a restart, a server registered before has no snapshot (or an
// old one) and no link; the account's MCP session lists none of its
// tools. When the link comes up (here the runtime catalog; a call or a
// hosted loop do the same), that first listing reaches the session with
// one list_changed, and re-listings of the same tools (a refresh, a call,
// the catalog again) send none.
func TestFirstListingReachesTheAccountsMCPSessions(t *testing.T) {
	up := startUpstream(t, false)
	fr := newFaceRig(t, mcpremote.Options{})
	srv := fr.register("acct_a", "demo", up.url(), nil)
	w := fr.watch(t, "acct_a")
	other := fr.watch(t, "acct_b")
	if hasPrefix(w.names(t), "demo__") {
		t.Fatal("listed before any listing")
	}
	fr.runtime("acct_a")
	if n := fr.told.Load(); n != 1 {
		t.Fatalf("the first listing was told %d times, want once", n)
	}
	w.next(t, "the first listing of a registered server")
	if !slices.Contains(w.names(t), "demo__echo") {
		t.Fatalf("after list_changed: %v", w.names(t))
	}
	if _, err := fr.gw.Refresh(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	if out := fr.rig.call("acct_a", "demo__echo", `{"message":"hi"}`); out.IsError {
		t.Fatalf("call: %+v", out)
	}
	fr.runtime("acct_a")
	if n := fr.told.Load(); n != 1 {
		t.Fatalf("unchanged re-listings were told: %d in all, want 1", n)
	}
	fr.barrier(t, w, "acct_a", 2)
	fr.barrier(t, other, "acct_b", 1)
	if hasPrefix(other.names(t), "demo__") {
		t.Fatal("another account lists the server's tools")
	}
}

// A registered server's life through the /mcp-servers routes, watched by
// an MCP session of its account: each change of the listed tools is one
// list_changed, and nothing else is. Registration lists it (one); the
// server going away changes nothing listed (the snapshot answers); the
// server back with other tools, without saying list_changed (a new
// process), is one when the link comes up; disabling, enabling and
// deleting are one each; a refresh that finds the same tools is none.
func TestEveryChangeOfARemoteToolSetIsOneListChanged(t *testing.T) {
	up := startUpstream(t, false)
	fr := newFaceRig(t, mcpremote.Options{})
	w := fr.watch(t, "acct_a")
	d := fr.call(t, "POST", "/mcp-servers", `{"name":"demo","url":"`+up.url()+`"}`, http.StatusCreated)
	id := d["id"].(string)
	w.next(t, "registration")
	if !slices.Contains(w.names(t), "demo__echo") {
		t.Fatalf("after registration: %v", w.names(t))
	}
	fr.barrier(t, w, "acct_a", 2)

	up.stop()
	if out := fr.rig.call("acct_a", "demo__echo", `{"message":"hi"}`); !out.IsError {
		t.Fatalf("a call to a stopped server: %+v", out)
	}
	if tl := find(fr.runtime("acct_a"), "demo__echo"); tl == nil || tl.CatalogSource == nil || *tl.CatalogSource != mcpremote.SourceCached {
		t.Fatalf("a stopped server's tool: %+v", tl)
	}
	if !slices.Contains(w.names(t), "demo__echo") {
		t.Fatal("the snapshot's tools left tools/list")
	}
	fr.barrier(t, w, "acct_a", 3)

	up.restart(true) // more tools, and no list_changed: a new process
	fr.runtime("acct_a")
	w.next(t, "the server back with other tools")
	if names := w.names(t); !slices.Contains(names, "demo__hang") || !slices.Contains(names, "demo__echo") {
		t.Fatalf("after the new listing: %v", names)
	}
	up.restart(true) // the same tools again
	fr.runtime("acct_a")
	fr.call(t, "POST", "/mcp-servers/"+id+"/refresh", "", http.StatusOK)
	fr.barrier(t, w, "acct_a", 5)
	if n := fr.told.Load(); n != 2 {
		t.Fatalf("the gateway told %d changes, want 2 (registration, the other tools)", n)
	}

	fr.call(t, "PATCH", "/mcp-servers/"+id, `{"enabled":false}`, http.StatusOK)
	w.next(t, "disabled")
	if hasPrefix(w.names(t), "demo__") {
		t.Fatalf("a disabled server's tools are listed: %v", w.names(t))
	}
	fr.call(t, "PATCH", "/mcp-servers/"+id, `{"enabled":true}`, http.StatusOK)
	w.next(t, "enabled")
	if !slices.Contains(w.names(t), "demo__hang") {
		t.Fatalf("enabled again: %v", w.names(t))
	}
	fr.barrier(t, w, "acct_a", 8)
	fr.call(t, "DELETE", "/mcp-servers/"+id, "", http.StatusOK)
	w.next(t, "deleted")
	if hasPrefix(w.names(t), "demo__") {
		t.Fatalf("a deleted server's tools are listed: %v", w.names(t))
	}
	fr.barrier(t, w, "acct_a", 10)
}

// spammer is a hostile server: every answer to tools/list comes after
// twenty notifications/tools/list_changed, so each listing asks for
// another, with the same tools. Each listing counts in lists and is told
// on listed while it has room (never blocking the server).
func spammer(t *testing.T, ts *testserver.Server, lists *atomic.Int64, listed chan<- struct{}) string {
	t.Helper()
	h := ts.Handler()
	notice := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	spam := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/list" {
			h.ServeHTTP(w, r)
			return
		}
		lists.Add(1)
		select {
		case listed <- struct{}{}:
		default:
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		answer := rec.Body.String()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			answer = "event: message\ndata: " + strings.TrimSpace(answer) + "\n\n"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, strings.Repeat(notice, 20)+answer)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", spam)
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// A server that answers every listing with twenty list_changed and the
// same tools: the gateway re-lists (at most one waiting, spaced), tells
// nothing and the account's MCP session gets nothing; a real change
// among the spam is told once, with the new tool.
func TestASpammingServerStormsNobody(t *testing.T) {
	ts := testserver.New(false)
	var lists atomic.Int64
	listed := make(chan struct{}, 4)
	url := spammer(t, ts, &lists, listed)
	fr := newFaceRig(t, mcpremote.Options{RelistInterval: 20 * time.Millisecond})
	srv := fr.register("acct_a", "demo", url, nil)
	w := fr.watch(t, "acct_a")
	if _, err := fr.gw.Refresh(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	if first := <-fr.toldNames; !slices.Contains(first, "demo__echo") {
		t.Fatalf("the first listing told %v", first)
	}
	w.next(t, "the first listing")
	// Each listing asks for the next: wait until three more were made
	// (listed has room for all four, so none of them is dropped).
	timeout := time.After(30 * time.Second)
	for range 4 {
		select {
		case <-listed:
		case <-timeout:
			t.Fatalf("the gateway re-listed %d times on the spam", lists.Load()-1)
		}
	}
	if n := fr.told.Load(); n != 1 {
		t.Fatalf("%d listings of the same tools were told as changes", n-1)
	}
	ts.AddTool("later")
	select {
	case names := <-fr.toldNames:
		if !slices.Contains(names, "demo__later") {
			t.Fatalf("a change was told without the new tool: %v", names)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the new tool was never told")
	}
	w.next(t, "the new tool")
	if !slices.Contains(w.names(t), "demo__later") {
		t.Fatalf("after the change: %v", w.names(t))
	}
	fr.barrier(t, w, "acct_a", 3)
}
