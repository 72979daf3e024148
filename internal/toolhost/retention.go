package toolhost

import (
	"context"
	"time"

	"github.com/toolhost/toolhost/internal/store"
)

// retentionEvery is how often serve prunes the journal when a retention
// is configured.
const retentionEvery = time.Hour

// startRetention runs the journal's retention (journal.retention,
// journal.max_rows) at start and then every hour until the app closes;
// nothing runs when neither is set. On PostgreSQL one replica prunes at a
// time (store.Prune); the others find the work done.
func (a *App) startRetention() {
	j := a.o.Config.Journal
	if j.Retention == 0 && j.MaxRows == 0 {
		return
	}
	a.every(retentionEvery, true, func(ctx context.Context) { a.prune(ctx, time.Now) })
}

// prune runs one retention pass on the clock now and logs what it did.
func (a *App) prune(ctx context.Context, now func() time.Time) {
	j, logger := a.o.Config.Journal, a.o.Logger
	o := store.PruneOptions{MaxRows: j.MaxRows}
	at := now()
	if j.Retention > 0 {
		o.Before = at.Add(-j.Retention.D())
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	res, err := a.db.Prune(ctx, o)
	if err != nil {
		logger.WarnContext(ctx, "journal retention failed", "error", err, "records_deleted", res.Records)
		return
	}
	keys, err := a.db.PurgeIdempotency(ctx, at)
	if err != nil {
		logger.WarnContext(ctx, "journal retention: idempotency keys not purged", "error", err)
	}
	logger.InfoContext(ctx, "journal retention", "records_deleted", res.Records, "round_records_deleted", res.Rounds,
		"idempotency_keys_deleted", keys, "skipped_another_replica_prunes", res.Skipped)
}

// PruneJournal deletes the journal's records created before before (as
// `toolhost journal prune --before DATE`), with what retention deletes
// with them, and reports how many records went.
func PruneJournal(ctx context.Context, o Options, before time.Time) (int64, error) {
	db, err := OpenStore(ctx, o)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	res, err := db.Prune(ctx, store.PruneOptions{Before: before})
	return res.Records, err
}
