package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmts keeps the prepared statements of the reads that every call or
// cache refresh runs (a session, an account's definitions and servers, a
// key), on SQLite. Its driver parses and plans a query's text at every
// QueryContext otherwise: in a perf profile of serve with calls 1.1 s
// apart, SQLite's parser (yy_reduce, yy_find_shift_action) and planner
// were most of what a session or definitions read cost. PostgreSQL's
// driver (pgx) keeps its own statement cache per connection, so there
// these reads run as before.
type stmts struct {
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	closed bool
}

// maxStmts bounds the cache: the hot reads are a handful of fixed texts;
// a query past the bound runs unprepared.
const maxStmts = 32

// query runs a read through its prepared statement where there is one.
func (d *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := d.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return d.db.QueryContext(ctx, d.q(query), args...)
}

// queryRow is query for one row.
func (d *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := d.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.db.QueryRowContext(ctx, d.q(query), args...)
}

// stmt returns query's prepared statement, preparing it on first use;
// nil on PostgreSQL, past the bound, after Close, or when preparing
// fails (the caller then runs the text, which reports the error).
func (d *DB) stmt(ctx context.Context, query string) *sql.Stmt {
	if d.pg() {
		return nil
	}
	c := &d.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st
	}
	if c.closed || len(c.m) >= maxStmts {
		return nil
	}
	st, err := d.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st
}

// close closes every prepared statement; later reads run unprepared
// (and fail on the closed database).
func (c *stmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for _, st := range c.m {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.m = nil
	return first
}
