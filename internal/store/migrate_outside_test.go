package store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// pgSchema opens n unmigrated PostgreSQL stores on one new schema.
func pgSchema(t *testing.T, n int) []*DB {
	t.Helper()
	base := os.Getenv("TOOLHOST_TEST_POSTGRES")
	if base == "" {
		t.Skip("TOOLHOST_TEST_POSTGRES is not set (CI sets it)")
	}
	schema := fmt.Sprintf("migrate_outside_%d", time.Now().UnixNano())
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	var out []*DB
	for range n {
		d, err := openPostgres(context.Background(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	t.Cleanup(func() {
		_, _ = out[0].SQL().ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		for _, d := range out {
			d.Close()
		}
	})
	return out
}

func indexValid(ctx context.Context, t *testing.T, d *DB, name string) bool {
	t.Helper()
	invalid, err := invalidIndex(ctx, d.db, name)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1 && !invalid
}

// applyOne runs m as migrate does: under the migration lock.
func applyOne(ctx context.Context, d *DB, m migration) error {
	conn, unlock, err := d.migrationLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	ms, err := loadMigrations(d.dialect)
	if err != nil {
		return err
	}
	known := map[int]bool{m.version: true}
	for _, o := range ms {
		known[o.version] = true
	}
	return d.apply(ctx, conn, m, known)
}

// Replicas that start together on an empty schema migrate it once, the
// retention indexes built concurrently among the transactional
// migrations, and none deadlocks on the migration lock (a waiter never
// sits in a statement a concurrent build would wait out).
func TestMigrateTogetherWithConcurrentIndexes(t *testing.T) {
	ds := pgSchema(t, 3)
	ctx := context.Background()
	errs := make(chan error, len(ds))
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { errs <- d.migrate(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n, distinct int
	if err := ds[0].db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	ms, _ := loadMigrations(Postgres)
	if n != len(ms) || distinct != n {
		t.Fatalf("schema_migrations has %d rows (%d versions), want %d", n, distinct, len(ms))
	}
	for _, ix := range []string{"tool_executions_created", "idempotency_keys_execution"} {
		if !indexValid(ctx, t, ds[0], ix) {
			t.Fatalf("index %s missing or invalid", ix)
		}
	}
}

// An index a failed concurrent build left INVALID is dropped and built
// again by the migration that names it, not kept by IF NOT EXISTS.
func TestNoTransactionMigrationRebuildsAnInvalidIndex(t *testing.T) {
	d := pgSchema(t, 1)[0]
	ctx := context.Background()
	if err := d.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE dup (v INT); INSERT INTO dup VALUES (1), (1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `CREATE UNIQUE INDEX CONCURRENTLY dup_v ON dup (v)`); err == nil {
		t.Fatal("a unique index over duplicates was built")
	}
	if invalid, err := invalidIndex(ctx, d.db, "dup_v"); err != nil || !invalid {
		t.Fatalf("the failed build left no invalid index (%v)", err)
	}
	if _, err := d.db.ExecContext(ctx, `DELETE FROM dup WHERE ctid IN (SELECT ctid FROM dup LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	m := migration{version: 9001, name: "dup_v", outside: true,
		sql: noTransaction + "\n-- a comment; with a semicolon\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS dup_v\n  ON dup (v);\n"}
	if err := applyOne(ctx, d, m); err != nil {
		t.Fatal(err)
	}
	if !indexValid(ctx, t, d, "dup_v") {
		t.Fatal("the invalid index was kept")
	}
	if _, err := d.db.ExecContext(ctx, `INSERT INTO dup VALUES (1)`); err == nil || !strings.Contains(err.Error(), "dup_v") {
		t.Fatalf("the rebuilt unique index does not hold: %v", err)
	}
	if err := applyOne(ctx, d, m); err != nil { // recorded: not run again
		t.Fatal(err)
	}
}

// While a noTransaction migration's concurrent build waits for a
// writer's open transaction, other writers of the table go on (a build
// inside a transaction would hold them all until it ends).
func TestNoTransactionMigrationLetsWritersThrough(t *testing.T) {
	d := pgSchema(t, 1)[0]
	ctx := context.Background()
	if err := d.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE w (v INT)`); err != nil {
		t.Fatal(err)
	}
	open, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback()
	if _, err := open.ExecContext(ctx, `INSERT INTO w VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- applyOne(ctx, d, migration{version: 9002, name: "w_v", outside: true,
			sql: noTransaction + "\nCREATE INDEX CONCURRENTLY IF NOT EXISTS w_v ON w (v);\n"})
	}()
	// Wait until the build waits for the open transaction.
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			t.Fatalf("the build ended before the open transaction did: %v", err)
		default:
		}
		if err := d.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'CREATE INDEX CONCURRENTLY IF NOT EXISTS w_v%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	// A hang guard, not a timing check: a writer held by the build would
	// wait until the open transaction ends, which it does only below.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := d.db.ExecContext(wctx, `INSERT INTO w VALUES (2)`); err != nil {
		t.Fatalf("a writer was held by the index build: %v", err)
	}
	if err := open.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !indexValid(ctx, t, d, "w_v") {
		t.Fatal("the index is missing or invalid")
	}
}

func TestStatementsSplitAtLineEnds(t *testing.T) {
	got := statements(noTransaction + "\n-- x; y\nCREATE INDEX a\n  ON t (v);\n\nCREATE INDEX b ON t (w);\nSELECT 1")
	want := []string{"CREATE INDEX a\n  ON t (v);\n", "CREATE INDEX b ON t (w);\n", "SELECT 1\n"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statements = %q, want %q", got, want)
	}
}
