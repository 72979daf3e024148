package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools"
)

// Deferred calls (tools.JobQueue) are river jobs in the journal's own
// database: river_job rows beside tool_executions, inserted in the same
// transaction as the queued record, worked by every process that shares
// the database. River has no heartbeat: a job whose process died is
// rescued (made available again) once it has been running for
// RescueAfter, which river's leader checks every 30 s.

// JobQueueName and jobKind name toolhost's jobs among river's.
const (
	JobQueueName = "toolhost_calls"
	jobKind      = "toolhost_call"
)

// callArgs are a job's arguments: the execution it runs.
type callArgs struct {
	ExecutionID string `json:"execution_id"`
	AccountID   string `json:"account_id"`
}

func (callArgs) Kind() string { return jobKind }

// JobOptions tune the job queue.
type JobOptions struct {
	// Workers is how many jobs one process runs at once. Default 4.
	Workers int
	// JobTimeout is the deadline of one attempt (tools.Options.JobTimeout).
	// Default tools.DefaultJobTimeout.
	JobTimeout time.Duration
	// RescueAfter is how long a job may be running before river takes it
	// for stuck (its process died) and runs it again; more than
	// JobTimeout. Default JobTimeout + 1 min.
	RescueAfter time.Duration
	// PollInterval is how often a process looks for new jobs when no
	// notification tells it (SQLite always polls). Default 1 s on
	// PostgreSQL, 250 ms on SQLite.
	PollInterval time.Duration
	// Drain is how long Stop lets running jobs finish before it cancels
	// them and hands them back. Default 10 s.
	Drain time.Duration
	// RetryDelay, when set, is how long a failed attempt waits before the
	// next; unset, river's backoff (the attempt number to the fourth
	// power, in seconds).
	RetryDelay time.Duration
	Logger     *slog.Logger
}

// fixedRetry is river's retry policy of JobOptions.RetryDelay.
type fixedRetry time.Duration

func (d fixedRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Duration(d)) }

// Jobs is the job queue of a store: tools.JobQueue, and the workers that
// run its jobs once started.
type Jobs struct {
	d    *DB
	q    queue
	run  atomic.Pointer[func(context.Context, tools.JobRun) error]
	opts JobOptions
	// starts are the accounts' job-start locks (HoldStart).
	starts startLocks
}

// queue is river's client of one dialect.
type queue interface {
	insert(ctx context.Context, d *DB, w journal.Write, attempts int) (int64, error)
	cancel(ctx context.Context, id int64) (*rivertype.JobRow, error)
	start(ctx context.Context) error
	stop(ctx context.Context, drain time.Duration) error
}

// Jobs makes the store's job queue; Start makes this process work it.
func (d *DB) Jobs(opts JobOptions) (*Jobs, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = tools.DefaultJobTimeout
	}
	if opts.RescueAfter <= opts.JobTimeout {
		opts.RescueAfter = opts.JobTimeout + time.Minute
	}
	if opts.PollInterval <= 0 {
		// PostgreSQL tells a process of a new job at once (LISTEN); a
		// SQLite process finds it only by looking.
		opts.PollInterval = time.Second
		if !d.pg() {
			opts.PollInterval = 250 * time.Millisecond
		}
	}
	if opts.Drain <= 0 {
		opts.Drain = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Jobs{d: d, opts: opts, starts: startLocks{conns: make(chan struct{}, maxStartConns)}}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(j.work))
	cfg := &river.Config{
		Queues:            map[string]river.QueueConfig{JobQueueName: {MaxWorkers: opts.Workers}},
		Workers:           workers,
		Logger:            opts.Logger,
		FetchPollInterval: opts.PollInterval,
		FetchCooldown:     min(opts.PollInterval, 10*time.Millisecond),
		// Our own deadline ends an attempt (tools.Options.JobTimeout);
		// river's is a backstop past it, before the rescue.
		JobTimeout:           opts.JobTimeout + (opts.RescueAfter-opts.JobTimeout)/2,
		RescueStuckJobsAfter: opts.RescueAfter,
	}
	if opts.RetryDelay > 0 {
		cfg.RetryPolicy = fixedRetry(opts.RetryDelay)
	}
	var err error
	if d.pg() {
		var c *river.Client[pgx.Tx]
		c, err = river.NewClient(riverpgxv5.New(d.pgw), cfg)
		j.q = &riverQueue[pgx.Tx]{client: c, begin: func(ctx context.Context) (pgx.Tx, error) { return d.pgw.Begin(ctx) },
			commit: func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }, rollback: func(tx pgx.Tx) { _ = tx.Rollback(context.Background()) },
			write: func(ctx context.Context, tx pgx.Tx, w journal.Write) error {
				_, err := tx.Exec(ctx, pgInsertExec, insertArgs(w.Record, encodeEvents(w.Events))...)
				return err
			}}
	} else {
		cfg.PollOnly = true
		var c *river.Client[*sql.Tx]
		c, err = river.NewClient(riversqlite.New(d.db), cfg)
		j.q = &riverQueue[*sql.Tx]{client: c, begin: func(ctx context.Context) (*sql.Tx, error) { return d.db.BeginTx(ctx, nil) },
			commit: func(_ context.Context, tx *sql.Tx) error { return tx.Commit() }, rollback: func(tx *sql.Tx) { _ = tx.Rollback() },
			write: func(ctx context.Context, tx *sql.Tx, w journal.Write) error { return d.writeOne(ctx, tx, w) }}
	}
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	return j, nil
}

