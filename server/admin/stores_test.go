package admin_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"toolhost/store"
)

// sqlStores opens a fresh SQLite store and, when TOOLHOST_TEST_POSTGRES is
// set, a PostgreSQL store in a schema of its own (dropped afterwards).
func sqlStores(t *testing.T) map[string]*store.DB {
	t.Helper()
	ctx := context.Background()
	out := map[string]*store.DB{}
	lite, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out["sqlite"] = lite
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		schema := fmt.Sprintf("admin_test_%d", time.Now().UnixNano())
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		pg, err := store.Open(ctx, u.String(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			pg.SQL().ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			pg.Close()
		})
		out["postgres"] = pg
	}
	return out
}
