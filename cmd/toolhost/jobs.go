package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/internal/toolhost"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

// jobSubcommands are toolhost jobs' subcommands, and jobSynopsis their
// arguments and what each does.
var (
	jobSubcommands = []string{"list", "show", "cancel", "limits", "delivery"}
	jobSynopsis    = map[string]struct{ args, summary string }{
		"list":     {"", "lists the account's background jobs, newest first"},
		"show":     {" ID", "prints one job's execution in the /tool-executions/{id} shape: its status, and its result once it has ended"},
		"cancel":   {" ID", "cancels a job: a queued one ends at once, a running one is told to stop wherever it runs"},
		"limits":   {"", "prints the account's job limits, after changing those whose flags are given"},
		"delivery": {" TOOL [inline|async_job|default]", "prints the account's default delivery of a builtin tool, after setting it when a mode is given"},
	}
)

// cmdJobs is `toolhost jobs list|show|cancel|limits|delivery`: the
// deferred calls of an account in the store the server uses, and its
// settings of them. list, show and limits read (and limits writes) the
// store alone, as toolhost journal does; cancel cancels as DELETE
// /tool-executions/{id}/job does, delivery sets as PATCH
// /tools/builtin/{name}/settings does.
func cmdJobs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "toolhost jobs: want a subcommand: list, show ID, cancel ID, limits or delivery TOOL [MODE]\n")
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("jobs " + sub)
	var c common
	c.registerStore(fs)
	account := fs.String("account", tools.LocalAccount, "`ACCOUNT` whose jobs these are")
	status := fs.String("status", "", "list: only jobs of this `STATUS` (queued, running, success, error, timeout, uncertain)")
	limit := fs.String("limit", "20", "list: how many jobs, `N` from 1 to 500")
	asJSON := fs.Bool("json", false, "list: print JSON in the /tool-executions shape")
	lim := registerJobLimits(fs)
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return exitCodeOf(err, stderr, "jobs")
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	switch {
	case sub == "list" && fs.NArg() == 0:
		return jobsList(ctx, &c, *account, *status, *limit, *asJSON, enc, stdout, stderr)
	case sub == "show" && fs.NArg() == 1:
		return jobsShow(ctx, &c, *account, fs.Arg(0), enc, stderr)
	case sub == "cancel" && fs.NArg() == 1:
		return jobsCancel(ctx, &c, *account, fs.Arg(0), enc, stderr)
	case sub == "limits" && fs.NArg() == 0:
		return jobsLimits(ctx, &c, fs, lim, *account, enc, stderr)
	case sub == "delivery" && (fs.NArg() == 1 || fs.NArg() == 2):
		return jobsDelivery(ctx, &c, *account, fs.Arg(0), fs.Arg(1), enc, stderr)
	}
	fmt.Fprintf(stderr, "toolhost jobs: want list, show ID, cancel ID, limits or delivery TOOL [MODE]\n")
	return exitUsage
}

func jobsList(ctx context.Context, c *common, account, status, limit string, asJSON bool, enc *json.Encoder, stdout, stderr io.Writer) int {
	v := url.Values{"limit": {limit}}
	if status != "" {
		v.Set("status", status)
	}
	q, err := admin.ExecutionQuery(v, account, c.cfg.Tools.Slots)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return exitUsage
	}
	q.DeliveryMode = journal.DeliveryAsync
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, ok := c.openStore(ctx, "jobs", stderr)
	if !ok {
		return exitStartup
	}
	defer db.Close()
	recs, total, err := db.List(ctx, q)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return 1
	}
	if asJSON {
		_ = enc.Encode(pageOf(recs, total, q))
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tID\tJOB\tTOOL\tSTATUS\tATTEMPT\tMS\tERROR")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.CreatedAt.Local().Format("2006-01-02 15:04:05.000"), r.ID, r.RuntimeJobID,
			r.ToolName, r.Status, r.AttemptNo, r.Duration.Milliseconds(), r.ErrorCode)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d of %d jobs\n", len(recs), total)
	return exitOK
}

// jobsShow prints one job's execution in the /tool-executions/{id} shape.
func jobsShow(ctx context.Context, c *common, account, id string, enc *json.Encoder, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, ok := c.openStore(ctx, "jobs", stderr)
	if !ok {
		return exitStartup
	}
	defer db.Close()
	rec, err := db.Get(ctx, account, id)
	if err == nil && rec.DeliveryMode != journal.DeliveryAsync {
		err = journal.ErrNotFound
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: job %s: %v\n", id, err)
		return 1
	}
	evs, err := db.Events(ctx, account, id)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: job %s: %v\n", id, err)
		return 1
	}
	view := admin.Execution(rec)
	view.Attempts = admin.Attempts(evs)
	if runner := admin.RunnerInstance(evs); runner != "" {
		view.RunnerInstanceID = &runner
	}
	_ = enc.Encode(struct {
		Data admin.ExecutionView `json:"data"`
	}{view})
	return exitOK
}

// jobsCancel cancels a job: a queued one ends at once, a running one is
// told to stop wherever it runs (its record then says cancelled).
func jobsCancel(ctx context.Context, c *common, account, id string, enc *json.Encoder, stderr io.Writer) int {
	o := c.options(slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	o.SkipRunCode = true
	a, err := toolhost.Open(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return exitStartup
	}
	defer a.Close()
	rec, err := a.Executor().CancelJob(ctx, account, id)
	switch {
	case errors.Is(err, tools.ErrJobNotFound), errors.Is(err, tools.ErrJobFinished):
		fmt.Fprintf(stderr, "toolhost jobs: job %s: %v\n", id, err)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return exitStartup
	}
	_ = enc.Encode(struct {
		Data admin.ExecutionView `json:"data"`
	}{admin.Execution(rec)})
	return exitOK
}
