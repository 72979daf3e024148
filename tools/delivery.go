package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
)

// Delivery is how a caller asks a call to be delivered: "" leaves it to
// the tool (its default_delivery_mode), DeliveryInline runs it while the
// caller waits, DeliveryAsync runs it as a durable background job and
// answers at once with a Receipt.
type Delivery string

const (
	DeliveryDefault Delivery = ""
	DeliveryInline  Delivery = "inline"
	DeliveryAsync   Delivery = "async_job"
)

// ParseDelivery reads a delivery a caller named; "" is the default.
func ParseDelivery(s string) (Delivery, error) {
	switch d := Delivery(s); d {
	case DeliveryDefault, DeliveryInline, DeliveryAsync:
		return d, nil
	}
	return "", fmt.Errorf("delivery mode %q: want inline or async_job", s)
}

// Result visibilities of the seed (the runtime catalog's and the journal's
// result_visibility).
const (
	VisibilityImmediate = "immediate"
	VisibilityDeferred  = "deferred_receipt"
)

// ResultURIPrefix is where a deferred call's result is read: the MCP
// resource of its execution.
const ResultURIPrefix = "toolhost://executions/"

// Receipt is what a deferred call answers with at once: the execution
// that will hold its result, the job that runs it, and where to read it.
type Receipt struct {
	ExecutionID  string         `json:"execution_id"`
	RuntimeJobID string         `json:"runtime_job_id"`
	Status       journal.Status `json:"status"`
	ResultURI    string         `json:"result_uri"`
}

// receiptBody is a receipt as a deferred call's structured content.
type receiptBody struct {
	Receipt
	DeliveryMode     Delivery `json:"delivery_mode"`
	ResultVisibility string   `json:"result_visibility"`
	HowToFetch       string   `json:"how_to_fetch"`
}

// Errors of CancelJob.
var (
	// ErrJobNotFound: the account has no deferred execution of that id.
	ErrJobNotFound = errors.New("no such job")
	// ErrJobFinished: the job's execution has already ended.
	ErrJobFinished = errors.New("the job has already finished")
)

// Codes of deferred delivery.
const (
	// CodeDeliveryUnsupported: the call asked for a background job of a
	// tool that only runs inline, or the server keeps no job queue.
	CodeDeliveryUnsupported = "delivery_unsupported"
	// CodeJobLimit: the account has as many queued and running jobs as it
	// may; one must end first.
	CodeJobLimit = "job_limit"
	// CodeJobFailed: the job queue gave up on the job: its last attempt
	// failed before the call could end (the store or the limit service
	// did not answer, or the process stopped every time).
	CodeJobFailed = "job_failed"
)

// Defaults of the job options.
const (
	// DefaultMaxJobsPerAccount bounds an account's queued and running jobs.
	DefaultMaxJobsPerAccount = 100
	// DefaultJobTimeout is the deadline of one attempt of a deferred call.
	DefaultJobTimeout = 10 * time.Minute
)

// JobRun is one attempt of a deferred call, as the queue hands it to
// RunJob.
type JobRun struct {
	AccountID   string
	ExecutionID string
	// Attempt counts from 1; a second attempt follows an attempt whose
	// process stopped or handed the job back.
	Attempt int
	// Cancelled says whether the attempt's context ended because a user
	// cancelled the job (else the process is stopping and hands it back).
	Cancelled func() bool
	// Last says the queue will not start the job again when this attempt
	// fails (its attempts are used up).
	Last bool
}

// JobQueue is the durable queue deferred calls run from, in the journal's
// own database (internal/store implements it on river). Any process
// sharing the database may run a job; a process that dies mid-job leaves
// it to another once the queue rescues it.
type JobQueue interface {
	// Enqueue writes the queued record w (an insert) and a job that runs
	// it in one transaction, the record carrying the job's id; attempts
	// bounds how often the job is started.
	Enqueue(ctx context.Context, w journal.Write, attempts int) (jobID string, err error)
	// Cancel cancels a job: a queued one never runs (queued true: nobody
	// ends its record but the caller); a running one has its context
	// cancelled wherever it runs. finished: the job had already ended.
	Cancel(ctx context.Context, jobID string) (queued, finished bool, err error)
	// Active counts the account's deferred executions still open.
	Active(ctx context.Context, accountID string) (int, error)
	// Running counts those of them running.
	Running(ctx context.Context, accountID string) (int, error)
	// HoldStart takes the account's job-start lock, kept until release is
	// called: while it is held, no worker of any process sharing the
	// queue starts a job of the account, so that counting its running
	// jobs and recording one more as running are one step. busy: another
	// process holds it now (look again later); err: ctx ended first or the
	// store failed.
	HoldStart(ctx context.Context, accountID string) (release func(), busy bool, err error)
}

// deliveryOf is how a call of spec is delivered when the caller asked
// for d.
func deliveryOf(spec catalog.Spec, d Delivery) Delivery {
	switch {
	case d == DeliveryInline, d == DeliveryAsync:
		return d
	case spec.Deferrable() && spec.DeferByDefault:
		return DeliveryAsync
	}
	return DeliveryInline
}

