package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

type migration struct {
	version int
	name    string
	sql     string
	// outside: the file starts with noTransaction, so on PostgreSQL its
	// statements run one by one outside a transaction (CREATE INDEX
	// CONCURRENTLY cannot run in one). SQLite ignores it.
	outside bool
}

// noTransaction, as a migration's first line, runs it outside a
// transaction on PostgreSQL: an index built CONCURRENTLY on a large
// table does not hold its writers for the build. Each statement must
// then be safe to run again after a failure part-way (IF NOT EXISTS): the
// version is recorded after the last.
const noTransaction = "-- toolhost:no-transaction"

func loadMigrations(dialect string) ([]migration, error) {
	dir := "migrations/" + dialect
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		first, _, _ := strings.Cut(string(b), "\n")
		out = append(out, migration{version: v, name: strings.TrimSuffix(name, ".sql"), sql: string(b),
			outside: strings.TrimSpace(first) == noTransaction})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version < 1 || (i > 0 && m.version == out[i-1].version) {
			return nil, fmt.Errorf("migrations of %s: version %d (%s) is not a unique positive number", dialect, m.version, m.name)
		}
	}
	return out, nil
}

// migrator is what migrations run on: the pool (SQLite) or the one
// connection holding the migration lock (PostgreSQL).
type migrator interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// migrate applies the migrations not applied yet. A transactional one
// has two minutes; waiting for another process's migrations and a
// noTransaction one (a concurrent index build on a large table) take as
// long as ctx allows.
func (d *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations(d.dialect)
	if err != nil {
		return err
	}
	var on migrator = d.db
	if d.pg() {
		conn, unlock, err := d.migrationLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
		on = conn
	}
	if _, err := on.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for _, m := range ms {
		mctx, cancel := ctx, context.CancelFunc(func() {})
		if !m.outside || !d.pg() {
			mctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		}
		err := d.apply(mctx, on, m, known)
		cancel()
		if err != nil {
			return fmt.Errorf("migration %04d_%s (%s): %w", m.version, m.name, d.dialect, err)
		}
	}
	return nil
}

// migrationLock takes the schema's migration lock, a session advisory
// lock, on a connection of its own, so replicas starting together take
// turns. It is tried, not waited for: a backend waiting for an advisory
// lock holds a snapshot, which a CREATE INDEX CONCURRENTLY of the holder
// waits out (the two would deadlock).
func (d *DB) migrationLock(ctx context.Context) (*sql.Conn, func(), error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("migration lock: %w", err)
	}
	const key = `hashtext('toolhost-migrate:' || current_schema())`
	for {
		var got bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(`+key+`)`).Scan(&got); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("migration lock: %w", err)
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			conn.Close()
			return nil, nil, fmt.Errorf("migration lock: another process is migrating this schema: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return conn, func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(uctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
			// Closing the connection would not release a session
			// lock of a pooled connection: drop it from the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}

// apply runs one migration unless it already ran, in one transaction
// (on PostgreSQL, a noTransaction one statement by statement).
// Versions are applied by set, not by the highest one recorded: branches
// land their numbered migrations in any order (0005 may reach a database
// before 0004), and a database migrated past a gap still gets the missing
// version when it arrives. A recorded version this binary does not know
// means a newer binary migrated the database: refused.
func (d *DB) apply(ctx context.Context, on migrator, m migration, known map[int]bool) error {
	if m.outside && d.pg() {
		return d.applyOutside(ctx, on, m, known)
	}
	tx, err := on.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if applied, err := appliedAlready(ctx, tx, m, known); err != nil || applied {
		return err
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if err := d.record(ctx, tx, m); err != nil {
		return err
	}
	return tx.Commit()
}

type migrationQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (d *DB) record(ctx context.Context, on migrationQuerier, m migration) error {
	_, err := on.ExecContext(ctx, d.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.version, m.name, time.Now().UnixMilli())
	return err
}

// appliedAlready reads the recorded versions: whether m is one of them,
// and an error for a version this binary does not know.
func appliedAlready(ctx context.Context, on migrationQuerier, m migration, known map[int]bool) (bool, error) {
	rows, err := on.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	applied := false
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return false, err
		}
		if !known[v] {
			return false, fmt.Errorf("the database has schema version %d, which this binary does not know; upgrade the binary", v)
		}
		applied = applied || v == m.version
	}
	return applied, rows.Err()
}

// concurrentIndex finds the index a CREATE INDEX CONCURRENTLY IF NOT
// EXISTS statement builds.
var concurrentIndex = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+("?[A-Za-z_][A-Za-z0-9_]*"?)`)

// applyOutside runs a noTransaction migration on PostgreSQL, on the
// connection that holds the migration lock: each statement alone, then
// the version. An index a failed concurrent build left INVALID (IF NOT
// EXISTS would keep it, unused and still written to) is dropped and
// built again.
func (d *DB) applyOutside(ctx context.Context, on migrator, m migration, known map[int]bool) error {
	if applied, err := appliedAlready(ctx, on, m, known); err != nil || applied {
		return err
	}
	for _, stmt := range statements(m.sql) {
		if ix := concurrentIndex.FindStringSubmatch(stmt); ix != nil {
			name := strings.Trim(ix[1], `"`)
			invalid, err := invalidIndex(ctx, on, name)
			if err != nil {
				return err
			}
			if invalid {
				if _, err := on.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+ix[1]); err != nil {
					return fmt.Errorf("drop the invalid index %s: %w", name, err)
				}
			}
		}
		if _, err := on.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return d.record(ctx, on, m)
}

// invalidIndex tells whether the schema has an index name that a failed
// concurrent build left invalid.
func invalidIndex(ctx context.Context, on migrationQuerier, name string) (bool, error) {
	rows, err := on.QueryContext(ctx, `SELECT NOT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, name)
	if err != nil {
		return false, fmt.Errorf("look up the index %s: %w", name, err)
	}
	defer rows.Close()
	invalid := false
	for rows.Next() {
		if err := rows.Scan(&invalid); err != nil {
			return false, err
		}
	}
	return invalid, rows.Err()
}

// statements splits a migration at the semicolons that end a line,
// leaving out comments.
func statements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		out = append(out, cur.String())
	}
	return out
}
