package store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unmigrated opens stores of both dialects without migrating them.
func unmigrated(t *testing.T) map[string]*DB {
	t.Helper()
	out := map[string]*DB{}
	lite, err := openSQLite(filepath.Join(t.TempDir(), "old.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out[SQLite] = lite
	if base := os.Getenv("TOOLHOST_TEST_POSTGRES"); base != "" {
		schema := fmt.Sprintf("migrate_test_%d", time.Now().UnixNano())
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		pg, err := openPostgres(context.Background(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			pg.SQL().ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			pg.Close()
		})
		out[Postgres] = pg
	}
	return out
}

// migrateTo applies the migrations up to and including version last to
// an unmigrated store, as a server of that version left it.
func migrateTo(ctx context.Context, t *testing.T, d *DB, last int) {
	t.Helper()
	ms, err := loadMigrations(d.dialect)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for _, m := range ms {
		if m.version > last {
			break
		}
		if err := d.apply(ctx, d.db, m, known); err != nil {
			t.Fatal(err)
		}
	}
}

// A journal written before 0004 keeps every row: the face its caller_slot
// held moves to face, and the slot becomes empty (nobody could declare one).
func TestMigration0004MovesTheFaceOutOfCallerSlot(t *testing.T) {
	ctx := context.Background()
	for name, d := range unmigrated(t) {
		t.Run(name, func(t *testing.T) {
			migrateTo(ctx, t, d, 3)
			for i, slot := range []string{"mcp", "hosted", "cli", ""} {
				if _, err := d.db.ExecContext(ctx, d.q(`INSERT INTO tool_executions (id, account_id, caller_slot, tool_name, status,
					lifecycle_state, commit_outcome, state, started_at, created_at, args_raw)
					VALUES (?, 'local', ?, 'get_time', 'success', 'finished', 'committed', 'observed', ?, ?, ?)`),
					fmt.Sprint("old", i), slot, 1000+i, 1000+i, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			rows, err := d.db.QueryContext(ctx, `SELECT id, caller_slot, face FROM tool_executions ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var id, slot, face string
				if err := rows.Scan(&id, &slot, &face); err != nil {
					t.Fatal(err)
				}
				got = append(got, id+":"+slot+":"+face)
			}
			want := "[old0::mcp old1::hosted old2::cli old3::]"
			if fmt.Sprint(got) != want {
				t.Errorf("rows after 0004: %v, want %s", got, want)
			}
			// The new tables answer.
			if _, err := d.GetSession(ctx, "local", "nope"); err == nil {
				t.Error("a session that was never created was found")
			}
		})
	}
}

// A database that got a later migration before an earlier one (branches
// land in any order) still gets the earlier one when it arrives, and a
// version the binary does not know is refused.
func TestMigrationsApplyBySetNotByHighestVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolhost.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Undo 0003 (journal_replicas) while later versions stay applied.
	for _, q := range []string{`DELETE FROM schema_migrations WHERE version = 3`, `DROP TABLE journal_replicas`} {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen with a gap: %v", err)
	}
	var n int
	if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM journal_replicas`).Scan(&n); err != nil {
		t.Fatalf("the missing migration was not applied: %v", err)
	}
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), "does not know") {
		t.Fatalf("a version from a newer binary: %v", err)
	}
}

// Sessions written before 0006 keep their rows: no character, no
// variables, permissions as they were.
func TestMigration0006KeepsSessions(t *testing.T) {
	ctx := context.Background()
	for name, d := range unmigrated(t) {
		t.Run(name, func(t *testing.T) {
			migrateTo(ctx, t, d, 5)
			if _, err := d.db.ExecContext(ctx, d.q(`INSERT INTO sessions (account_id, id, metadata, tool_permissions, created_at, updated_at)
				VALUES ('a', 'old', '{"k":1}', '{"enabled":false}', 1000, 1000)`)); err != nil {
				t.Fatal(err)
			}
			if err := d.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			s, err := d.GetSession(ctx, "a", "old")
			if err != nil {
				t.Fatal(err)
			}
			if s.Character != nil || string(s.Metadata) != `{"k":1}` || s.Permissions.Enabled {
				t.Errorf("session after 0006: %+v", s)
			}
			if _, err := d.GetVariable(ctx, "a", "old", "x"); err == nil {
				t.Error("a variable nobody set was found")
			}
		})
	}
}
