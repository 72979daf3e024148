package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/toolhost"
	"github.com/toolhost/toolhost/tools"
)

// jobLimitFlags are toolhost jobs limits' flags: a limit is changed only
// when its flag is given.
type jobLimitFlags struct {
	maxJobs, maxRunning *int
	retention           *time.Duration
}

func registerJobLimits(fs *flag.FlagSet) jobLimitFlags {
	return jobLimitFlags{
		maxJobs:    fs.Int("max-jobs", 0, "limits: the account's queued and running jobs, `N` (0: jobs.max_per_account)"),
		maxRunning: fs.Int("max-running", 0, "limits: the account's jobs running at once, `N` (0: no limit of its own)"),
		retention:  fs.Duration("result-retention", 0, "limits: how long a finished job's result is kept, `DURATION` (0: the journal's retention)"),
	}
}

// jobsLimits prints the account's job limits, after setting those whose
// flags were given, in the shape GET /admin/accounts/{account}/job-limits
// answers.
func jobsLimits(ctx context.Context, c *common, fs *flag.FlagSet, f jobLimitFlags, account string, enc *json.Encoder, stderr io.Writer) int {
	if !keys.ValidAccount(account) {
		fmt.Fprintf(stderr, "toolhost jobs: account %q: want 1 to 64 lower-case letters, digits, '_' or '-'\n", account)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, ok := c.openStore(ctx, "jobs", stderr)
	if !ok {
		return exitStartup
	}
	defer db.Close()
	l, err := db.JobLimits(ctx, account)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return 1
	}
	changed := false
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "max-jobs":
			l.MaxJobs, changed = *f.maxJobs, true
		case "max-running":
			l.MaxRunning, changed = *f.maxRunning, true
		case "result-retention":
			l.ResultRetention, changed = *f.retention, true
		}
	})
	if changed {
		if err := l.Check(); err != nil {
			fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
			return exitUsage
		}
		l.UpdatedAt = time.Now()
		if err := db.SetJobLimits(ctx, account, l); err != nil {
			fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
			return 1
		}
	}
	_ = enc.Encode(struct {
		Data jobLimitsOut `json:"data"`
	}{jobLimitsOut{Account: account, MaxJobs: l.MaxJobs, MaxRunning: l.MaxRunning, ResultRetentionS: int64(l.ResultRetention / time.Second)}})
	return exitOK
}

// jobLimitsOut is GET /admin/accounts/{account}/job-limits's data.
type jobLimitsOut struct {
	Account          string `json:"account"`
	MaxJobs          int    `json:"max_jobs"`
	MaxRunning       int    `json:"max_running"`
	ResultRetentionS int64  `json:"result_retention_s"`
}

// jobsDelivery prints the account's delivery setting of a builtin tool,
// after setting it when mode is given (inline, async_job, or default to
// take the tool's own again), as GET/PATCH /tools/builtin/{name}/settings.
func jobsDelivery(ctx context.Context, c *common, account, tool, mode string, enc *json.Encoder, stderr io.Writer) int {
	o := c.options(slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	a, err := toolhost.Open(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return exitStartup
	}
	defer a.Close()
	var st tools.BuiltinSetting
	if mode == "" {
		st, err = a.Executor().BuiltinSetting(ctx, account, tool)
	} else {
		if mode == "default" {
			mode = ""
		}
		st, err = a.Executor().SetBuiltinSetting(ctx, account, tool, tools.Delivery(mode))
	}
	var te *tools.Error
	switch {
	case errors.Is(err, tools.ErrNoSuchBuiltin), errors.As(err, &te):
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "toolhost jobs: %v\n", err)
		return 1
	}
	_ = enc.Encode(struct {
		Data tools.BuiltinSetting `json:"data"`
	}{st})
	return exitOK
}
