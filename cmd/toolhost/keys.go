package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
)

// keyFlags are the flags of the keys subcommands; each subcommand defines
// the ones it takes (register), the others stay nil.
type keyFlags struct {
	account, name, scopes, month *string
	cpm, conc                    *int
	capUnits                     *float64
	asJSON                       *bool
	// hosted budgets: model calls, tool calls, result bytes, cost.
	hModel, hTools *int
	hBytes, hCost  *int64
	hWall          *time.Duration
}

func (f *keyFlags) register(fs *flag.FlagSet, sub string) {
	switch sub {
	case "create", "list", "usage":
		f.account = fs.String("account", "", "`ACCOUNT` id (create: required; list, usage: only this account)")
	}
	switch sub {
	case "create":
		f.name = fs.String("name", "", "key `NAME` (required), e.g. ci or alice-laptop")
		f.scopes = fs.String("scopes", "mcp,hosted", "comma-separated `SCOPES`: mcp, hosted, admin")
	case "usage":
		f.month = fs.String("month", keys.Month(time.Now()), "`MONTH` as YYYY-MM")
	}
	switch sub {
	case "create", "set-limits":
		f.cpm = fs.Int("calls-per-minute", -1, "MCP calls per minute, `N` (0 = unlimited; -1 keeps the current value)")
		f.conc = fs.Int("concurrent-calls", -1, "MCP calls at once, `N` (0 = unlimited; -1 keeps the current value)")
		f.capUnits = fs.Float64("monthly-units-cap", -1, "monthly cap of priced paid `UNITS` (0 = unlimited; -1 keeps the current value)")
		f.hModel = fs.Int("hosted-model-calls", -1, "model calls of one hosted /v1 loop, `N` (0 = the server's; -1 keeps the current value)")
		f.hTools = fs.Int("hosted-tool-calls", -1, "hosted tool calls of one /v1 loop, `N` (0 = the server's; -1 keeps the current value)")
		f.hBytes = fs.Int64("hosted-result-bytes", -1, "tool-result `BYTES` fed to the model in one /v1 loop (0 = the server's; -1 keeps the current value)")
		f.hCost = fs.Int64("hosted-cost", -1, "cost_quota `UNITS` of one /v1 loop (0 = the server's; -1 keeps the current value)")
		f.hWall = fs.Duration("hosted-wall-clock", -1, "wall clock of one /v1 loop, a `DURATION` such as 2m (0 = the server's; -1ns keeps the current value)")
	case "list", "usage":
		f.asJSON = fs.Bool("json", false, "print JSON")
	}
}

// limits is base with the limit flags that were given (>= 0) applied.
func (f *keyFlags) limits(base keys.Limits) keys.Limits {
	if f.cpm == nil {
		return base
	}
	if *f.cpm >= 0 {
		base.CallsPerMinute = *f.cpm
	}
	if *f.conc >= 0 {
		base.ConcurrentCalls = *f.conc
	}
	if *f.capUnits >= 0 {
		base.MonthlyUnitsCap = *f.capUnits
	}
	if *f.hModel >= 0 {
		base.Hosted.ModelCalls = *f.hModel
	}
	if *f.hTools >= 0 {
		base.Hosted.ToolCalls = *f.hTools
	}
	if *f.hBytes >= 0 {
		base.Hosted.ResultBytes = *f.hBytes
	}
	if *f.hCost >= 0 {
		base.Hosted.Cost = *f.hCost
	}
	if *f.hWall >= 0 {
		base.Hosted.WallClockMS = f.hWall.Milliseconds()
	}
	return base
}

// keySubcommands are the subcommands of toolhost keys, in usage order.
var keySubcommands = []string{"create", "list", "revoke", "set-limits", "usage"}

