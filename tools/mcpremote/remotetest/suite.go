// Package remotetest is the conformance suite every mcpremote.Store runs.
package remotetest

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// Run checks st against the Store contract: tenancy, name uniqueness per
// account, secrets kept byte for byte, snapshots, updates of the secrets
// one at a time, pending authorizations taken once.
func Run(t *testing.T, st mcpremote.Store) {
	ctx := context.Background()
	off := false
	level := "none"
	a := mcpremote.Server{ID: "mcpsrv_a", AccountID: "acct_1", Name: "github", URL: "https://example.com/mcp",
		HeaderNames: []string{"X-Api-Key"}, Auth: mcpremote.Auth{Type: mcpremote.AuthBearer}, Enabled: true,
		Timeout: 1500 * time.Millisecond, Tools: map[string]mcpremote.Override{"delete": {Enabled: &off}, "get": {SideEffectLevel: &level}},
		Defaults: mcpremote.Defaults{SideEffectLevel: &level, AllowedSlots: &[]string{"narrator"}},
		Sealed:   []byte{1, 2, 3, 0, 255}}
	a.Touch(time.Now()) // nanoseconds and a monotonic reading: Touch makes it what a store keeps
	now := a.UpdatedAt
	if err := st.CreateMCPServer(ctx, a, 0); err != nil {
		t.Fatalf("create: %v", err)
	}
	dup := a
	dup.ID = "mcpsrv_b"
	if err := st.CreateMCPServer(ctx, dup, 0); !errors.Is(err, mcpremote.ErrConflict) {
		t.Fatalf("same name in one account: %v, want ErrConflict", err)
	}
	other := dup
	other.AccountID = "acct_2"
	if err := st.CreateMCPServer(ctx, other, 0); err != nil {
		t.Fatalf("same name in another account: %v", err)
	}
	if _, err := st.GetMCPServer(ctx, "acct_2", a.ID); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("another account's server: %v, want ErrNotFound", err)
	}
	got, err := st.GetMCPServer(ctx, "acct_1", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != a.Name || got.URL != a.URL || !bytes.Equal(got.Sealed, a.Sealed) || got.Timeout != a.Timeout ||
		got.Auth.Type != a.Auth.Type || len(got.HeaderNames) != 1 || !got.Enabled || !got.UpdatedAt.Equal(now) ||
		got.Tools["delete"].Enabled == nil || *got.Tools["delete"].Enabled || *got.Tools["get"].SideEffectLevel != "none" {
		t.Fatalf("round trip: got %+v, want %+v", got, a)
	}
	// A write in the same millisecond is a new version all the same, and
	// reads back as exactly that version.
	touched := got
	touched.Touch(got.UpdatedAt)
	if err := st.UpdateMCPServer(ctx, touched); err != nil {
		t.Fatal(err)
	}
	if back, err := st.GetMCPServer(ctx, "acct_1", a.ID); err != nil || !back.UpdatedAt.Equal(touched.UpdatedAt) || !back.UpdatedAt.After(now) {
		t.Fatalf("a second write in one millisecond: %v, UpdatedAt %v, want %v (after %v)", err, back.UpdatedAt, touched.UpdatedAt, now)
	}
	b := a
	b.ID, b.Name = "mcpsrv_c", "alpha"
	b.Sealed = nil
	if err := st.CreateMCPServer(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	list, err := st.ListMCPServers(ctx, "acct_1")
	if err != nil || len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "github" || len(list[0].Sealed) != 0 {
		t.Fatalf("list: %v %+v", err, list)
	}
	b.Name = "github"
	if err := st.UpdateMCPServer(ctx, b); !errors.Is(err, mcpremote.ErrConflict) {
		t.Fatalf("rename onto a taken name: %v, want ErrConflict", err)
	}
	b.Name, b.Enabled = "beta", false
	if err := st.UpdateMCPServer(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetMCPServer(ctx, "acct_1", b.ID); got.Name != "beta" || got.Enabled {
		t.Fatalf("after update: %+v", got)
	}
	b.AccountID = "acct_2"
	if err := st.UpdateMCPServer(ctx, b); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("update through another account: %v, want ErrNotFound", err)
	}
	if _, err := st.GetMCPSnapshot(ctx, "acct_1", a.ID); !errors.Is(err, mcpremote.ErrNoSnapshot) {
		t.Fatalf("snapshot before a listing: %v, want ErrNoSnapshot", err)
	}
	snapshots(t, st, a.ID, now)
	secrets(t, st, a.ID)
	if err := st.DeleteMCPServer(ctx, "acct_2", a.ID); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("delete through another account: %v", err)
	}
	if err := st.DeleteMCPServer(ctx, "acct_1", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetMCPSnapshot(ctx, "acct_1", a.ID); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("snapshot of a deleted server: %v", err)
	}
	capped(t, st, a)
	authorizations(t, st)
}

