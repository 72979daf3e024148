package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"toolhost/journal"
	"toolhost/journal/journaltest"
	"toolhost/store"
)

func TestSQLiteJournalConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store { return OpenSQLite(t) })
}

func TestPostgresJournalConformance(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	journaltest.Run(t, func(t *testing.T) journal.Store { return OpenPostgres(t) })
}

// OpenSQLite opens a store on a fresh file in t.TempDir().
func OpenSQLite(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenPostgres opens a store in a fresh schema of TOOLHOST_TEST_POSTGRES
// and drops the schema at the end.
func OpenPostgres(t testing.TB) *store.DB {
	t.Helper()
	url, schema := PostgresSchemaURL(t)
	db, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	_ = schema
	return db
}

// PostgresSchemaURL returns TOOLHOST_TEST_POSTGRES with search_path set to a
// new unique schema, dropped when the test ends.
func PostgresSchemaURL(t testing.TB) (string, string) {
	t.Helper()
	base := os.Getenv("TOOLHOST_TEST_POSTGRES")
	schema := "th_test_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE", schema)); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return base + sep + "search_path=" + schema, schema
}

func TestMigrationsAreIdempotentAndRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolhost.db")
	first := -1
	for range 2 {
		db, err := store.Open(context.Background(), path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var name string
		if err := db.SQL().QueryRow(`SELECT COUNT(*), MIN(name) FROM schema_migrations WHERE version = 1`).Scan(&n, &name); err != nil || n != 1 || name != "journal" {
			t.Errorf("migration 1: %d rows named %q, %v", n, name, err)
		}
		if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || (first >= 0 && n != first) {
			t.Errorf("schema_migrations has %d rows after reopening, had %d; %v", n, first, err)
		}
		first = n
		var mode string
		if err := db.SQL().QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode %q, %v; want wal", mode, err)
		}
		db.Close()
	}
}

func TestNewerDatabaseIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolhost.db")
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := store.Open(context.Background(), path, store.Options{}); err == nil || !strings.Contains(err.Error(), "upgrade the binary") {
		t.Errorf("Open of a newer database: %v", err)
	}
}

func TestSQLiteLivenessAcrossStores(t *testing.T) {
	// Two stores on one file behave like two processes: the mark of one is
	// seen by the other, and disappears when the first closes.
	path := filepath.Join(t.TempDir(), "toolhost.db")
	a, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	id := uuid.NewString()
	if err := a.Hold(ctx, id); err != nil {
		t.Fatal(err)
	}
	if alive, err := b.Alive(ctx, id); err != nil || !alive {
		t.Fatalf("alive=%v err=%v while held", alive, err)
	}
	a.Close()
	if alive, err := b.Alive(ctx, id); err != nil || alive {
		t.Fatalf("alive=%v err=%v after close", alive, err)
	}
}
