// Package benchstore gives the benchmark commands the stores they measure:
// SQLite in a temporary directory and, when a PostgreSQL URL is given, a
// schema of its own on that server, dropped when the benchmark is done.
package benchstore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/toolhost/toolhost/internal/store"
)

// Target is one store to measure: its name in the results, and the DSN
// store.Open takes.
type Target struct {
	Name, DSN string
}

// Targets are SQLite in dir and, when pg is not empty, PostgreSQL at pg
// in a new schema named prefix_<nanoseconds>.
func Targets(dir, pg, prefix string) ([]Target, error) {
	out := []Target{{"SQLite", filepath.Join(dir, "toolhost.db")}}
	if pg == "" {
		return out, nil
	}
	u, err := url.Parse(pg)
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()))
	u.RawQuery = q.Encode()
	return append(out, Target{"PostgreSQL", u.String()}), nil
}

// Open opens t's store, migrated. done drops a PostgreSQL target's schema
// and closes the store.
func Open(ctx context.Context, t Target) (db *store.DB, done func(), err error) {
	db, err = store.Open(ctx, t.DSN, store.Options{})
	if err != nil {
		return nil, nil, err
	}
	return db, func() {
		if store.IsPostgres(t.DSN) {
			u, _ := url.Parse(t.DSN)
			_, _ = db.SQL().ExecContext(context.Background(), `DROP SCHEMA `+u.Query().Get("search_path")+` CASCADE`)
		}
		db.Close()
	}, nil
}
