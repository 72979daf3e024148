package mcpremote_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// refuseSnapshots makes the database refuse every write of a snapshot
// (SQLite: a trigger that aborts; PostgreSQL: a check constraint the
// new row breaks) until allowSnapshots: a real failure of the store,
// as a full disk or a broken migration would be, while reads still
// work.
func refuseSnapshots(t *testing.T, name string, db *store.DB) {
	t.Helper()
	q := `CREATE TRIGGER refuse_snapshots BEFORE UPDATE OF snapshot ON mcp_servers
		BEGIN SELECT RAISE(ABORT, 'snapshot writes are refused by the test'); END`
	if name == "postgres" {
		q = `ALTER TABLE mcp_servers ADD CONSTRAINT refuse_snapshots CHECK (snapshot IS NULL) NOT VALID`
	}
	if _, err := db.SQL().ExecContext(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

func allowSnapshots(t *testing.T, name string, db *store.DB) {
	t.Helper()
	q := `DROP TRIGGER refuse_snapshots`
	if name == "postgres" {
		q = `ALTER TABLE mcp_servers DROP CONSTRAINT refuse_snapshots`
	}
	if _, err := db.SQL().ExecContext(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

// clock is the gateway's Now, moved by the test: listing times are
// exact to the millisecond the store keeps.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(1_800_000_000_000)
	return c
}

func (c *clock) now() time.Time                { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) int64 { return c.ms.Add(d.Milliseconds()) }

// snapshotRig is a rig on a SQL store, with the /mcp-servers routes over
// it and its gateway's Changed on a channel.
type snapshotRig struct {
	*rig
	clock   *clock
	changed chan string
	api     string
}

func newSnapshotRig(t *testing.T, db *store.DB) *snapshotRig {
	t.Helper()
	sr := &snapshotRig{clock: newClock(), changed: make(chan string, 16)}
	sr.rig = newRigOn(t, mcpremote.Options{Now: sr.clock.now, Changed: func(a string) { sr.changed <- a }}, db)
	m := &admin.MCPServers{Store: db, Sealer: sr.seal, Gateway: sr.gw, Rules: mcpremote.Rules{Slots: []string{"narrator"}},
		Account: func(r *http.Request) string { return r.Header.Get("X-Account") }}
	mux := http.NewServeMux()
	for p, h := range m.Routes() {
		mux.Handle(p, h)
	}
	as := httptest.NewServer(mux)
	t.Cleanup(as.Close)
	sr.api = as.URL
	return sr
}

// told waits for the gateway's Changed (a listing that changed the
// tools; the deadline only ends a test that would otherwise hang).
func (sr *snapshotRig) told(t *testing.T, why string) {
	t.Helper()
	select {
	case <-sr.changed:
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway told no change: %s", why)
	}
}

// catalogOf is the catalog part of GET /mcp-servers/{id}.
type catalogOf struct {
	CatalogSource *string  `json:"catalog_source"`
	ListedAt      *int64   `json:"listed_at"`
	Tools         []string `json:"tools"`
	SnapshotError *string  `json:"snapshot_error"`
}

func (sr *snapshotRig) get(t *testing.T, id string) catalogOf {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, sr.api+"/mcp-servers/"+id, nil)
	req.Header.Set("X-Account", "acct_a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct {
		Data struct {
			Catalog catalogOf `json:"catalog"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &b) != nil {
		t.Fatalf("GET /mcp-servers/%s: %d %s", id, resp.StatusCode, raw)
	}
	return b.Data.Catalog
}

// stored is the server's stored snapshot: its time and tool names.
func (sr *snapshotRig) stored(t *testing.T, srv mcpremote.Server) (int64, []string) {
	t.Helper()
	snap, err := sr.store.GetMCPSnapshot(context.Background(), srv.AccountID, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ts []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(snap.Tools, &ts); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name)
	}
	return snap.ListedAt.UnixMilli(), names
}

// checkServer checks the one server of a catalog: its source, its
// listing's time, whether demo__later is listed and whether the listing
// is said to be unsaved.
func checkServer(t *testing.T, step string, cat tools.RuntimeCatalog, source string, listedAt int64, later, unsaved bool) {
	t.Helper()
	if len(cat.MCPServers) != 1 {
		t.Fatalf("%s: mcp_servers %+v", step, cat.MCPServers)
	}
	ms := cat.MCPServers[0]
	if ms.CatalogSource != source || ms.ListedAt == nil || *ms.ListedAt != listedAt || (ms.SnapshotError != nil) != unsaved {
		t.Fatalf("%s: %+v (listed_at %v, snapshot_error %v), want %s listed at %d, unsaved %v", step, ms, deref(ms.ListedAt),
			deref(ms.SnapshotError), source, listedAt, unsaved)
	}
	if got := find(cat, "demo__later") != nil; got != later {
		t.Fatalf("%s: demo__later listed %v, want %v", step, got, later)
	}
	if unsaved && !strings.Contains(*ms.SnapshotError, "could not be saved") {
		t.Fatalf("%s: snapshot_error %q", step, *ms.SnapshotError)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// runtimeOf is the runtime catalog an executor (another replica, or
// toolhost after a restart) shows.
func runtimeOf(t *testing.T, exec *tools.Executor, account string) tools.RuntimeCatalog {
	t.Helper()
	r := &rig{t: t, exec: exec}
	return r.runtime(account)
}

// A listing the store refuses to save is not just logged: the catalog
// and GET /mcp-servers/{id} say so and show that listing (live, then
// cached from memory with its own time when the server stops), while a
// replica on the same store shows the older snapshot with the older
// time, never the new time on the old tools. Once the store accepts
// writes again, the next use saves the listing with the time it was
// listed at, even with the server down, and every replica shows it.
func TestFailedSnapshotSaveIsShownAndSavedLater(t *testing.T) {
	dial, err := egress.DialContext([]string{"127.0.0.1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for name, db := range storetest.Open(t, "mcpgateway_snapshot") {
		t.Run(name, func(t *testing.T) {
			up := startUpstream(t, false)
			sr := newSnapshotRig(t, db)
			srv := sr.register("acct_a", "demo", up.url(), nil)
			t1 := sr.clock.ms.Load()
			checkServer(t, "first listing", sr.runtime("acct_a"), "live", t1, false, false)
			sr.told(t, "the first listing")
			if at, names := sr.stored(t, srv); at != t1 || slices.Contains(names, "later") {
				t.Fatalf("first snapshot: %d %v", at, names)
			}

			refuseSnapshots(t, name, db)
			t2 := sr.clock.advance(time.Minute)
			up.ts.AddTool("later") // list_changed: the gateway lists again
			sr.told(t, "the re-listing after list_changed")
			if at, names := sr.stored(t, srv); at != t1 || slices.Contains(names, "later") {
				t.Fatalf("the refused save changed the snapshot: %d %v", at, names)
			}
			sr.clock.advance(time.Minute)
			checkServer(t, "live, unsaved", sr.runtime("acct_a"), "live", t2, true, true)
			if c := sr.get(t, srv.ID); c.ListedAt == nil || *c.ListedAt != t2 || !slices.Contains(c.Tools, "later") || c.SnapshotError == nil {
				t.Fatalf("GET /mcp-servers/{id} while unsaved: %+v", c)
			}

			up.stop()
			checkServer(t, "server down, unsaved", sr.runtime("acct_a"), "cached", t2, true, true)
			// The MCP face's tools/list (what toolhost knows, asking no
			// server) has the unsaved listing too.
			specs, err := sr.exec.RemoteSpecs(context.Background(), "acct_a")
			if err != nil || !slices.ContainsFunc(specs, func(s catalog.Spec) bool { return s.Name == "demo__later" }) {
				t.Fatalf("tools/list's remote tools while unsaved: %v %d", err, len(specs))
			}
			replica := sr.restarted(dial, time.Second)
			checkServer(t, "a replica, unsaved", runtimeOf(t, replica, "acct_a"), "cached", t1, false, false)

			allowSnapshots(t, name, db)
			sr.clock.advance(time.Minute)
			checkServer(t, "server down, saved", sr.runtime("acct_a"), "cached", t2, true, false)
			if at, names := sr.stored(t, srv); at != t2 || !slices.Contains(names, "later") {
				t.Fatalf("the retried save: %d %v, want the listing of %d", at, names, t2)
			}
			checkServer(t, "a replica, saved", runtimeOf(t, replica, "acct_a"), "cached", t2, true, false)
			if c := sr.get(t, srv.ID); c.ListedAt == nil || *c.ListedAt != t2 || c.SnapshotError != nil {
				t.Fatalf("GET /mcp-servers/{id} once saved: %+v", c)
			}
		})
	}
}

// A refused save is tried again at the next use of a live server (here
// the runtime catalog's ping), though no listing is due and the tools
// did not change; the snapshot then has the listing's time, not the
// time of the retry.
func TestFailedSnapshotSaveIsRetriedWithoutANewListing(t *testing.T) {
	for name, db := range storetest.Open(t, "mcpgateway_resave") {
		t.Run(name, func(t *testing.T) {
			up := startUpstream(t, false)
			sr := newSnapshotRig(t, db)
			srv := sr.register("acct_a", "demo", up.url(), nil)
			sr.runtime("acct_a")
			sr.told(t, "the first listing")
			refuseSnapshots(t, name, db)
			t2 := sr.clock.advance(time.Minute)
			up.ts.AddTool("later")
			sr.told(t, "the re-listing after list_changed")
			checkServer(t, "refused", sr.runtime("acct_a"), "live", t2, true, true)

			allowSnapshots(t, name, db)
			sr.clock.advance(time.Minute)
			checkServer(t, "retried", sr.runtime("acct_a"), "live", t2, true, false)
			if at, names := sr.stored(t, srv); at != t2 || !slices.Contains(names, "later") {
				t.Fatalf("the retried save: %d %v, want the listing of %d", at, names, t2)
			}
		})
	}
}

// A locked table (PostgreSQL: another transaction holds it in EXCLUSIVE
// mode, so reads go on and writes wait): the save waits within the
// listing's deadline and fails, the listing still answers live and
// says it is unsaved, and once the lock is gone the next use saves it.
func TestSnapshotSaveOnALockedTable(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a PostgreSQL lock within the listing's deadline, seconds; runs in make test")
	}
	db, ok := storetest.Open(t, "mcpgateway_locked")["postgres"]
	if !ok {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	up := startUpstream(t, false)
	sr := newSnapshotRig(t, db)
	srv := sr.register("acct_a", "demo", up.url(), nil)
	sr.runtime("acct_a")
	sr.told(t, "the first listing")
	tx, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `LOCK TABLE mcp_servers IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	t2 := sr.clock.advance(time.Minute)
	up.ts.AddTool("later")
	sr.told(t, "the re-listing after list_changed")
	checkServer(t, "locked", sr.runtime("acct_a"), "live", t2, true, true)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	checkServer(t, "unlocked", sr.runtime("acct_a"), "live", t2, true, false)
	if at, names := sr.stored(t, srv); at != t2 || !slices.Contains(names, "later") {
		t.Fatalf("the save after the lock: %d %v, want the listing of %d", at, names, t2)
	}
}
