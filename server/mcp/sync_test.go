package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	mcpface "github.com/toolhost/toolhost/server/mcp"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// gatedDefs is a definitions store (the real in-memory one) whose next
// listing, once armed, is held after it has read the definitions: the
// sync that asked for it has read the tools and not yet applied them.
type gatedDefs struct {
	*tooldef.MemStore
	reads atomic.Int64
	mu    sync.Mutex
	gate  chan struct{} // closed to let the held listing return
	held  chan struct{} // closed when the listing is held
}

func (g *gatedDefs) arm() (held, gate chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.held = make(chan struct{}), make(chan struct{})
	return g.held, g.gate
}

func (g *gatedDefs) ListDefinitions(ctx context.Context, q tooldef.Query) ([]tooldef.Definition, int, error) {
	defs, n, err := g.MemStore.ListDefinitions(ctx, q)
	g.reads.Add(1)
	g.mu.Lock()
	gate, held := g.gate, g.held
	g.gate, g.held = nil, nil
	g.mu.Unlock()
	if gate != nil {
		close(held)
		<-gate
	}
	return defs, n, err
}

// description is lookup_npc's description in a tools/list.
func description(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "lookup_npc" {
			return tl.Description
		}
	}
	return "(not listed)"
}

// A sync of an account's tools that read them before a definition
// changed (here one made for a remote server's change, held by the store
// after its read) and a sync for that change (PATCH /tools/definitions)
// run at once: the older one never applies its tools after the newer
// one, so tools/list never goes back to the old description, and the
// session gets one list_changed for the one change. The interleaving is
// forced: the old sync is let go only once the new one is done (then
// tools/list would go back without the account's sync lock) or is
// waiting for it.
func TestAStaleSyncNeverUndoesANewerOne(t *testing.T) {
	ctx := context.Background()
	defs := &gatedDefs{MemStore: tooldef.NewMemStore()}
	d := tooldef.New()
	at := time.UnixMilli(1_800_000_000_000)
	d.ID, d.AccountID, d.Name, d.Description, d.CreatedAt, d.UpdatedAt = "tooldef_npc", "acme", "lookup_npc", "first", at, at
	d.Parameters = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	if err := defs.CreateDefinition(ctx, d, 0); err != nil {
		t.Fatal(err)
	}
	exec, err := tools.NewExecutor(tools.Options{Sessions: session.NewMemStore(), Definitions: defs}, builtin.All()...)
	if err != nil {
		t.Fatal(err)
	}
	acct := func(r *http.Request) string { return r.Header.Get("X-Account") }
	face := mcpface.New(exec, mcpface.Options{AccountOf: acct,
		Identify: func(_ context.Context, extra *sdk.RequestExtra) identity.Identity {
			return identity.Identity{AccountID: extra.Header.Get("X-Account")}
		}})
	// The newer sync reports when it waits for the stale one.
	syncWaits := make(chan struct{}, 1)
	mcpface.OnSyncWait(face, func(string) {
		select {
		case syncWaits <- struct{}{}:
		default:
		}
	})
	hs := httptest.NewServer(server.New(server.Options{MCP: face.Handler()}).Handler())
	t.Cleanup(hs.Close)
	var clock atomic.Int64
	clock.Store(at.UnixMilli())
	api := &admin.Definitions{Store: defs, Account: acct, Changed: face.DefinitionsChanged,
		Rules: tooldef.Rules{CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) }},
		Now:   func() time.Time { return time.UnixMilli(clock.Add(1000)) }}
	mux := http.NewServeMux()
	for p, h := range api.Routes() {
		mux.Handle(p, h)
	}
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)

	changes := make(chan struct{}, 16)
	var told atomic.Int64
	cs := connect(t, hs.URL+"/mcp", http.Header{"X-Account": {"acme"}}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			told.Add(1)
			changes <- struct{}{}
		},
	})
	if got := description(t, cs); got != "first" {
		t.Fatalf("before: %q", got)
	}
	// tools/list, again and again while the syncs run, never goes back.
	stop := make(chan struct{})
	var seen []string
	var lists sync.WaitGroup
	lists.Add(1)
	go func() {
		defer lists.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				return
			}
			for _, tl := range res.Tools {
				if tl.Name == "lookup_npc" && (len(seen) == 0 || seen[len(seen)-1] != tl.Description) {
					seen = append(seen, tl.Description)
				}
			}
		}
	}()

	held, gate := defs.arm()
	var stale sync.WaitGroup
	stale.Add(1)
	go func() { defer stale.Done(); face.DefinitionsChanged("acme") }()
	<-held // the stale sync has read "first"
	readsBefore := defs.reads.Load()

	newer := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, as.URL+"/tools/definitions/tooldef_npc", strings.NewReader(`{"description":"second"}`))
		req.Header.Set("X-Account", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			newer <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		newer <- resp.StatusCode
	}()
	// The newer sync waits for the stale one, without having read; were
	// it not held back, the PATCH would answer first.
	status := 0
	select {
	case status = <-newer:
	case <-syncWaits:
		if n := defs.reads.Load(); n != readsBefore {
			t.Errorf("the newer sync read the definitions (%d reads, %d before) while the stale one ran", n, readsBefore)
		}
	}
	close(gate)
	stale.Wait()
	if status == 0 {
		status = <-newer
	}
	if status != http.StatusOK {
		t.Fatalf("PATCH: %d", status)
	}
	if got := description(t, cs); got != "second" {
		t.Fatalf("after both syncs tools/list has %q: the stale sync undid the newer one", got)
	}
	select {
	case <-changes:
	case <-time.After(30 * time.Second): // ends a test that would hang
		t.Fatal("no list_changed for the change")
	}
	close(stop)
	lists.Wait()
	for i := 1; i < len(seen); i++ {
		if seen[i-1] == "second" {
			t.Fatalf("tools/list went back: %q", seen)
		}
	}

	// A barrier: one more change, and its list_changed; the session had
	// one per change, none for a flip.
	b := tooldef.New()
	b.ID, b.AccountID, b.Name, b.CreatedAt, b.UpdatedAt = "tooldef_barrier", "acme", "barrier", at, at
	if err := defs.CreateDefinition(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	face.DefinitionsChanged("acme")
	select {
	case <-changes:
	case <-time.After(30 * time.Second):
		t.Fatal("no list_changed for the barrier")
	}
	if n := told.Load(); n != 2 {
		t.Fatalf("the session got %d list_changed for two changes", n)
	}
}
