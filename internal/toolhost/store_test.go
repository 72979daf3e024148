package toolhost

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/journal"
)

// TestTheJournalTakesTheReadOnlyOpenDelay: journal.read_only_open_delay
// reaches the journal serve builds: its default when the file says
// nothing, the value given, and for "0s" a read-only call's opened
// record in the spool before Open returns (before its tool runs).
func TestTheJournalTakesTheReadOnlyOpenDelay(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       time.Duration // negative: spooled at once
	}{
		{"unset", `{"journal": {}}`, journal.DefaultReadOnlyOpenDelay},
		{"given", `{"journal": {"read_only_open_delay": "250ms"}}`, 250 * time.Millisecond},
		{"zero", `{"journal": {"read_only_open_delay": "0s"}}`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			o := &Options{Data: t.TempDir(), Config: cfg}
			opts := journalOptions(o, slog.New(slog.DiscardHandler))
			if got := opts.ReadOnlyOpenDelay; got != tc.want && (tc.want >= 0 || got >= 0) {
				t.Fatalf("ReadOnlyOpenDelay %v, want %v", got, tc.want)
			}
			if tc.want >= 0 {
				return
			}
			j := journal.New(journal.NewMemStore(), opts)
			if _, err := j.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			r := journal.Record{ID: "c1", AccountID: "acct", ToolName: "get_time", SideEffectLevel: "none",
				Status: journal.StatusRunning, Lifecycle: journal.Opened, Commit: journal.CommitPending, State: journal.StateExecuting}
			if err := j.Open(context.Background(), r, []journal.Event{{State: journal.StateProposed}, {Seq: 1, State: journal.StateExecuting}}); err != nil {
				t.Fatal(err)
			}
			if n := spoolBytes(t, opts.SpoolDir); n == 0 {
				t.Error(`with read_only_open_delay "0s", a read-only call's opened record is not in the spool when Open returns`)
			}
		})
	}
}

// spoolBytes is the size of the spool segments in dir.
func spoolBytes(t *testing.T, dir string) int64 {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.spool"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range segs {
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}
