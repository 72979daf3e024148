package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/toolhost/toolhost/internal/toolhost"
)

// cmdJournalPrune is `toolhost journal prune --before DATE`: what the
// retention job (journal.retention) deletes, by hand, on the same store as
// serve (--data or --postgres), while servers run.
func cmdJournalPrune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("journal prune")
	var c common
	c.registerStore(fs)
	before := fs.String("before", "", "delete the finished records created before `DATE` (2026-01-31, in UTC, or an RFC 3339 time), with their whole results, idempotency keys and /v1 round records")
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return exitCodeOf(err, stderr, "journal prune")
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhost journal prune: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	at, err := pruneDate(*before)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost journal prune: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	n, err := toolhost.PruneJournal(ctx, c.options(nil), at)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost journal prune: %v\n", err)
		return exitStartup
	}
	fmt.Fprintf(stdout, "deleted %d records created before %s\n", n, at.Format(time.RFC3339))
	return exitOK
}

// pruneDate reads --before: a date (midnight UTC) or an RFC 3339 time.
func pruneDate(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("--before DATE is required (2026-01-31 or 2026-01-31T12:00:00Z)")
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--before %q: want a date such as 2026-01-31 or an RFC 3339 time such as 2026-01-31T12:00:00Z", clipArg(s))
	}
	return t.UTC(), nil
}

// clipArg shortens an argument echoed in an error.
func clipArg(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}
