package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolhost/toolhost/tools/tooldef"
)

var _ tooldef.Store = (*DB)(nil)

const defColumns = `id, account_id, name, description, parameters, side_effect_level, allowed_slots, source, source_id,
	enabled, handler_type, handler, created_at, updated_at`

func defArgs(d tooldef.Definition) []any {
	slots, _ := json.Marshal(d.AllowedSlots)
	if d.AllowedSlots == nil {
		slots = []byte("[]")
	}
	return []any{d.ID, d.AccountID, d.Name, d.Description, string(d.Parameters), d.SideEffectLevel, string(slots),
		d.Source, d.SourceID, d.Enabled, d.HandlerType, nullJSON(d.Handler), d.CreatedAt.UnixMilli(), d.UpdatedAt.UnixMilli()}
}

// isUnique reports whether err is a unique-constraint violation in
// either dialect.
func isUnique(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// CreateDefinition implements tooldef.Store.
func (d *DB) CreateDefinition(ctx context.Context, def tooldef.Definition, limit int) error {
	err := d.insertCapped(ctx, "tool_definitions", def.AccountID, limit, `INSERT INTO tool_definitions (`+defColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, defArgs(def))
	switch {
	case errors.Is(err, errAtCap):
		return tooldef.ErrLimit
	case isUnique(err):
		return tooldef.ErrConflict
	case err != nil:
		return fmt.Errorf("create tool definition: %w", err)
	}
	return nil
}

// GetDefinition implements tooldef.Store.
func (d *DB) GetDefinition(ctx context.Context, account, id string) (tooldef.Definition, error) {
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT `+defColumns+` FROM tool_definitions WHERE account_id = ? AND id = ?`), account, id)
	if err != nil {
		return tooldef.Definition{}, fmt.Errorf("get tool definition: %w", err)
	}
	defs, err := scanDefs(rows)
	if err != nil {
		return tooldef.Definition{}, err
	}
	if len(defs) == 0 {
		return tooldef.Definition{}, tooldef.ErrNotFound
	}
	return defs[0], nil
}

// ListDefinitions implements tooldef.Store.
func (d *DB) ListDefinitions(ctx context.Context, q tooldef.Query) ([]tooldef.Definition, int, error) {
	where := ` WHERE account_id = ?`
	args := []any{q.AccountID}
	if q.Name != "" {
		where += ` AND name = ?`
		args = append(args, q.Name)
	}
	if q.Source != "" {
		where += ` AND source = ?`
		args = append(args, q.Source)
	}
	if q.HasSourceID {
		where += ` AND source_id = ?`
		args = append(args, q.SourceID)
	}
	if q.Enabled != nil {
		where += ` AND enabled = ?`
		args = append(args, *q.Enabled)
	}
	// An unpaged list (every call of a custom tool looks its definition
	// up this way) is its own count: one query instead of two.
	paged := q.Limit > 0 || q.Offset > 0
	var total int
	if paged {
		if err := d.db.QueryRowContext(ctx, d.q(`SELECT COUNT(*) FROM tool_definitions`+where), args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count tool definitions: %w", err)
		}
	}
	col := "updated_at"
	if q.SortBy == tooldef.SortName {
		col = "name"
	}
	dir := " DESC"
	if q.Asc {
		dir = " ASC"
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 1 << 30
	}
	query := `SELECT ` + defColumns + ` FROM tool_definitions` + where + ` ORDER BY ` + col + dir + `, id` + dir + ` LIMIT ? OFFSET ?`
	args = append(args, limit, q.Offset)
	var rows *sql.Rows
	var err error
	if len(args) == 3 && !paged { // the cache's read of a whole account: prepared
		rows, err = d.query(ctx, query, args...)
	} else {
		rows, err = d.db.QueryContext(ctx, d.q(query), args...)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list tool definitions: %w", err)
	}
	defs, err := scanDefs(rows)
	if !paged {
		total = len(defs)
	}
	return defs, total, err
}

// UpdateDefinition implements tooldef.Store.
func (d *DB) UpdateDefinition(ctx context.Context, def tooldef.Definition) error {
	a := defArgs(def)
	res, err := d.db.ExecContext(ctx, d.q(`UPDATE tool_definitions SET name = ?, description = ?, parameters = ?,
		side_effect_level = ?, allowed_slots = ?, source = ?, source_id = ?, enabled = ?, handler_type = ?, handler = ?,
		updated_at = ? WHERE account_id = ? AND id = ?`), append(a[2:12], a[13], def.AccountID, def.ID)...)
	if err != nil {
		if isUnique(err) {
			return tooldef.ErrConflict
		}
		return fmt.Errorf("update tool definition: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return tooldef.ErrNotFound
	}
	return nil
}

// DeleteDefinition implements tooldef.Store.
func (d *DB) DeleteDefinition(ctx context.Context, account, id string) error {
	res, err := d.db.ExecContext(ctx, d.q(`DELETE FROM tool_definitions WHERE account_id = ? AND id = ?`), account, id)
	if err != nil {
		return fmt.Errorf("delete tool definition: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return tooldef.ErrNotFound
	}
	return nil
}

func scanDefs(rows *sql.Rows) ([]tooldef.Definition, error) {
	defer rows.Close()
	var out []tooldef.Definition
	for rows.Next() {
		var def tooldef.Definition
		var params, slots string
		var handler sql.NullString
		var created, updated int64
		if err := rows.Scan(&def.ID, &def.AccountID, &def.Name, &def.Description, &params, &def.SideEffectLevel, &slots,
			&def.Source, &def.SourceID, &def.Enabled, &def.HandlerType, &handler, &created, &updated); err != nil {
			return nil, fmt.Errorf("scan tool definition: %w", err)
		}
		def.Parameters = json.RawMessage(params)
		if err := json.Unmarshal([]byte(slots), &def.AllowedSlots); err != nil {
			return nil, fmt.Errorf("stored allowed_slots of %s: %w", def.ID, err)
		}
		if handler.Valid {
			def.Handler = json.RawMessage(handler.String)
		}
		def.CreatedAt, def.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		out = append(out, def)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tool definitions: %w", err)
	}
	return out, nil
}
