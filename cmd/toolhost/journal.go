package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

// cmdJournal lists recent executions for operators, with the filters of
// GET /tool-executions (none required here), as a table or as JSON in the
// REST shape. --events ID prints the state events of one execution.
func cmdJournal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("journal")
	var c common
	c.registerStore(fs)
	account := fs.String("account", tools.LocalAccount, "`ACCOUNT` whose executions to list")
	asJSON := fs.Bool("json", false, "print JSON in the /tool-executions shape")
	events := fs.String("events", "", "print the state events of this execution `ID`")
	filters := map[string]*string{}
	for _, name := range []string{"session_id", "floor_id", "run_id", "page_id", "caller_slot", "face", "tool_name", "status",
		"lifecycle_state", "commit_outcome", "provider_type", "sort_by", "sort_order", "offset"} {
		filters[name] = fs.String(strings.ReplaceAll(name, "_", "-"), "", "`VALUE`: filter or paging as in GET /tool-executions ("+name+")")
	}
	limit := fs.String("limit", "20", "how many executions to list, `N` from 1 to 500")
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return exitCodeOf(err, stderr, "journal")
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhost journal: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	v := url.Values{}
	for name, p := range filters {
		if *p != "" {
			v.Set(name, *p)
		}
	}
	v.Set("limit", *limit)
	q, err := admin.ExecutionQuery(v, *account, c.cfg.Tools.Slots)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost journal: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, ok := c.openStore(ctx, "journal", stderr)
	if !ok {
		return exitStartup
	}
	defer db.Close()
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")

	if *events != "" {
		evs, err := db.Events(ctx, *account, *events)
		if err != nil {
			fmt.Fprintf(stderr, "toolhost journal: %v\n", err)
			return 1
		}
		if *asJSON {
			data := make([]admin.EventView, len(evs))
			for i, e := range evs {
				data[i] = admin.Event(e)
			}
			_ = enc.Encode(eventList{Data: data})
			return exitOK
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tAT\tSTATE\tDETAIL")
		for _, e := range evs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", e.Seq, e.At.Format(time.RFC3339Nano), e.State, e.Detail)
		}
		tw.Flush()
		return exitOK
	}

	recs, total, err := db.List(ctx, q)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost journal: %v\n", err)
		return 1
	}
	if *asJSON {
		_ = enc.Encode(pageOf(recs, total, q))
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tID\tTOOL\tSTATUS\tCOMMIT\tMS\tFACE\tSLOT\tSESSION\tERROR")
	for _, r := range recs {
		errText := r.ErrorCode
		if len(errText) > 40 {
			errText = errText[:40]
		}
		slot := r.CallerSlot
		if slot == "" {
			slot = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.StartedAt.Local().Format("2006-01-02 15:04:05.000"), r.ID, r.ToolName,
			r.Status, r.Commit, r.Duration.Milliseconds(), r.Face, slot, r.SessionID, errText)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d of %d executions\n", len(recs), total)
	return exitOK
}

// What toolhost journal --json prints, the fields in sorted order of their
// names (the bytes of the maps they replaced).
// pageOf is one page of executions as GET /tool-executions answers it
// (toolhost journal list and toolhost jobs list --json).
func pageOf(recs []journal.Record, total int, q journal.Query) executionPage {
	data := make([]admin.ExecutionView, len(recs))
	for i, r := range recs {
		data[i] = admin.Execution(r)
	}
	return executionPage{Data: data, Meta: pageMeta{HasMore: q.Offset+len(recs) < total, Limit: q.Limit, Offset: q.Offset, Total: total}}
}

type (
	eventList struct {
		Data []admin.EventView `json:"data"`
	}
	executionPage struct {
		Data []admin.ExecutionView `json:"data"`
		Meta pageMeta              `json:"meta"`
	}
	pageMeta struct {
		HasMore bool `json:"has_more"`
		Limit   int  `json:"limit"`
		Offset  int  `json:"offset"`
		Total   int  `json:"total"`
	}
)
