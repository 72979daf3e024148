package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/journal/journaltest"
)

func TestSQLiteJournalConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store { return OpenSQLite(t) })
}

func TestPostgresJournalConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole journal conformance suite on PostgreSQL, seconds; runs in make test")
	}
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
// new unique schema, dropped when the test ends. Without the variable the
// test is skipped: the URL would otherwise be read as a SQLite file name.
func PostgresSchemaURL(t testing.TB) (string, string) {
	t.Helper()
	base := os.Getenv("TOOLHOST_TEST_POSTGRES")
	if base == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
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

// TestPostgresReadBarrierSeesOtherReplicasCalls: two replicas share a
// PostgreSQL journal and apply their spools only every hour; a call that
// returned on one is still seen at once by a read on the other (the read
// asks every live replica to apply its spool). A replica that died is left
// out of the barrier quickly instead of stalling reads.
func TestPostgresReadBarrierSeesOtherReplicasCalls(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_POSTGRES") == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	url, _ := PostgresSchemaURL(t)
	ctx := context.Background()
	replica := func() (*store.DB, *journal.Journal) {
		db, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// A read that waited the whole BarrierTimeout for the dead replica
		// below would take a minute, past what this test allows.
		j := journal.New(db, journal.Options{InstanceID: uuid.NewString(), SpoolDir: t.TempDir(), ApplyInterval: time.Hour,
			BarrierTimeout: time.Minute})
		if _, err := j.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return db, j
	}
	dbA, a := replica()
	dbB, b := replica()
	defer func() { b.Close(); dbB.Close() }()

	r := journal.Record{ID: uuid.NewString(), AccountID: "acct", SessionID: "s", ToolName: "get_time",
		Status: journal.StatusRunning, Lifecycle: journal.Opened, Commit: journal.CommitPending, State: journal.StateExecuting,
		StartedAt: time.Now(), CreatedAt: time.Now()}
	if err := a.Open(ctx, r, []journal.Event{{Seq: 0, State: journal.StateProposed, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	f := r
	f.Status, f.Lifecycle, f.Commit, f.State = journal.StatusSuccess, journal.Finished, journal.CommitCommitted, journal.StateObserved
	if err := a.Finish(ctx, f, []journal.Event{{Seq: 1, State: journal.StateObserved, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dbB.Get(ctx, "acct", r.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("the call reached the store before any read asked for it: %v", err)
	}
	got, err := b.Store().Get(ctx, "acct", r.ID)
	if err != nil || got.Lifecycle != journal.Finished {
		t.Fatalf("read on the other replica: %+v, %v", got, err)
	}

	// A dies without a word: its listener and liveness mark go with it,
	// and the next read forgets it rather than wait for it.
	a.Abandon()
	dbA.Close()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, _, err := b.Store().List(rctx, journal.Query{AccountID: "acct", SessionID: "s"}); err != nil {
		t.Fatalf("read with a dead replica: %v", err)
	}
	if lag, err := dbB.Lagging(ctx, "", 1<<62); err != nil || len(lag) != 1 {
		t.Errorf("replicas after the dead one was left out: %v, %v; want only b", lag, err)
	}
}
