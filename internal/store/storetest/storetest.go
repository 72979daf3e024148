// Package storetest opens the SQL stores a test runs on: a fresh SQLite
// file and, when TOOLHOST_TEST_POSTGRES is set, PostgreSQL in a schema of
// its own, dropped when the test ends. Tests of the packages that use
// the store (the OAuth server, the admin API, the tools) share it.
package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
)

// Open returns the stores by name ("sqlite", and "postgres" when
// configured); prefix names the PostgreSQL schema, for a reader of a
// failed run's leftovers.
func Open(t testing.TB, prefix string) map[string]*store.DB {
	t.Helper()
	ctx := context.Background()
	lite, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out := map[string]*store.DB{"sqlite": lite}
	base := os.Getenv("TOOLHOST_TEST_POSTGRES")
	if base == "" {
		return out
	}
	schema := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
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
		if _, err := pg.SQL().ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping the test schema %s: %v", schema, err)
		}
		pg.Close()
	})
	out["postgres"] = pg
	return out
}
