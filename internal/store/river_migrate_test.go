package store

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

var updateRiver = flag.Bool("update", false, "rewrite the embedded river migrations from river's own")

// riverFiles are the embedded migrations that carry river's schema: which
// of river's versions each holds. PostgreSQL cannot run river's 5–8 in the
// transaction of 1–4 (version 6 uses an enum value that version 4 adds:
// 55P04), so they are two migrations there.
var riverFiles = map[string][]struct {
	file     string
	from, to int
}{
	Postgres: {{"0018_river_1_4.sql", 1, 4}, {"0019_river_5_8.sql", 5, 8}},
	SQLite:   {{"0017_river.sql", 1, 8}},
}

// renderRiver is river's own up SQL of versions from..to, as rivermigrate
// renders it for the schema of the search path, followed by the
// river_migration rows rivermigrate would write for them.
func renderRiver(ms []rivermigrate.Migration, from, to int) string {
	var b strings.Builder
	b.WriteString("-- river's schema, versions " + fmt.Sprint(from) + " to " + fmt.Sprint(to) +
		", rendered from github.com/riverqueue/river v0.51.2 by TestRiverMigrationsAreRiversOwn (-update).\n")
	var legacy, lined []string
	for _, m := range ms {
		if m.Version < from || m.Version > to {
			continue
		}
		fmt.Fprintf(&b, "\n-- river %03d_%s\n", m.Version, m.Name)
		b.WriteString(strings.ReplaceAll(m.SQLUp, "/* TEMPLATE: schema */", ""))
		b.WriteString("\n")
		// Before version 5 river_migration has no line column.
		if m.Version < 5 {
			legacy = append(legacy, fmt.Sprintf("(%d)", m.Version))
		} else {
			lined = append(lined, fmt.Sprintf("('main', %d)", m.Version))
		}
		if m.Version == 4 && len(legacy) > 0 {
			fmt.Fprintf(&b, "\nINSERT INTO river_migration (version) VALUES %s;\n", strings.Join(legacy, ", "))
			legacy = nil
		}
	}
	if len(legacy) > 0 {
		fmt.Fprintf(&b, "\nINSERT INTO river_migration (version) VALUES %s;\n", strings.Join(legacy, ", "))
	}
	if len(lined) > 0 {
		fmt.Fprintf(&b, "\nINSERT INTO river_migration (line, version) VALUES %s;\n", strings.Join(lined, ", "))
	}
	return b.String()
}

func riverVersions(t *testing.T, dialect string) []rivermigrate.Migration {
	t.Helper()
	var ms []rivermigrate.Migration
	switch dialect {
	case Postgres:
		m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		ms = m.AllVersions()
	default:
		m, err := rivermigrate.New(riversqlite.New(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		ms = m.AllVersions()
	}
	return ms
}

// TestRiverMigrationsAreRiversOwn: the embedded files are river's SQL,
// unchanged but for the schema template, split as riverFiles says.
func TestRiverMigrationsAreRiversOwn(t *testing.T) {
	for dialect, files := range riverFiles {
		ms := riverVersions(t, dialect)
		if got := ms[len(ms)-1].Version; got != files[len(files)-1].to {
			t.Errorf("%s: river has migrations up to %d, the embedded ones end at %d", dialect, got, files[len(files)-1].to)
		}
		for _, f := range files {
			path := filepath.Join("migrations", dialect, f.file)
			want := renderRiver(ms, f.from, f.to)
			if *updateRiver {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("%s differs from river's own migrations %d–%d; run go test ./internal/store -run RiverMigrations -update", path, f.from, f.to)
			}
		}
	}
}

// TestRiverAgreesTheSchemaIsCurrent: after toolhost's own migrations,
// river's migrator finds nothing to apply.
func TestRiverAgreesTheSchemaIsCurrent(t *testing.T) {
	ctx := context.Background()
	for dialect, d := range migrated(t) {
		t.Run(dialect, func(t *testing.T) {
			var res *rivermigrate.ValidateResult
			var err error
			if d.pg() {
				m, merr := rivermigrate.New(riverpgxv5.New(d.pgw), nil)
				if merr != nil {
					t.Fatal(merr)
				}
				res, err = m.Validate(ctx, nil)
			} else {
				m, merr := rivermigrate.New(riversqlite.New(d.db), nil)
				if merr != nil {
					t.Fatal(merr)
				}
				res, err = m.Validate(ctx, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK {
				t.Fatalf("river finds its schema out of date: %v", res.Messages)
			}
		})
	}
}

// migrated opens and migrates stores of both dialects.
func migrated(t *testing.T) map[string]*DB {
	t.Helper()
	out := map[string]*DB{}
	for dialect, d := range unmigrated(t) {
		if err := d.migrate(context.Background()); err != nil {
			t.Fatalf("%s: %v", dialect, err)
		}
		out[dialect] = d
	}
	return out
}
