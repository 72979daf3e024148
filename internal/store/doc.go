// Package store implements the storage interfaces that journal and keys
// declare, on SQLite (the embedded default: one file, WAL,
// the pure-Go driver modernc.org/sqlite, no cgo) and on PostgreSQL (pgx,
// shared by replicas; replicas.go carries the journal's read barrier).
//
// # Opening
//
// Open(ctx, dsn, opts) takes either a PostgreSQL URL (postgres:// or
// postgresql://) or a SQLite file path and returns a *DB that is ready: the
// schema is migrated before Open returns. For PostgreSQL the URL may carry
// search_path (postgres://u@h/db?search_path=toolhost_a); the first schema
// named there is created when missing, so replicas or test runs can share a
// database and stay isolated.
//
// # One implementation, two dialects
//
// Both dialects go through database/sql with the same SQL text written with
// ? placeholders; DB.q rewrites them to $1, $2, ... for PostgreSQL. Where the
// dialects differ (column types, row locks, liveness marks) the code says so
// next to the difference.
//
// # Adding tables: the migration pattern
//
// Migrations are embedded, numbered files, one set per dialect:
//
//	migrations/sqlite/0001_journal.sql
//	migrations/postgres/0001_journal.sql
//
// This is how the keys package's accounts, api_keys and usage came in:
//
//  1. Write migrations/sqlite/NNNN_name.sql and migrations/postgres/NNNN_name.sql
//     (same number and name in both; never edit a migration that shipped).
//  2. Implement the package's storage interface as methods on *DB in a
//     file of its own (store/keys.go), using db.q for placeholders and db.pg
//     for dialect branches, with every query scoped by account.
//  3. Run the same test suite against both dialects (see journal_test.go:
//     SQLite in t.TempDir(), PostgreSQL in a fresh schema when
//     TOOLHOST_TEST_POSTGRES is set).
//
// At Open each pending file runs in its own transaction together with its row
// in schema_migrations, in number order; on PostgreSQL a session advisory
// lock per schema, held on a connection of its own for the whole pass,
// serializes replicas that start at the same time (tried every 100 ms, not
// waited for in a statement: a waiter's snapshot would deadlock a
// concurrent index build of the holder). A PostgreSQL file whose first line
// is "-- toolhost:no-transaction" runs outside a transaction, statement by
// statement (split at semicolons that end a line), its row recorded after
// the last: for CREATE INDEX CONCURRENTLY IF NOT EXISTS on a large table,
// which does not hold writers for the build; an index of such a statement
// that a failed build left INVALID is dropped and built again. A database
// that is newer than the binary (a version this binary does not know) is
// refused.
//
// # Durability
//
// SQLite runs in WAL mode with synchronous=NORMAL: a committed transaction
// survives the process being killed (kill -9), which is what the journal's
// crash guarantees are about; a power cut may lose the last transactions.
// Set journal.sqlite_synchronous to "FULL" in the config for fsync on every
// commit. The journal makes calls durable in its own spool first (package
// journal) and hands the store batches through Apply, whose idempotent
// forms (upsert into opened records only) let a spool be applied twice.
package store