// snapshots checks the snapshots of the server id of acct_1: tenancy,
// the time kept to the millisecond, and an older listing never stored
// over a newer one.
func snapshots(t *testing.T, st mcpremote.Store, id string, now time.Time) {
	ctx := context.Background()
	snap := mcpremote.Snapshot{Tools: []byte(`[{"name":"echo","inputSchema":{"type":"object"}}]`), ListedAt: now}
	if err := st.SaveMCPSnapshot(ctx, "acct_2", id, snap); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("snapshot through another account: %v, want ErrNotFound", err)
	}
	if err := st.SaveMCPSnapshot(ctx, "acct_1", id, snap); err != nil {
		t.Fatal(err)
	}
	gs, err := st.GetMCPSnapshot(ctx, "acct_1", id)
	if err != nil || string(gs.Tools) != string(snap.Tools) || !gs.ListedAt.Equal(now) {
		t.Fatalf("snapshot: %v %+v", err, gs)
	}
	older := mcpremote.Snapshot{Tools: []byte(`[]`), ListedAt: now.Add(-time.Second)}
	if err := st.SaveMCPSnapshot(ctx, "acct_1", id, older); err != nil {
		t.Fatalf("an older snapshot than the stored one: %v, want nil (nothing to save)", err)
	}
	if gs, err := st.GetMCPSnapshot(ctx, "acct_1", id); err != nil || string(gs.Tools) != string(snap.Tools) || !gs.ListedAt.Equal(now) {
		t.Fatalf("an older listing replaced the stored snapshot: %v %+v", err, gs)
	}
	if _, err := st.GetMCPSnapshot(ctx, "acct_2", id); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("another account's snapshot: %v, want ErrNotFound", err)
	}
}

