package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// The hot reads run through prepared statements on SQLite: prepared once,
// reused, seeing every later write, bounded, and closed with the store.
func TestHotReadsArePrepared(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	reads := func() (session.Session, error) {
		if _, err := d.KeyByHash(ctx, "no such hash"); !errors.Is(err, keys.ErrNotFound) {
			return session.Session{}, fmt.Errorf("KeyByHash: %w", err)
		}
		if _, _, err := d.ListDefinitions(ctx, tooldef.Query{AccountID: "acct"}); err != nil {
			return session.Session{}, err
		}
		if _, err := d.ListMCPServers(ctx, "acct"); err != nil {
			return session.Session{}, err
		}
		return d.GetSession(ctx, "acct", "s1")
	}
	if _, err := reads(); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("before the session exists: %v", err)
	}
	if n := len(d.stmts.m); n != 4 {
		t.Fatalf("%d prepared statements, want 4 (key, definitions, servers, session)", n)
	}
	// A write after the statement was prepared is what the next read sees.
	now := time.UnixMilli(time.Now().UnixMilli()).UTC()
	if err := d.CreateSession(ctx, session.Session{ID: "s1", AccountID: "acct", Metadata: json.RawMessage(`{"user":"ada"}`),
		Permissions: session.Default(), CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	s, err := reads()
	if err != nil || string(s.Metadata) != `{"user":"ada"}` {
		t.Fatalf("after the write: %+v, %v", s, err)
	}
	if n := len(d.stmts.m); n != 4 {
		t.Fatalf("%d prepared statements after the same reads again, want 4", n)
	}
	// A paged or filtered list is not one of them: the cache stays bounded
	// by the hot reads, whatever the REST API asks.
	for i := range 40 {
		if _, _, err := d.ListDefinitions(ctx, tooldef.Query{AccountID: "acct", Name: fmt.Sprint("t", i), Limit: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(d.stmts.m); n != 4 {
		t.Fatalf("%d prepared statements after 40 paged lists, want 4", n)
	}
	// Past the bound a query runs unprepared, and right.
	for i := range maxStmts + 8 {
		var got int
		if err := d.queryRow(ctx, fmt.Sprintf("SELECT ? + %d", i), 1).Scan(&got); err != nil || got != i+1 {
			t.Fatalf("query %d: %d, %v", i, got, err)
		}
	}
	if n := len(d.stmts.m); n != maxStmts {
		t.Fatalf("%d prepared statements, want the bound %d", n, maxStmts)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetSession(ctx, "acct", "s1"); err == nil {
		t.Fatal("a read after Close succeeded")
	}
}
