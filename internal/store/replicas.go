package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhost/toolhost/journal"
)

// The read barrier of a journal shared by replicas (journal.Replicas), on
// PostgreSQL: every replica LISTENs on the schema's channel; a reader takes
// a number from journal_flush_requests and NOTIFYs it; each replica applies
// its spool and then records the number as acked; the reader waits until
// every live replica has acked it. SQLite journals belong to one server and
// need no barrier: a SQLite DB does not implement these methods' effects.

var _ journal.Replicas = (*DB)(nil)

// channel is the NOTIFY channel of this store's schema: several schemas
// (tests, tenants) share a database, and a channel is database-wide.
func (d *DB) channel(ctx context.Context) (string, error) {
	d.mu.Lock()
	ch := d.flushChannel
	d.mu.Unlock()
	if ch != "" {
		return ch, nil
	}
	var schema string
	if err := d.db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", fmt.Errorf("current schema: %w", err)
	}
	ch = "toolhost_journal_flush_" + schema
	d.mu.Lock()
	d.flushChannel = ch
	d.mu.Unlock()
	return ch, nil
}

// Shared implements journal.Replicas: only a PostgreSQL journal is shared.
func (d *DB) Shared() bool { return d.pg() }

// Join implements journal.Replicas.
func (d *DB) Join(ctx context.Context, instanceID string) error {
	if !d.pg() {
		return nil
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO journal_replicas (instance_id, joined_at) VALUES ($1, $2)
		ON CONFLICT (instance_id) DO NOTHING`, instanceID, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("journal replica: %w", err)
	}
	return nil
}

// Leave implements journal.Replicas.
func (d *DB) Leave(ctx context.Context, instanceID string) error {
	if !d.pg() {
		return nil
	}
	if _, err := d.db.ExecContext(ctx, `DELETE FROM journal_replicas WHERE instance_id = $1`, instanceID); err != nil {
		return fmt.Errorf("journal replica: %w", err)
	}
	return nil
}

// RequestFlush implements journal.Replicas.
func (d *DB) RequestFlush(ctx context.Context) (int64, error) {
	if !d.pg() {
		return 0, nil
	}
	ch, err := d.channel(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := d.db.QueryRowContext(ctx, `SELECT n FROM (SELECT nextval('journal_flush_requests') AS n) s, pg_notify($1, s.n::text) x`, ch).Scan(&n); err != nil {
		return 0, fmt.Errorf("journal flush request: %w", err)
	}
	return n, nil
}

// Lagging implements journal.Replicas.
func (d *DB) Lagging(ctx context.Context, self string, request int64) ([]string, error) {
	if !d.pg() {
		return nil, nil
	}
	rows, err := d.db.QueryContext(ctx, `SELECT instance_id FROM journal_replicas WHERE instance_id <> $1 AND acked < $2`, self, request)
	if err != nil {
		return nil, fmt.Errorf("journal replicas: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Ack implements journal.Replicas.
func (d *DB) Ack(ctx context.Context, instanceID string, request int64) error {
	if !d.pg() {
		return nil
	}
	if _, err := d.db.ExecContext(ctx, `UPDATE journal_replicas SET acked = greatest(acked, $2) WHERE instance_id = $1`, instanceID, request); err != nil {
		return fmt.Errorf("journal flush ack: %w", err)
	}
	return nil
}

// ListenFlush implements journal.Replicas: it calls fn with every flush
// request until ctx ends, on a connection of its own, reconnecting after a
// failure (reported to onErr) with back-off. fn runs on the listening
// goroutine.
func (d *DB) ListenFlush(ctx context.Context, fn func(request int64), onErr func(error)) {
	if !d.pg() {
		<-ctx.Done()
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			return
		}
		onErr(err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (d *DB) listenOnce(ctx context.Context, fn func(int64)) error {
	ch, err := d.channel(ctx)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, d.pgw.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Requests made before this connection listened were not heard: answer
	// the newest of them now (a flush that starts after it was made).
	var last int64
	if err := conn.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM journal_flush_requests`).Scan(&last); err != nil {
		return fmt.Errorf("newest flush request: %w", err)
	}
	if last > 0 {
		fn(last)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if v, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			fn(v)
		}
	}
}