// checkDelivery decides whether the call runs deferred, or why it cannot:
// the tool only runs inline, the server keeps no job queue, or the
// account is at its limit of jobs.
func (pl *pipeline) checkDelivery(ctx context.Context) *Error {
	e, spec := pl.e, pl.ent.spec
	if _, err := ParseDelivery(string(pl.p.Delivery)); err != nil {
		return Errorf(CodeInvalidArgs, "%s: %v", spec.Name, err)
	}
	if pl.p.Delivery == DeliveryDefault && spec.Deferrable() && e.opts.Settings != nil && pl.builtin() {
		// The account's default delivery mode of this builtin, if any.
		ds, err := e.opts.Settings.BuiltinDeliveries(ctx, pl.c.rec.AccountID)
		if err != nil {
			e.opts.Logger.ErrorContext(ctx, "account settings lookup failed", "execution_id", pl.c.rec.ID, "err", err)
			return Errorf(CodeInternal, "the account's tool settings could not be read; the error was logged with execution id %s", pl.c.rec.ID)
		}
		spec, _ = withOverride(spec, ds[spec.Name])
	}
	if deliveryOf(spec, pl.p.Delivery) != DeliveryAsync {
		return nil
	}
	switch {
	case !spec.Deferrable():
		return Errorf(CodeDeliveryUnsupported, "%s runs inline only (async_capability inline_only); call it without async_job", spec.Name)
	case e.opts.Jobs == nil:
		return Errorf(CodeDeliveryUnsupported, "this server keeps no durable job queue (it needs a SQLite or PostgreSQL store); call %s inline", spec.Name)
	case pl.p.IdempotencyKey != "":
		return Errorf(CodeDeliveryUnsupported, "an idempotency key cannot be given with async_job; the receipt's execution id names the job")
	}
	lim, err := e.jobLimits(ctx, pl.c.rec.AccountID)
	var n int
	if err == nil {
		n, err = e.opts.Jobs.Active(ctx, pl.c.rec.AccountID)
	}
	if err != nil {
		e.opts.Logger.ErrorContext(ctx, "count of active jobs failed", "execution_id", pl.c.rec.ID, "err", err)
		return Errorf(CodeInternal, "the job queue did not answer; the error was logged with execution id %s", pl.c.rec.ID)
	}
	if n >= lim.MaxJobs {
		te := Errorf(CodeJobLimit, "the account has %d queued or running jobs, the most it may have; wait for one to end or cancel one", n)
		te.RetryAfter = 5 * time.Second
		return te
	}
	pl.async = true
	return nil
}

// enqueue writes the call as a queued execution with the job that will
// run it, and answers with the receipt.
func (pl *pipeline) enqueue(ctx context.Context) (*Outcome, error) {
	e, c, spec := pl.e, pl.c, pl.ent.spec
	if err := c.move(journal.StatePrepared, preparedDetail{SideEffectLevel: string(spec.SideEffect), ArgsDigest: c.rec.ArgsDigest}.raw()); err != nil {
		return nil, err
	}
	r := c.rec
	r.Status, r.DeliveryMode, r.State = journal.StatusQueued, string(DeliveryAsync), c.tr.State()
	r.InstanceID = e.journal.InstanceID()
	attempts := 5
	if spec.SideEffect == catalog.SideEffectIrreversible {
		// The second attempt never sends it again: it ends the call
		// uncertain (RunJob).
		attempts = 2
	}
	jobID, err := e.opts.Jobs.Enqueue(context.WithoutCancel(ctx), journal.Write{Insert: true, Record: r, Events: c.tr.Take()}, attempts)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", spec.Name, err)
	}
	rc := &Receipt{ExecutionID: r.ID, RuntimeJobID: jobID, Status: journal.StatusQueued, ResultURI: ResultURIPrefix + r.ID}
	body := receiptBody{Receipt: *rc, DeliveryMode: DeliveryAsync, ResultVisibility: VisibilityDeferred,
		HowToFetch: "read the MCP resource " + rc.ResultURI + ", or GET /tool-executions?run_id=… (or `toolhost jobs show " + r.ID + "`); it holds the result once status is no longer queued or running"}
	out := c.out
	out.Status, out.Receipt = StatusSuccess, rc
	out.Structured, _ = json.Marshal(body)
	out.Text = fmt.Sprintf("%s runs in the background as job %s (execution %s, status queued). Its result will be at %s. To wait for it, call %s with {\"execution_id\":\"%s\"}; to stop it, %s with the same.",
		spec.Name, jobID, r.ID, rc.ResultURI, WaitJobTool, r.ID, CancelJobTool)
	out.Summary = "queued as job " + jobID
	out.Duration = e.opts.Clock().Sub(c.start)
	return out, nil
}

// builtin says whether the call resolved to a builtin tool (not a custom
// definition or a remote MCP tool).
func (pl *pipeline) builtin() bool { return pl.custom == nil && pl.remote == nil }
