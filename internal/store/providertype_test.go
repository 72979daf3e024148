package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolhost/toolhost/journal"
)

// A journal written before provider_type took the seed's values reads
// back in them: "custom" (a tool definition) is preset, anything else
// outside the enum unknown, the seed's values stay, and the provider
// type filter finds the old rows under their new value.
func TestMigrationMapsProviderTypesToTheSeed(t *testing.T) {
	ctx := context.Background()
	before := map[string]int{SQLite: 10, Postgres: 11}
	for name, d := range unmigrated(t) {
		t.Run(name, func(t *testing.T) {
			migrateTo(ctx, t, d, before[name])
			old := []string{"custom", "builtin", "preset", "mcp", "unknown", "", "Custom"}
			for i, pt := range old {
				if _, err := d.db.ExecContext(ctx, d.q(`INSERT INTO tool_executions (id, account_id, provider_type, tool_name, status,
					lifecycle_state, commit_outcome, state, started_at, created_at, args_raw)
					VALUES (?, 'local', ?, 'lookup_npc', 'success', 'finished', 'committed', 'observed', ?, ?, ?)`),
					fmt.Sprint("old", i), pt, 1000+i, 1000+i, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			recs, _, err := d.List(ctx, journal.Query{AccountID: "local", SortBy: journal.SortCreatedAt, Asc: true, Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.ProviderType)
			}
			if want := "[preset builtin preset mcp unknown unknown unknown]"; fmt.Sprint(got) != want {
				t.Errorf("provider types after the migration: %v, want %s", got, want)
			}
			for pt, n := range map[string]int{journal.ProviderPreset: 2, journal.ProviderUnknown: 3, "custom": 0} {
				if _, total, err := d.List(ctx, journal.Query{AccountID: "local", ProviderType: pt, Limit: 50}); err != nil || total != n {
					t.Errorf("provider_type %s: %d rows (%v), want %d", pt, total, err, n)
				}
			}
		})
	}
}