// capped creates the deleted a again (its name is free), then checks the
// cap of CreateMCPServer: acct_1 holds 2 servers (a and the renamed b),
// so a cap of 2 refuses a third, a cap of 3 takes it, and a delete makes
// room again.
func capped(t *testing.T, st mcpremote.Store, a mcpremote.Server) {
	ctx := context.Background()
	if err := st.CreateMCPServer(ctx, a, 0); err != nil {
		t.Fatalf("the name is free again after delete: %v", err)
	}
	c := a
	c.ID, c.Name = "mcpsrv_cap", "capped"
	if err := st.CreateMCPServer(ctx, c, 2); !errors.Is(err, mcpremote.ErrLimit) {
		t.Fatalf("a third server under a cap of 2: %v, want ErrLimit", err)
	}
	if _, err := st.GetMCPServer(ctx, c.AccountID, c.ID); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("the refused server was stored: %v", err)
	}
	if err := st.CreateMCPServer(ctx, c, 3); err != nil {
		t.Fatalf("a third server under a cap of 3: %v", err)
	}
	d := a
	d.ID, d.Name = "mcpsrv_cap2", "capped_two"
	if err := st.CreateMCPServer(ctx, d, 3); !errors.Is(err, mcpremote.ErrLimit) {
		t.Fatalf("a fourth server under a cap of 3: %v, want ErrLimit", err)
	}
	if err := st.DeleteMCPServer(ctx, c.AccountID, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMCPServer(ctx, d, 3); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

// secrets checks UpdateMCPSecrets on the server id of acct_1: tenancy,
// nil and an error store nothing, a write changes Sealed and nothing
// else, and concurrent updates run one at a time, each given what the
// one before stored.
func secrets(t *testing.T, st mcpremote.Store, id string) {
	ctx := context.Background()
	before, err := st.GetMCPServer(ctx, "acct_1", id)
	if err != nil {
		t.Fatal(err)
	}
	never := func([]byte) ([]byte, error) { return nil, errors.New("update called for a server that is not there") }
	if err := st.UpdateMCPSecrets(ctx, "acct_2", id, never); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("update the secrets through another account: %v, want ErrNotFound", err)
	}
	if err := st.UpdateMCPSecrets(ctx, "acct_1", "mcpsrv_none", never); !errors.Is(err, mcpremote.ErrNotFound) {
		t.Fatalf("update the secrets of no server: %v, want ErrNotFound", err)
	}
	var seen []byte
	if err := st.UpdateMCPSecrets(ctx, "acct_1", id, func(b []byte) ([]byte, error) { seen = bytes.Clone(b); return nil, nil }); err != nil {
		t.Fatal(err)
	}
	errRefused := errors.New("refused")
	if err := st.UpdateMCPSecrets(ctx, "acct_1", id, func([]byte) ([]byte, error) { return []byte("lost"), errRefused }); !errors.Is(err, errRefused) {
		t.Fatalf("update that fails: %v, want its error", err)
	}
	if got, err := st.GetMCPServer(ctx, "acct_1", id); err != nil || !bytes.Equal(seen, before.Sealed) || !bytes.Equal(got.Sealed, before.Sealed) {
		t.Fatalf("update given %v, stored %v after nil and an error (%v); want %v", seen, got.Sealed, err, before.Sealed)
	}
	if err := st.UpdateMCPSecrets(ctx, "acct_1", id, func([]byte) ([]byte, error) { return []byte("0"), nil }); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetMCPServer(ctx, "acct_1", id)
	if err != nil || string(got.Sealed) != "0" || !got.UpdatedAt.Equal(before.UpdatedAt) || got.Name != before.Name || got.URL != before.URL {
		t.Fatalf("after a write of the secrets: %v %+v; want Sealed 0, the rest as %+v", err, got, before)
	}
	list, err := st.ListMCPServers(ctx, "acct_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == id && string(s.Sealed) != "0" {
			t.Fatalf("the list after a write of the secrets: Sealed %q, want 0", s.Sealed)
		}
	}
	// Each update adds one to the number stored; one that starts while
	// another runs, or that is given what another already replaced,
	// loses a count.
	const n = 8
	var inside atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- st.UpdateMCPSecrets(ctx, "acct_1", id, func(b []byte) ([]byte, error) {
				if inside.Add(1) != 1 {
					return nil, errors.New("two updates of one server's secrets ran at once")
				}
				defer inside.Add(-1)
				v, err := strconv.Atoi(string(b))
				if err != nil {
					return nil, err
				}
				return []byte(strconv.Itoa(v + 1)), nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, err := st.GetMCPServer(ctx, "acct_1", id); err != nil || string(got.Sealed) != strconv.Itoa(n) {
		t.Fatalf("after %d concurrent updates: %v, Sealed %q", n, err, got.Sealed)
	}
	held(t, st, id)
	back := func([]byte) ([]byte, error) { return before.Sealed, nil }
	if err := st.UpdateMCPSecrets(ctx, "acct_1", id, back); err != nil {
		t.Fatal(err)
	}
}

// held checks that while one update of the server's secrets runs,
// another waits (here until its context ends) and is not called; then
// the next one is given what the first stored.
func held(t *testing.T, st mcpremote.Store, id string) {
	ctx := context.Background()
	in, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- st.UpdateMCPSecrets(ctx, "acct_1", id, func([]byte) ([]byte, error) {
			close(in)
			<-release
			return []byte("first"), nil
		})
	}()
	<-in
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	called := false
	err := st.UpdateMCPSecrets(wctx, "acct_1", id, func([]byte) ([]byte, error) { called = true; return nil, nil })
	cancel()
	close(release)
	if called || err == nil {
		t.Fatalf("an update ran (%v, error %v) while another held the server's secrets", called, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var seen string
	if err := st.UpdateMCPSecrets(ctx, "acct_1", id, func(b []byte) ([]byte, error) { seen = string(b); return nil, nil }); err != nil || seen != "first" {
		t.Fatalf("the update after a held one: %v, given %q, want first", err, seen)
	}
}

// WriteMeanwhile checks, on a store whose UpdateMCPServer does not wait
// for an UpdateMCPSecrets of the server (in memory, SQLite), that a
// write of the server while update runs is kept: update's result is not
// stored over it, and the answer is ErrSecretsChanged.
func WriteMeanwhile(t *testing.T, st mcpremote.Store) {
	ctx := context.Background()
	s := mcpremote.Server{ID: "mcpsrv_meanwhile", AccountID: "acct_1", Name: "meanwhile", URL: "https://example.com/mcp",
		Auth: mcpremote.Auth{Type: mcpremote.AuthNone}, Enabled: true, Sealed: []byte("before")}
	s.Touch(time.Now())
	if err := st.CreateMCPServer(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	err := st.UpdateMCPSecrets(ctx, s.AccountID, s.ID, func([]byte) ([]byte, error) {
		w := s
		w.Sealed = []byte("written meanwhile")
		w.Touch(time.Now())
		if err := st.UpdateMCPServer(ctx, w); err != nil {
			t.Errorf("the write meanwhile: %v", err)
		}
		return []byte("updated"), nil
	})
	if !errors.Is(err, mcpremote.ErrSecretsChanged) {
		t.Fatalf("an update whose server was written meanwhile: %v, want ErrSecretsChanged", err)
	}
	if got, err := st.GetMCPServer(ctx, s.AccountID, s.ID); err != nil || string(got.Sealed) != "written meanwhile" {
		t.Fatalf("after the write meanwhile: %v, Sealed %q", err, got.Sealed)
	}
}
