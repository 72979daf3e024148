package store

import (
	"context"
	"errors"
	"fmt"
)

// errAtCap: the account already has as many rows as the cap allows.
var errAtCap = errors.New("the account is at its cap")

// capClass is the first key of the advisory lock that serializes the
// capped inserts of one account into one table ("tc"; the liveness
// marks use advisoryClass).
const capClass = 0x7463

// insertCapped runs insert (its args) when the account has fewer than
// limit rows in table; limit <= 0 inserts without counting. The count and
// the insert share a transaction that no other capped insert of the
// same account and table runs beside: on SQLite every write transaction
// takes the write lock when it begins (_txlock=immediate); on PostgreSQL,
// whose READ COMMITTED would let two transactions count the same rows,
// a transaction-scoped advisory lock on (table, account) serializes them,
// across replicas too. So concurrent creates never pass the cap.
func (d *DB) insertCapped(ctx context.Context, table, account string, limit int, insert string, args []any) error {
	if limit <= 0 {
		_, err := d.db.ExecContext(ctx, d.q(insert), args...)
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if d.pg() {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, capClass, table+":"+account); err != nil {
			return fmt.Errorf("lock the account's %s: %w", table, err)
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, d.q(`SELECT COUNT(*) FROM `+table+` WHERE account_id = ?`), account).Scan(&n); err != nil {
		return fmt.Errorf("count the account's %s: %w", table, err)
	}
	if n >= limit {
		return errAtCap
	}
	if _, err := tx.ExecContext(ctx, d.q(insert), args...); err != nil {
		return err
	}
	return tx.Commit()
}
