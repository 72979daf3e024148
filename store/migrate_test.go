package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

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