// work is river's worker: one attempt of a job, run by the executor.
func (j *Jobs) work(ctx context.Context, job *river.Job[callArgs]) error {
	run := j.run.Load()
	if run == nil {
		return errors.New("the job queue was not started with a runner")
	}
	err := (*run)(ctx, tools.JobRun{AccountID: job.Args.AccountID, ExecutionID: job.Args.ExecutionID, Attempt: job.Attempt,
		Cancelled: func() bool { return errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely) },
		Last:      job.Attempt >= job.MaxAttempts})
	var snooze *tools.SnoozeError
	if errors.As(err, &snooze) {
		return river.JobSnooze(snooze.After)
	}
	return err
}

// Start makes this process run jobs with run (tools.Executor.RunJob).
func (j *Jobs) Start(ctx context.Context, run func(context.Context, tools.JobRun) error) error {
	j.run.Store(&run)
	if err := j.q.start(ctx); err != nil {
		return fmt.Errorf("job queue: start: %w", err)
	}
	return nil
}

// Stop stops working jobs: running ones have Drain to finish, then their
// contexts are cancelled and they are handed back to the queue, which
// runs them again here or on another process (a deferred call whose side
// effects are irreversible then ends uncertain, never sent twice).
func (j *Jobs) Stop(ctx context.Context) error { return j.q.stop(ctx, j.opts.Drain) }

// Enqueue implements tools.JobQueue.
func (j *Jobs) Enqueue(ctx context.Context, w journal.Write, attempts int) (string, error) {
	id, err := j.q.insert(ctx, j.d, w, attempts)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(id, 10), nil
}

// Cancel implements tools.JobQueue.
func (j *Jobs) Cancel(ctx context.Context, jobID string) (queued, finished bool, err error) {
	id, err := strconv.ParseInt(jobID, 10, 64)
	if err != nil {
		return false, false, fmt.Errorf("job id %q: %w", jobID, err)
	}
	row, err := j.q.cancel(ctx, id)
	if errors.Is(err, river.ErrNotFound) {
		return false, true, nil
	}
	if err != nil {
		return false, false, err
	}
	switch row.State {
	case rivertype.JobStateRunning:
		return false, false, nil
	case rivertype.JobStateCompleted:
		return false, true, nil
	}
	// Cancelled now (it was waiting), or given up by river: nothing will
	// run it, so the caller ends its record.
	return true, false, nil
}

// Active implements tools.JobQueue: the account's deferred executions
// still open.
func (j *Jobs) Active(ctx context.Context, accountID string) (int, error) {
	var n int
	err := j.d.db.QueryRowContext(ctx, j.d.q(`SELECT count(*) FROM tool_executions
		WHERE account_id = ? AND lifecycle_state = 'opened' AND delivery_mode = 'async_job'`), accountID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("active jobs of %s: %w", accountID, err)
	}
	return n, nil
}

// Running implements tools.JobQueue: the account's deferred executions
// running.
func (j *Jobs) Running(ctx context.Context, accountID string) (int, error) {
	var n int
	err := j.d.db.QueryRowContext(ctx, j.d.q(`SELECT count(*) FROM tool_executions
		WHERE account_id = ? AND lifecycle_state = 'opened' AND delivery_mode = 'async_job' AND status = 'running'`), accountID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("running jobs of %s: %w", accountID, err)
	}
	return n, nil
}

