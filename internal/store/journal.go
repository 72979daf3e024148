package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/journal"
)

var _ journal.Store = (*DB)(nil)

// execColumns is the column order of tool_executions used by every insert
// and select here.
var execColumns = []string{
	"id", "account_id", "key_id", "session_id", "floor_id", "run_id", "page_id", "round", "call_id",
	"caller_slot", "face", "provider_id", "provider_type", "tool_name", "tool_version", "side_effect_level",
	"args_raw", "args", "args_digest", "idempotency_key", "trace_id", "status", "lifecycle_state",
	"commit_outcome", "state", "result", "result_text", "error_code", "error_message", "summary", "units",
	"truncated", "duration_ms", "started_at", "finished_at", "delivery_mode", "attempt_no",
	"runtime_job_id", "replay_parent_execution_id", "instance_id", "created_at", "result_expired_at",
}

var (
	insertPrefix = `INSERT INTO tool_executions (` + strings.Join(execColumns, ", ") + `, events) VALUES `
	insertExec   = insertPrefix + `(` + strings.Repeat("?, ", len(execColumns)) + `?)`
	// The update appends the new events to the record's event lines.
	updateExec = `UPDATE tool_executions SET status = ?, lifecycle_state = ?, commit_outcome = ?, state = ?,
		result = ?, result_text = ?, error_code = ?, error_message = ?, summary = ?, units = ?, truncated = ?,
		duration_ms = ?, finished_at = ?, attempt_no = ?, events = events || ? WHERE id = ?`
	selectExec = `SELECT ` + strings.Join(execColumns, ", ") + ` FROM tool_executions`

	// The spool's idempotent forms (journal.Store.Apply): an insert of a
	// record that is stored and still opened brings its outcome and whole
	// event list; an update changes opened records only. Anything else
	// changes no row.
	upsertExec = insertExec + ` ON CONFLICT (id) DO UPDATE SET status = excluded.status,
		lifecycle_state = excluded.lifecycle_state, commit_outcome = excluded.commit_outcome, state = excluded.state,
		result = excluded.result, result_text = excluded.result_text, error_code = excluded.error_code,
		error_message = excluded.error_message, summary = excluded.summary, units = excluded.units,
		truncated = excluded.truncated, duration_ms = excluded.duration_ms, finished_at = excluded.finished_at,
		attempt_no = excluded.attempt_no, events = excluded.events WHERE tool_executions.lifecycle_state = 'opened'`
	updateOpenedExec = updateExec + ` AND lifecycle_state = 'opened'`
)

