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
	out := map[string]*store.DB{}
	for name, dbs := range open(t, prefix, 1) {
		out[name] = dbs[0]
	}
	return out
}

// Replicas is Open with each store opened twice, as two replicas (or
// two processes) sharing it see it: two opens of one SQLite file, two
// connection pools on one PostgreSQL schema.
func Replicas(t testing.TB, prefix string) map[string][2]*store.DB {
	t.Helper()
	out := map[string][2]*store.DB{}
	for name, dbs := range open(t, prefix, 2) {
		out[name] = [2]*store.DB{dbs[0], dbs[1]}
	}
	return out
}

// open opens each store n times.
func open(t testing.TB, prefix string, n int) map[string][]*store.DB {
	t.Helper()
	out := map[string][]*store.DB{"sqlite": openN(t, filepath.Join(t.TempDir(), "toolhost.db"), n)}
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
	pgs := openN(t, u.String(), n)
	// Registered after openN's closes, so it runs before them.
	t.Cleanup(func() {
		if _, err := pgs[0].SQL().ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping the test schema %s: %v", schema, err)
		}
	})
	out["postgres"] = pgs
	return out
}

// openN opens dsn n times, each closed when the test ends.
func openN(t testing.TB, dsn string, n int) []*store.DB {
	t.Helper()
	var out []*store.DB
	for range n {
		db, err := store.Open(context.Background(), dsn, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		out = append(out, db)
	}
	return out
}
