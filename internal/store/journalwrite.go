package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolhost/toolhost/journal"
)

// The journal's group-commit writer is the hot path of every call: each
// call waits for two of its transactions. Both dialects therefore write
// through connections of their own with statements prepared once, instead
// of database/sql's pool re-parsing SQL per batch.

// sqliteWriter is one SQLite connection reserved for journal writes, with
// its insert and update prepared on it. SQLite has one writer at a time
// anyway; a dedicated connection saves the pool round trip, the
// per-transaction goroutine of database/sql and the statement re-parsing.
type sqliteWriter struct {
	mu                    sync.Mutex
	conn                  *sql.Conn
	begin, commit, rollbk *sql.Stmt
	ins, upd              *sql.Stmt
	ups, updOpen          *sql.Stmt // the spool's idempotent forms
}

func (w *sqliteWriter) stmts() []*sql.Stmt {
	return []*sql.Stmt{w.begin, w.commit, w.rollbk, w.ins, w.upd, w.ups, w.updOpen}
}

func (w *sqliteWriter) ready(ctx context.Context, db *sql.DB) error {
	if w.conn != nil {
		return nil
	}
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("journal writer connection: %w", err)
	}
	w.conn = c
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&w.begin, "BEGIN IMMEDIATE"}, {&w.commit, "COMMIT"}, {&w.rollbk, "ROLLBACK"},
		{&w.ins, insertExec}, {&w.upd, updateExec}, {&w.ups, upsertExec}, {&w.updOpen, updateOpenedExec},
	} {
		if *p.dst, err = c.PrepareContext(ctx, p.query); err != nil {
			w.discard()
			return fmt.Errorf("prepare journal statement %.30q: %w", p.query, err)
		}
	}
	return nil
}

// discard drops the connection after a failure that may have left it inside
// a transaction: it must not go back to the pool in that state.
func (w *sqliteWriter) discard() {
	if w.conn == nil {
		return
	}
	_ = w.closeStmts() // the connection is dropped below; a statement that will not close goes with it
	_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
	w.conn.Close()
	w.conn = nil
}

