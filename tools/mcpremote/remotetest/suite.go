// Package remotetest is the conformance suite every mcpremote.Store runs.
package remotetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
)

// Run checks st against the Store contract: tenancy, name uniqueness per
// account, secrets kept byte for byte, snapshots.
func Run(t *testing.T, st mcpremote.Store) {
	ctx := context.Background()
	off := false
	level := "none"
	a := mcpremote.Server{ID: "mcpsrv_a", AccountID: "acct_1", Name: "github", URL: "https://example.com/mcp",
		HeaderNames: []string{"X-Api-Key"}, Auth: mcpremote.Auth{Type: mcpremote.AuthBearer}, Enabled: true,
		Timeout: 1500 * time.Millisecond, Tools: map[string]mcpremote.Override{"delete": {Enabled: &off}, "get": {SideEffectLevel: &level}},
		Sealed: []byte{1, 2, 3, 0, 255}}
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
