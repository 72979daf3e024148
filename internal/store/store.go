package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