func (w *sqliteWriter) closeStmts() error {
	var errs []error
	for _, st := range w.stmts() {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	w.begin, w.commit, w.rollbk, w.ins, w.upd, w.ups, w.updOpen = nil, nil, nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

func (w *sqliteWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return nil
	}
	err := errors.Join(w.closeStmts(), w.conn.Close())
	w.conn = nil
	return err
}

// write applies ws in order in one IMMEDIATE transaction.
func (w *sqliteWriter) write(ctx context.Context, db *sql.DB, ws []journal.Write) error {
	return w.tx(ctx, db, func() error { return w.apply(ctx, ws) })
}

// applySpooled is Store.Apply: ws in order in one transaction, inserts as
// upserts into opened records only, updates of opened records only.
func (w *sqliteWriter) applySpooled(ctx context.Context, db *sql.DB, ws []journal.Write) ([]string, error) {
	var unchanged []string
	err := w.tx(ctx, db, func() error {
		unchanged = unchanged[:0]
		for _, wr := range ws {
			evs := encodeEvents(wr.Events)
			var res sql.Result
			var err error
			if wr.Insert {
				res, err = w.ups.ExecContext(ctx, insertArgs(wr.Record, evs)...)
			} else {
				res, err = w.updOpen.ExecContext(ctx, updateArgs(wr.Record, evs)...)
			}
			if err != nil {
				return fmt.Errorf("apply execution %s: %w", wr.Record.ID, refusal(err))
			}
			if n, err := res.RowsAffected(); err == nil && n == 0 {
				unchanged = append(unchanged, wr.Record.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return unchanged, nil
}

// tx runs fn in one IMMEDIATE transaction on the writer's connection.
func (w *sqliteWriter) tx(ctx context.Context, db *sql.DB, fn func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ready(ctx, db); err != nil {
		return err
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		w.discard()
		return fmt.Errorf("begin: %w", err)
	}
	err := fn()
	if err == nil {
		if _, cerr := w.commit.ExecContext(ctx); cerr != nil {
			err = fmt.Errorf("commit: %w", cerr)
		}
	}
	if err != nil {
		// The rollback must run even when ctx is what failed.
		if _, rerr := w.rollbk.ExecContext(context.WithoutCancel(ctx)); rerr != nil {
			w.discard()
		}
		return err
	}
	return nil
}

func (w *sqliteWriter) apply(ctx context.Context, ws []journal.Write) error {
	for _, wr := range ws {
		evs := encodeEvents(wr.Events)
		if wr.Insert {
			if _, err := w.ins.ExecContext(ctx, insertArgs(wr.Record, evs)...); err != nil {
				return fmt.Errorf("insert execution %s: %w", wr.Record.ID, err)
			}
			continue
		}
		res, err := w.upd.ExecContext(ctx, updateArgs(wr.Record, evs)...)
		if err != nil {
			return fmt.Errorf("update execution %s: %w", wr.Record.ID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n != 1 {
			return fmt.Errorf("update execution %s: %w", wr.Record.ID, journal.ErrNotFound)
		}
	}
	return nil
}

// refusal marks err with journal.ErrRefused when the database refused a
// statement for the values it carried: on PostgreSQL a data exception
// (class 22: a NUL, invalid UTF-8, a value out of range), an integrity
// constraint (23) or a program limit (54: a value too large); on SQLite a
// constraint, a value too big or of the wrong type. Anything else (a lost
// connection, a full disk, a read-only or busy database) is the store's.
func refusal(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:min(2, len(pe.Code))] {
		case "22", "23", "54":
			return fmt.Errorf("%w: %w", journal.ErrRefused, err)
		}
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
			return fmt.Errorf("%w: %w", journal.ErrRefused, err)
		}
	}
	return err
}

// PostgreSQL journal writes go through a small pgx pool of their own: a
// batch is sent in one round trip (pgx caches the prepared statements per
// connection) instead of one round trip per statement. The journal has one
// writer; the second connection serves a reconciliation or a test writing
// at the same time. (Several writers committing in parallel were measured
// slower on 2 cores: smaller batches, more flushes.)
const pgWriteConns = 2

var (
	pgInsertExec       = (&DB{dialect: Postgres}).q(insertExec)
	pgUpsertExec       = (&DB{dialect: Postgres}).q(upsertExec)
	pgUpdateOpenedExec = (&DB{dialect: Postgres}).q(updateOpenedExec)
	// pgUpdateExec fails the batch's implicit transaction (division by
	// zero) when the record does not exist: an update of a missing record
	// must undo the whole batch, and the batch's results are read only
	// after the server has committed it. Guarding each update in its own
	// statement costs nothing beyond the update's own index lookup, where a
	// separate check over all the batch's ids was planned once, on a table
	// still empty, as a sequential scan that grew with the journal.
	pgUpdateExec = `WITH u AS (` + (&DB{dialect: Postgres}).q(updateExec) + ` RETURNING 1) SELECT 1 / count(*)::int FROM u`
)

func openPGWriter(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres url: %w", err)
	}
	cfg.MaxConns = pgWriteConns
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("journal writer pool: %w", err)
	}
	return p, nil
}

// writePG sends ws as one pipelined batch: the statements run in the
// implicit transaction the server wraps around a pipeline that ends with a
// single Sync, so one round trip writes and commits the whole batch (all or
// none), and the server answers only once the commit is flushed.
func (d *DB) writePG(ctx context.Context, ws []journal.Write) error {
	b := &pgx.Batch{}
	for _, w := range ws {
		evs := encodeEvents(w.Events)
		if w.Insert {
			b.Queue(pgInsertExec, insertArgs(w.Record, evs)...)
		} else {
			b.Queue(pgUpdateExec, updateArgs(w.Record, evs)...)
		}
	}
	br := d.pgw.SendBatch(ctx, b)
	for _, w := range ws {
		if _, err := br.Exec(); err != nil {
			br.Close()
			if w.Insert {
				return fmt.Errorf("insert execution %s: %w", w.Record.ID, err)
			}
			if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22012" {
				return fmt.Errorf("update execution %s: %w", w.Record.ID, journal.ErrNotFound)
			}
			return fmt.Errorf("update execution %s: %w", w.Record.ID, err)
		}
	}
	// Close reads up to the server's ReadyForQuery, which follows the
	// commit: only then is the batch durable.
	if err := br.Close(); err != nil {
		return fmt.Errorf("commit journal batch: %w", err)
	}
	return nil
}

// applyPG is Store.Apply on PostgreSQL: one pipelined batch, one implicit
// transaction, as writePG.
func (d *DB) applyPG(ctx context.Context, ws []journal.Write) ([]string, error) {
	b := &pgx.Batch{}
	for _, w := range ws {
		evs := encodeEvents(w.Events)
		if w.Insert {
			b.Queue(pgUpsertExec, insertArgs(w.Record, evs)...)
		} else {
			b.Queue(pgUpdateOpenedExec, updateArgs(w.Record, evs)...)
		}
	}
	br := d.pgw.SendBatch(ctx, b)
	var unchanged []string
	for _, w := range ws {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, fmt.Errorf("apply execution %s: %w", w.Record.ID, refusal(err))
		}
		if tag.RowsAffected() == 0 {
			unchanged = append(unchanged, w.Record.ID)
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("commit journal batch: %w", err)
	}
	return unchanged, nil
}