// Lost implements tools.LostJobFinder: deferred executions still open
// whose river job has ended (cancelled, discarded, completed) or is gone,
// oldest first. River never runs such a job again, so nothing else would
// end the record.
func (j *Jobs) Lost(ctx context.Context, limit int) ([]tools.LostJob, error) {
	// A job id is river's bigint as text; PostgreSQL's cast of anything
	// else would fail the whole query, SQLite's gives 0 (no job).
	jobID := `CAST(e.runtime_job_id AS BIGINT)`
	if j.d.pg() {
		jobID = `CASE WHEN e.runtime_job_id ~ '^[0-9]{1,18}$' THEN CAST(e.runtime_job_id AS BIGINT) END`
	}
	rows, err := j.d.db.QueryContext(ctx, j.d.q(`SELECT e.account_id, e.id, COALESCE(e.runtime_job_id, ''), COALESCE(CAST(r.state AS TEXT), '')
		FROM tool_executions e LEFT JOIN river_job r ON r.id = `+jobID+`
		WHERE e.lifecycle_state = 'opened' AND e.delivery_mode = 'async_job'
		AND (r.id IS NULL OR CAST(r.state AS TEXT) IN ('cancelled', 'discarded', 'completed'))
		ORDER BY e.created_at LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("lost jobs: %w", err)
	}
	defer rows.Close()
	var out []tools.LostJob
	for rows.Next() {
		var l tools.LostJob
		if err := rows.Scan(&l.AccountID, &l.ExecutionID, &l.JobID, &l.QueueState); err != nil {
			return nil, fmt.Errorf("lost jobs: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lost jobs: %w", err)
	}
	return out, nil
}

// riverQueue is river's client of the transaction type TTx, and how a
// journal write joins its transaction.
type riverQueue[TTx any] struct {
	client   *river.Client[TTx]
	begin    func(context.Context) (TTx, error)
	commit   func(context.Context, TTx) error
	rollback func(TTx)
	write    func(context.Context, TTx, journal.Write) error
}

func (q *riverQueue[TTx]) insert(ctx context.Context, _ *DB, w journal.Write, attempts int) (int64, error) {
	tx, err := q.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: begin: %w", w.Record.ID, err)
	}
	defer q.rollback(tx)
	res, err := q.client.InsertTx(ctx, tx, callArgs{ExecutionID: w.Record.ID, AccountID: w.Record.AccountID},
		&river.InsertOpts{Queue: JobQueueName, MaxAttempts: attempts})
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", w.Record.ID, err)
	}
	w.Record.RuntimeJobID = strconv.FormatInt(res.Job.ID, 10)
	if err := q.write(ctx, tx, w); err != nil {
		return 0, fmt.Errorf("enqueue %s: insert execution: %w", w.Record.ID, refusal(err))
	}
	if err := q.commit(ctx, tx); err != nil {
		return 0, fmt.Errorf("enqueue %s: commit: %w", w.Record.ID, err)
	}
	return res.Job.ID, nil
}

func (q *riverQueue[TTx]) cancel(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return q.client.JobCancel(ctx, id)
}

func (q *riverQueue[TTx]) start(ctx context.Context) error { return q.client.Start(ctx) }

func (q *riverQueue[TTx]) stop(ctx context.Context, drain time.Duration) error {
	sctx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	err := q.client.Stop(sctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return q.client.StopAndCancel(ctx)
}

// JobStats is the queue's depth: toolhost's jobs waiting to run (queued:
// available, scheduled or waiting for a retry), running, and the age of
// the oldest waiting one (/healthz, the metrics).
type JobStats struct {
	Queued          int     `json:"queued"`
	Running         int     `json:"running"`
	OldestQueuedAge float64 `json:"oldest_queued_age_s"`
}

// Stats reads the queue's depth from river's table.
func (j *Jobs) Stats(ctx context.Context) (JobStats, error) {
	age := `EXTRACT(EPOCH FROM (now() - min(created_at)))`
	if !j.d.pg() {
		age = `(julianday('now') - julianday(min(created_at))) * 86400.0`
	}
	var s JobStats
	var oldest sql.NullFloat64
	err := j.d.db.QueryRowContext(ctx, j.d.q(`SELECT
		count(*) FILTER (WHERE state IN ('available', 'scheduled', 'retryable', 'pending')),
		count(*) FILTER (WHERE state = 'running'),
		(SELECT `+age+` FROM river_job WHERE queue = ? AND state IN ('available', 'scheduled', 'retryable', 'pending'))
		FROM river_job WHERE queue = ?`), JobQueueName, JobQueueName).Scan(&s.Queued, &s.Running, &oldest)
	if err != nil {
		return JobStats{}, fmt.Errorf("job queue depth: %w", err)
	}
	s.OldestQueuedAge = max(oldest.Float64, 0)
	return s, nil
}
