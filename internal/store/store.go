package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

//go:embed migrations
var migrations embed.FS

// Dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Options tune Open.
type Options struct {
	// SQLiteSynchronous is the SQLite synchronous pragma: NORMAL (default)
	// or FULL.
	SQLiteSynchronous string
	// MaxOpenConns caps the connection pool. Default 16.
	MaxOpenConns int
}

// DB is an open store. It implements journal.Store; other packages'
// storage interfaces are added as methods in their own files.
type DB struct {
	db      *sql.DB
	dialect string
	path    string // SQLite file

	mu           sync.Mutex
	holds        map[string]io.Closer // liveness marks held by this process
	flushChannel string               // replicas.go

	sw    sqliteWriter  // SQLite journal writes
	pgw   *pgxpool.Pool // PostgreSQL journal writes
	stmts stmts         // SQLite hot reads (stmts.go)
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens (creating when needed) and migrates the store named by dsn: a
// PostgreSQL URL or a SQLite file path.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.MaxOpenConns <= 0 {
		opts.MaxOpenConns = 16
	}
	var d *DB
	var err error
	if IsPostgres(dsn) {
		d, err = openPostgres(ctx, dsn)
	} else {
		d, err = openSQLite(dsn, opts)
	}
	if err != nil {
		return nil, err
	}
	d.db.SetMaxOpenConns(opts.MaxOpenConns)
	d.db.SetMaxIdleConns(opts.MaxOpenConns)
	if err := d.migrate(ctx); err != nil {
		d.db.Close()
		return nil, err
	}
	return d, nil
}

func openSQLite(path string, opts Options) (*DB, error) {
	sync := strings.ToUpper(opts.SQLiteSynchronous)
	switch sync {
	case "":
		sync = "NORMAL"
	case "NORMAL", "FULL":
	default:
		return nil, fmt.Errorf("sqlite synchronous must be NORMAL or FULL, not %q", opts.SQLiteSynchronous)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite directory: %w", err)
		}
	}
	// _txlock=immediate: a write transaction takes the write lock when it
	// begins, so two writers never deadlock upgrading read locks; the busy
	// timeout makes the second one wait instead of failing.
	dsn := "file:" + path + "?_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=synchronous(" + sync + ")&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return &DB{db: db, dialect: SQLite, path: path}, nil
}

func openPostgres(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres url: %w", err)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if sp := cfg.RuntimeParams["search_path"]; sp != "" {
		schema := strings.TrimSpace(strings.Split(sp, ",")[0])
		schema = strings.Trim(schema, `"`)
		if schema != "" && schema != "$user" {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if _, err := db.ExecContext(cctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
				db.Close()
				return nil, fmt.Errorf("create schema %s: %w", schema, err)
			}
		}
	}
	pgw, err := openPGWriter(ctx, url)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &DB{db: db, dialect: Postgres, pgw: pgw}, nil
}

// Dialect is SQLite or Postgres.
func (d *DB) Dialect() string { return d.dialect }

func (d *DB) pg() bool { return d.dialect == Postgres }

// SQL returns the connection pool, for packages' store files and tests.
func (d *DB) SQL() *sql.DB { return d.db }

// Close releases the liveness mark and the pool.
func (d *DB) Close() error {
	d.mu.Lock()
	hs := d.holds
	d.holds = nil
	d.mu.Unlock()
	var errs []error
	for _, h := range hs {
		errs = append(errs, h.Close())
	}
	errs = append(errs, d.sw.close(), d.stmts.close())
	if d.pgw != nil {
		d.pgw.Close()
	}
	return errors.Join(append(errs, d.db.Close())...)
}

// q rewrites ? placeholders to the dialect's. Our SQL never has a literal
// question mark.
func (d *DB) q(query string) string {
	if !d.pg() {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

type migration struct {
	version int
	name    string
	sql     string
}

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
		out = append(out, migration{version: v, name: strings.TrimSuffix(name, ".sql"), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version < 1 || (i > 0 && m.version == out[i-1].version) {
			return nil, fmt.Errorf("migrations of %s: version %d (%s) is not a unique positive number", dialect, m.version, m.name)
		}
	}
	return out, nil
}

func (d *DB) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ms, err := loadMigrations(d.dialect)
	if err != nil {
		return err
	}
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for _, m := range ms {
		if err := d.apply(ctx, m, known); err != nil {
			return fmt.Errorf("migration %04d_%s (%s): %w", m.version, m.name, d.dialect, err)
		}
	}
	return nil
}

// apply runs one migration unless it already ran, in one transaction.
// Versions are applied by set, not by the highest one recorded: branches
// land their numbered migrations in any order (0005 may reach a database
// before 0004), and a database migrated past a gap still gets the missing
// version when it arrives. A recorded version this binary does not know
// means a newer binary migrated the database: refused.
func (d *DB) apply(ctx context.Context, m migration, known map[int]bool) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d.pg() {
		// Replicas starting together take turns per schema.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('toolhost-migrate:' || current_schema()))`); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return err
	}
	applied := false
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		if !known[v] {
			rows.Close()
			return fmt.Errorf("the database has schema version %d, which this binary does not know; upgrade the binary", v)
		}
		applied = applied || v == m.version
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if applied {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