// eventLine is one state event as stored: one JSON object per line.
type eventLine struct {
	Seq    int             `json:"seq"`
	State  string          `json:"state"`
	Kind   string          `json:"kind,omitempty"`
	At     int64           `json:"at"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// encodeEvents writes the event lines by hand: it runs twice per call on
// the journal's hot path, and json.Marshal of eventLine would validate and
// compact each detail again. Details from journal.Trail are json.Marshal
// output (compact, no raw newline); others are compacted here, and one
// that is no JSON at all is kept as a JSON string of its bytes: a detail
// must not fail the write of its record, nor the batch written with it.
func encodeEvents(evs []journal.Event) string {
	n := 0
	for _, e := range evs {
		n += len(e.Detail) + 64
	}
	b := make([]byte, 0, n)
	for _, e := range evs {
		b = append(b, `{"seq":`...)
		b = strconv.AppendInt(b, int64(e.Seq), 10)
		b = append(b, `,"state":`...)
		b = appendJSONString(b, string(e.State))
		if e.Kind != "" {
			b = append(b, `,"kind":`...)
			b = appendJSONString(b, e.Kind)
		}
		b = append(b, `,"at":`...)
		b = strconv.AppendInt(b, e.At.UnixMilli(), 10)
		if len(e.Detail) > 0 {
			b = append(b, `,"detail":`...)
			b = appendDetail(b, e.Detail)
		}
		b = append(b, "}\n"...)
	}
	return string(b)
}

// appendDetail appends an event's detail as one line of JSON.
func appendDetail(b []byte, d json.RawMessage) []byte {
	if !bytes.ContainsAny(d, "\n\r") && json.Valid(d) {
		return append(b, d...)
	}
	// Compact: a newline inside would split the line.
	c := bytes.NewBuffer(b)
	if err := json.Compact(c, d); err == nil {
		return c.Bytes()
	}
	q, _ := json.Marshal(string(d)) // invalid UTF-8 becomes U+FFFD
	return append(b, q...)
}

// appendJSONString appends s as a JSON string; states are plain words, so
// the general encoder is only needed for anything else.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func decodeEvents(s string) ([]journal.Event, error) {
	var out []journal.Event
	for line := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		if line == "" {
			continue
		}
		var l eventLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("stored event: %w", err)
		}
		e := journal.Event{Seq: l.Seq, State: journal.State(l.State), Kind: l.Kind, At: time.UnixMilli(l.At).UTC()}
		if len(l.Detail) > 0 {
			e.Detail = l.Detail
		}
		out = append(out, e)
	}
	return out, nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

// insertArgs are the arguments of insertExec (and upsertExec) for r and
// its encoded events; every string among them is storable.
func insertArgs(r journal.Record, events string) []any {
	raw := r.ArgsRaw
	if raw == nil {
		raw = []byte{}
	}
	return storable([]any{
		r.ID, r.AccountID, r.KeyID, r.SessionID, r.FloorID, r.RunID, nullStr(r.PageID), r.Round, r.CallID,
		r.CallerSlot, r.Face, r.ProviderID, r.ProviderType, r.ToolName, r.ToolVersion, r.SideEffectLevel,
		raw, nullJSON(r.Args), r.ArgsDigest, r.IdempotencyKey, r.TraceID, string(r.Status), string(r.Lifecycle),
		string(r.Commit), string(r.State), nullJSON(r.Result), r.ResultText, r.ErrorCode, nullStr(r.ErrorMessage),
		r.Summary, r.Units, r.Truncated, r.Duration.Milliseconds(), ms(r.StartedAt), ms(r.FinishedAt),
		r.DeliveryMode, r.AttemptNo, nullStr(r.RuntimeJobID), nullStr(r.ReplayParentID), r.InstanceID,
		ms(r.CreatedAt), ms(r.ResultExpiredAt), events,
	})
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (d *DB) writeOne(ctx context.Context, tx execer, w journal.Write) error {
	evs := encodeEvents(w.Events)
	if w.Insert {
		if _, err := tx.ExecContext(ctx, d.q(insertExec), insertArgs(w.Record, evs)...); err != nil {
			return fmt.Errorf("insert execution %s: %w", w.Record.ID, err)
		}
		return nil
	}
	res, err := tx.ExecContext(ctx, d.q(updateExec), updateArgs(w.Record, evs)...)
	if err != nil {
		return fmt.Errorf("update execution %s: %w", w.Record.ID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n != 1 {
		return fmt.Errorf("update execution %s: %w", w.Record.ID, journal.ErrNotFound)
	}
	return nil
}

// Write applies ws in order in one transaction, through the journal
// writer's own connections (journalwrite.go).
func (d *DB) Write(ctx context.Context, ws []journal.Write) error {
	if d.pg() {
		return d.writePG(ctx, ws)
	}
	return d.sw.write(ctx, d.db, ws)
}

// Apply implements journal.Store.Apply on the same connections as Write.
func (d *DB) Apply(ctx context.Context, ws []journal.Write) ([]string, error) {
	if d.pg() {
		return d.applyPG(ctx, ws)
	}
	return d.sw.applySpooled(ctx, d.db, ws)
}

// updateArgs are the arguments of updateExec (and updateOpenedExec);
// every string among them is storable.
func updateArgs(r journal.Record, events string) []any {
	return storable([]any{string(r.Status), string(r.Lifecycle), string(r.Commit),
		string(r.State), nullJSON(r.Result), r.ResultText, r.ErrorCode, nullStr(r.ErrorMessage), r.Summary,
		r.Units, r.Truncated, r.Duration.Milliseconds(), ms(r.FinishedAt), attemptNo(r), events, r.ID})
}

// attemptNo is the record's attempt number as stored: 1 for a write that
// carries none (a spool written before attempts were recorded).
func attemptNo(r journal.Record) int {
	if r.AttemptNo < 1 {
		return 1
	}
	return r.AttemptNo
}

// Claim implements journal.Store: the key row is inserted or taken over and
// the opened record written in one transaction. SQLite transactions begin
// IMMEDIATE (one writer at a time); on PostgreSQL the conflicting insert
// waits for a concurrent claimant and the row is then locked FOR UPDATE.
func (d *DB) Claim(ctx context.Context, c journal.Claim) (journal.ClaimResult, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return journal.ClaimResult{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, d.q(`INSERT INTO idempotency_keys
		(account_id, key, tool_name, tool_version, digest, execution_id, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account_id, key) DO NOTHING`),
		storable([]any{c.AccountID, c.Key, c.Tool, c.Version, c.Digest, c.Open.Record.ID, c.Now.UnixMilli(), c.ExpiresAt.UnixMilli()})...)
	if err != nil {
		return journal.ClaimResult{}, fmt.Errorf("insert key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return journal.ClaimResult{}, err
	}
	if n == 0 {
		lock := ""
		if d.pg() {
			lock = " FOR UPDATE"
		}
		var digest, execID string
		var expires int64
		if err := tx.QueryRowContext(ctx, d.q(`SELECT digest, execution_id, expires_at FROM idempotency_keys
			WHERE account_id = ? AND key = ?`+lock), storable([]any{c.AccountID, c.Key})...).Scan(&digest, &execID, &expires); err != nil {
			return journal.ClaimResult{}, fmt.Errorf("read key: %w", err)
		}
		if expires >= c.Now.UnixMilli() {
			existing, err := d.get(ctx, tx, c.AccountID, execID)
			missing := errors.Is(err, journal.ErrNotFound)
			if err != nil && !missing {
				return journal.ClaimResult{}, err
			}
			if digest != c.Digest {
				if missing {
					existing = journal.Record{ID: execID}
				}
				return journal.ClaimResult{Reused: true, Existing: existing}, nil
			}
			// A call that ended before any effect (rejected, failed before
			// commit) does not hold its key: the same call may run again.
			if !missing && !(existing.Lifecycle == journal.Finished && existing.Commit == journal.CommitDiscarded) {
				return journal.ClaimResult{Existing: existing}, nil
			}
		}
		if _, err := tx.ExecContext(ctx, d.q(`UPDATE idempotency_keys SET tool_name = ?, tool_version = ?, digest = ?,
			execution_id = ?, created_at = ?, expires_at = ? WHERE account_id = ? AND key = ?`),
			storable([]any{c.Tool, c.Version, c.Digest, c.Open.Record.ID, c.Now.UnixMilli(), c.ExpiresAt.UnixMilli(), c.AccountID, c.Key})...); err != nil {
			return journal.ClaimResult{}, fmt.Errorf("take over key: %w", err)
		}
	}
	if err := d.writeOne(ctx, tx, c.Open); err != nil {
		return journal.ClaimResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return journal.ClaimResult{}, fmt.Errorf("commit: %w", err)
	}
	return journal.ClaimResult{Claimed: true}, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (d *DB) get(ctx context.Context, q querier, accountID, id string) (journal.Record, error) {
	rows, err := q.QueryContext(ctx, d.q(selectExec+` WHERE account_id = ? AND id = ?`), accountID, id)
	if err != nil {
		return journal.Record{}, fmt.Errorf("get execution: %w", err)
	}
	recs, err := scanRecords(rows, false)
	if err != nil {
		return journal.Record{}, err
	}
	if len(recs) == 0 {
		return journal.Record{}, journal.ErrNotFound
	}
	return recs[0], nil
}

// Get implements journal.Store.
func (d *DB) Get(ctx context.Context, accountID, id string) (journal.Record, error) {
	return d.get(ctx, d.db, accountID, id)
}

func scanRecords(rows *sql.Rows, withSeq bool) ([]journal.Record, error) {
	defer rows.Close()
	var out []journal.Record
	for rows.Next() {
		var r journal.Record
		var pageID, args, result, errMsg, jobID, parent sql.NullString
		var startedAt, finishedAt, createdAt, expiredAt sql.NullInt64
		var durMS int64
		var status, lifecycle, commit, state string
		dest := []any{
			&r.ID, &r.AccountID, &r.KeyID, &r.SessionID, &r.FloorID, &r.RunID, &pageID, &r.Round, &r.CallID,
			&r.CallerSlot, &r.Face, &r.ProviderID, &r.ProviderType, &r.ToolName, &r.ToolVersion, &r.SideEffectLevel,
			&r.ArgsRaw, &args, &r.ArgsDigest, &r.IdempotencyKey, &r.TraceID, &status, &lifecycle,
			&commit, &state, &result, &r.ResultText, &r.ErrorCode, &errMsg, &r.Summary, &r.Units,
			&r.Truncated, &durMS, &startedAt, &finishedAt, &r.DeliveryMode, &r.AttemptNo,
			&jobID, &parent, &r.InstanceID, &createdAt, &expiredAt,
		}
		if withSeq {
			dest = append(dest, &r.Seq)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("scan execution: %w", err)
		}
		r.PageID, r.ErrorMessage, r.RuntimeJobID, r.ReplayParentID = pageID.String, errMsg.String, jobID.String, parent.String
		if args.Valid {
			r.Args = json.RawMessage(args.String)
		}
		if result.Valid {
			r.Result = json.RawMessage(result.String)
		}
		r.Status, r.Lifecycle, r.Commit, r.State = journal.Status(status), journal.Lifecycle(lifecycle), journal.Commit(commit), journal.State(state)
		r.Duration = time.Duration(durMS) * time.Millisecond
		r.StartedAt, r.FinishedAt, r.CreatedAt = fromMS(startedAt), fromMS(finishedAt), fromMS(createdAt)
		r.ResultExpiredAt = fromMS(expiredAt)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read executions: %w", err)
	}
	return out, nil
}

// List implements journal.Store. seq (the position inside the floor) is
// computed over the whole floor before the filters apply, so it does not
// change with the filters; a query with NoSeq reads the table itself, so
// that a page of a large journal walks an index (account_id, sort
// column, id) from its position instead of reading the account.
func (d *DB) List(ctx context.Context, q journal.Query) ([]journal.Record, int, error) {
	where, args := listFilters(q)
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var from string
	var allArgs []any
	if q.NoSeq {
		from = ` FROM tool_executions WHERE account_id = ?`
		allArgs = []any{q.AccountID}
		if q.FloorID != "" {
			from += ` AND floor_id = ?`
			allArgs = append(allArgs, q.FloorID)
		}
		if len(where) > 0 {
			from += " AND " + strings.Join(where, " AND ")
		}
	} else {
		inner := `SELECT ` + strings.Join(execColumns, ", ") +
			`, ROW_NUMBER() OVER (PARTITION BY floor_id ORDER BY created_at, id) - 1 AS seq FROM tool_executions WHERE account_id = ?`
		allArgs = []any{q.AccountID}
		if q.FloorID != "" {
			inner += ` AND floor_id = ?`
			allArgs = append(allArgs, q.FloorID)
		}
		from = ` FROM (` + inner + `) e` + cond
	}
	allArgs = append(allArgs, args...)

	total := -1
	if !q.NoTotal {
		if err := d.db.QueryRowContext(ctx, d.q(`SELECT COUNT(*)`+from), allArgs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count executions: %w", err)
		}
	}
	col, order := listOrder(q)
	if q.After != nil {
		kc, kargs := keyset(q, col)
		if q.NoSeq || len(where) > 0 {
			from += " AND " + kc
		} else {
			from += " WHERE " + kc
		}
		allArgs = append(allArgs, kargs...)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
		if d.pg() {
			limit = 1 << 62
		}
	}
	seq := `, seq`
	if q.NoSeq {
		seq = ``
	}
	rows, err := d.db.QueryContext(ctx, d.q(`SELECT `+strings.Join(execColumns, ", ")+seq+from+order+` LIMIT ? OFFSET ?`),
		append(allArgs, limit, q.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list executions: %w", err)
	}
	recs, err := scanRecords(rows, !q.NoSeq)
	return recs, total, err
}

// listFilters are q's conditions but the account and the floor.
func listFilters(q journal.Query) ([]string, []any) {
	var where []string
	var args []any
	for _, f := range []struct{ col, v string }{
		{"session_id", q.SessionID}, {"run_id", q.RunID}, {"caller_slot", q.CallerSlot}, {"face", q.Face},
		{"tool_name", q.ToolName}, {"lifecycle_state", string(q.Lifecycle)}, {"commit_outcome", string(q.Commit)},
		{"provider_type", q.ProviderType}, {"delivery_mode", q.DeliveryMode},
	} {
		if f.v != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	if q.HasPageID {
		where = append(where, "page_id = ?")
		args = append(args, q.PageID)
	}
	if len(q.Statuses) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?, ", len(q.Statuses)), ", ")
		where = append(where, "status IN ("+ph+")")
		for _, s := range q.Statuses {
			args = append(args, string(s))
		}
	}
	return where, args
}

// listOrder is q's sort column and ORDER BY clause, id breaking ties.
func listOrder(q journal.Query) (string, string) {
	dir := " DESC"
	if q.Asc {
		dir = " ASC"
	}
	col := "started_at"
	switch q.SortBy {
	case journal.SortCreatedAt, journal.SortFinishedAt, journal.SortSeq:
		col = q.SortBy
	}
	order := ` ORDER BY ` + col + dir
	if col == journal.SortFinishedAt {
		// Open calls have no finish time: last in either direction.
		order = ` ORDER BY (finished_at IS NULL), finished_at` + dir
	}
	return col, order + `, id` + dir
}

// keyset is the condition "after q.After in q's order". It is written
// col <= t AND (col < t OR id < i) (for a descending order) rather than
// as a row comparison so that both stores bound the index range on col.
func keyset(q journal.Query, col string) (string, []any) {
	a := q.After
	lt, le := "<", "<="
	if q.Asc {
		lt, le = ">", ">="
	}
	if col == journal.SortFinishedAt {
		if a.Open {
			return "(finished_at IS NULL AND id " + lt + " ?)", []any{a.ID}
		}
		return "(finished_at IS NULL OR (finished_at " + le + " ? AND (finished_at " + lt + " ? OR id " + lt + " ?)))",
			[]any{a.At, a.At, a.ID}
	}
	return "(" + col + " " + le + " ? AND (" + col + " " + lt + " ? OR id " + lt + " ?))", []any{a.At, a.At, a.ID}
}

// Events implements journal.Store.
func (d *DB) Events(ctx context.Context, accountID, id string) ([]journal.Event, error) {
	var lines string
	err := d.db.QueryRowContext(ctx, d.q(`SELECT events FROM tool_executions WHERE account_id = ? AND id = ?`), accountID, id).Scan(&lines)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, journal.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	return decodeEvents(lines)
}

// Opened implements journal.Store.
func (d *DB) Opened(ctx context.Context) ([]journal.Record, error) {
	rows, err := d.db.QueryContext(ctx, d.q(selectExec+` WHERE lifecycle_state = 'opened' ORDER BY created_at, id`))
	if err != nil {
		return nil, fmt.Errorf("opened executions: %w", err)
	}
	return scanRecords(rows, false)
}

// LastEvent implements journal.Store.
func (d *DB) LastEvent(ctx context.Context, id string) (journal.Event, error) {
	var lines string
	err := d.db.QueryRowContext(ctx, d.q(`SELECT events FROM tool_executions WHERE id = ?`), id).Scan(&lines)
	if errors.Is(err, sql.ErrNoRows) {
		return journal.Event{}, journal.ErrNotFound
	}
	if err != nil {
		return journal.Event{}, fmt.Errorf("last event: %w", err)
	}
	evs, err := decodeEvents(lines)
	if err != nil {
		return journal.Event{}, err
	}
	if len(evs) == 0 {
		return journal.Event{}, journal.ErrNotFound
	}
	return evs[len(evs)-1], nil
}

// PurgeIdempotency implements journal.Store.
func (d *DB) PurgeIdempotency(ctx context.Context, t time.Time) (int, error) {
	res, err := d.db.ExecContext(ctx, d.q(`DELETE FROM idempotency_keys WHERE expires_at < ?`), t.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