// keySynopsis holds each subcommand's positional arguments and summary.
var keySynopsis = map[string]struct{ args, summary string }{
	"create":     {"", "creates a key (and its account when new) and prints its secret once"},
	"list":       {"", "lists keys with their scopes and limits"},
	"revoke":     {" KEY_ID", "revokes a key: it is refused within 2 s on every replica"},
	"set-limits": {" KEY_ID", "changes a key's limits; the flags not given keep their value"},
	"usage":      {"", "prints metered usage per key, month and tool"},
}

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help" {
		w, code := stdout, exitOK
		if len(args) == 0 {
			w, code = stderr, exitUsage
		}
		writeCommandUsage(w, newFlagSet("keys"))
		return code
	}
	sub := args[0]
	if _, ok := keySynopsis[sub]; !ok {
		fmt.Fprintf(stderr, "toolhost keys: unknown subcommand %q\n\n", sub)
		writeCommandUsage(stderr, newFlagSet("keys"))
		return exitUsage
	}
	fs := newFlagSet("keys " + sub)
	var c common
	c.registerStore(fs)
	var kf keyFlags
	kf.register(fs, sub)
	account, name, scopes, month, asJSON := kf.account, kf.name, kf.scopes, kf.month, kf.asJSON
	if err := parseFlags(ctx, fs, args[1:], &c); err != nil {
		return exitCodeOf(err, stderr, "keys "+sub)
	}
	wantArgs := 0
	if sub == "revoke" || sub == "set-limits" {
		wantArgs = 1
	}
	if fs.NArg() != wantArgs {
		syn, _ := synopsis("keys " + sub)
		fmt.Fprintf(stderr, "toolhost keys %s: want %d argument(s), got %d\nUsage: %s [flags]\n", sub, wantArgs, fs.NArg(), syn)
		return exitUsage
	}
	db, ok := c.openStore(ctx, "keys", stderr)
	if !ok {
		return exitStartup
	}
	defer db.Close()
	svc := keys.New(keys.Options{Store: db})
	defer svc.Close() // before db.Close: last-use writes finish first
	out := json.NewEncoder(stdout)
	out.SetIndent("", "  ")
	limitsFrom := kf.limits
	fail := func(err error) int {
		fmt.Fprintf(stderr, "toolhost keys %s: %v\n", sub, err)
		if errors.Is(err, keys.ErrInvalidInput) || errors.Is(err, keys.ErrNotFound) {
			return exitUsage
		}
		return 1
	}
	switch sub {
	case "create":
		k, secret, err := svc.CreateKey(ctx, *account, *name, strings.Split(*scopes, ","), limitsFrom(keys.Limits{}))
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "Created key %s for account %s. The secret is shown only this once:\n", k.ID, k.AccountID)
		fmt.Fprintln(stdout, secret)
	case "list":
		ks, err := db.ListKeys(ctx, *account)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			_ = out.Encode(ks)
			return exitOK
		}
		printKeys(stdout, ks)
	case "revoke", "set-limits":
		id := fs.Arg(0)
		var err error
		if sub == "revoke" {
			err = svc.Revoke(ctx, id)
		} else {
			var k *keys.Key
			if k, err = db.KeyByID(ctx, id); err == nil {
				err = svc.SetLimits(ctx, id, limitsFrom(k.Limits))
			}
		}
		if err != nil {
			return fail(err)
		}
		k, err := db.KeyByID(ctx, id)
		if err != nil {
			return fail(err)
		}
		_ = out.Encode(k)
	case "usage":
		rows, err := db.Usage(ctx, *account, *month)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			_ = out.Encode(rows)
			return exitOK
		}
		printUsageRows(stdout, rows)
	}
	return exitOK
}

// printKeys is keys list's table.
func printKeys(w io.Writer, ks []keys.Key) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACCOUNT\tNAME\tPREFIX\tSCOPES\tCPM\tCONC\tCAP\tLAST USED\tREVOKED")
	for _, k := range ks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%d\t%d\t%g\t%s\t%s\n", k.ID, k.AccountID, k.Name, k.Prefix,
			strings.Join(k.Scopes, ","), k.Limits.CallsPerMinute, k.Limits.ConcurrentCalls, k.Limits.MonthlyUnitsCap,
			when(k.LastUsedAt), when(k.RevokedAt))
	}
	tw.Flush()
}

// printUsageRows is keys usage's table.
func printUsageRows(w io.Writer, rows []keys.UsageRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MONTH\tACCOUNT\tKEY\tTOOL\tCALLS\tUNITS\tCOST")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%g\t%g\n", r.Month, r.AccountID, r.KeyID, r.Tool, r.Calls, r.Units, r.Cost)
	}
	tw.Flush()
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
