package toolhost

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
)

// A retention pass of serve deletes the finished records older than
// journal.retention on its clock, and the oldest beyond journal.max_rows.
func TestRetentionPassKeepsTheWindowAndTheCap(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	write := func(id string, at time.Time) {
		r := journal.Record{ID: id, AccountID: "acct", ToolName: "get_time", Status: journal.StatusSuccess, Lifecycle: journal.Finished,
			Commit: journal.CommitCommitted, State: journal.StateObserved, StartedAt: at, CreatedAt: at, FinishedAt: at}
		if err := db.Write(context.Background(), []journal.Write{{Insert: true, Record: r}}); err != nil {
			t.Fatal(err)
		}
	}
	write("91-days", now.Add(-91*24*time.Hour))
	write("89-days", now.Add(-89*24*time.Hour))
	write("1-day", now.Add(-24*time.Hour))
	write("today", now)
	cfg := config.Default()
	cfg.Journal.Retention = duration.Duration(90 * 24 * time.Hour)
	cfg.Journal.MaxRows = 2
	a := &App{o: Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)}, db: db}
	a.prune(context.Background(), func() time.Time { return now })
	for id, kept := range map[string]bool{"91-days": false, "89-days": false, "1-day": true, "today": true} {
		_, err := db.Get(context.Background(), "acct", id)
		if (err == nil) != kept || (err != nil && !errors.Is(err, journal.ErrNotFound)) {
			t.Errorf("%s: kept %v (%v), want %v", id, err == nil, err, kept)
		}
	}
}
