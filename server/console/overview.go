package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/journal"
)

// overviewScan bounds how many of the last day's records the overview
// reads (newest first); the page says when it stopped short.
const overviewScan = 20000

// refusalCodes are the limit refusals the overview counts.
var refusalCodes = []string{keys.CodeRateLimited, keys.CodeConcurrencyLimit, keys.CodeMonthlyCapReached, keys.CodeLimitsUnavailable}

// toolStats is one tool on one face.
type toolStats struct {
	Tool, Face string
	Hour, Day  int
	Errors     int
	ErrorRate  float64
	P50, P99   time.Duration
	Refusals   int
	durations  []time.Duration
}

type overviewData struct {
	Rows      []*toolStats
	Hour, Day int
	Errors    int
	ErrorRate float64
	Refusals  int
	Capped    bool
	Scanned   int
	Since     time.Time
	RunCode   string
	// Extra are the Overview fragments of Options.Pages (the job queue's).
	Extra []template.HTML
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, rq *request) {
	account, err := rq.account(r)
	if err != nil {
		c.refuseAccount(w, rq, err)
		return
	}
	d, err := c.stats(r.Context(), account)
	if err != nil {
		c.o.Logger.Error("console: overview", "err", err)
		c.render(w, http.StatusServiceUnavailable, "overview", rq, view{Title: "Overview", Nav: "overview", Account: account, Error: "the journal cannot be read right now"})
		return
	}
	for _, p := range c.o.Pages {
		// A page's figures are the shown account's, as the calls' are.
		if p.Overview == nil {
			continue
		}
		frag, err := p.Overview(r.Context(), c.pageViewer(rq, account))
		if err != nil {
			c.o.Logger.Error("console: overview", "page", p.Path, "err", err)
			frag = template.HTML(`<p class="hint">` + template.HTMLEscapeString(p.Title) + `: cannot be read right now.</p>`) //nolint:gosec // escaped
		}
		d.Extra = append(d.Extra, frag)
	}
	c.render(w, http.StatusOK, "overview", rq, view{Title: "Overview", Nav: "overview", Account: account, Data: d})
}

// stats reads the account's calls of the last day, newest first, and sums
// them per tool and face.
func (c *Console) stats(ctx context.Context, account string) (*overviewData, error) {
	now := c.o.Now()
	d := &overviewData{Since: now.Add(-24 * time.Hour)}
	by := map[[2]string]*toolStats{}
	// By keyset, without a count: a page costs its own 500 rows.
	q := journal.Query{AccountID: account, SortBy: journal.SortStartedAt, Limit: 500, NoTotal: true, NoSeq: true}
	cursor := ""
	for d.Scanned < overviewScan {
		pg, err := journal.ListPage(ctx, c.o.Journal, q, cursor)
		if err != nil {
			return nil, fmt.Errorf("overview: %w", err)
		}
		done := pg.Next == ""
		for _, rec := range pg.Records {
			if rec.StartedAt.Before(d.Since) {
				done = true
				break
			}
			d.Scanned++
			d.add(by, rec, now)
		}
		if done {
			break
		}
		cursor = pg.Next
	}
	d.Capped = d.Scanned >= overviewScan
	for _, s := range by {
		s.finish()
		d.Rows = append(d.Rows, s)
	}
	sort.Slice(d.Rows, func(i, j int) bool {
		if d.Rows[i].Day != d.Rows[j].Day {
			return d.Rows[i].Day > d.Rows[j].Day
		}
		return d.Rows[i].Tool+d.Rows[i].Face < d.Rows[j].Tool+d.Rows[j].Face
	})
	if d.Day > 0 {
		d.ErrorRate = float64(d.Errors) / float64(d.Day)
	}
	if c.o.RunCode != nil {
		d.RunCode = prettyJSON(c.o.RunCode())
	}
	return d, nil
}

func (d *overviewData) add(by map[[2]string]*toolStats, rec journal.Record, now time.Time) {
	k := [2]string{rec.ToolName, rec.Face}
	s := by[k]
	if s == nil {
		s = &toolStats{Tool: rec.ToolName, Face: rec.Face}
		by[k] = s
	}
	s.Day++
	d.Day++
	if !rec.StartedAt.Before(now.Add(-time.Hour)) {
		s.Hour++
		d.Hour++
	}
	if rec.ErrorCode != "" || (rec.Status != journal.StatusSuccess && rec.Lifecycle == journal.Finished) {
		s.Errors++
		d.Errors++
	}
	if slices.Contains(refusalCodes, rec.ErrorCode) {
		s.Refusals++
		d.Refusals++
	}
	if !rec.FinishedAt.IsZero() {
		s.durations = append(s.durations, rec.Duration)
	}
}

func (s *toolStats) finish() {
	if s.Day > 0 {
		s.ErrorRate = float64(s.Errors) / float64(s.Day)
	}
	if len(s.durations) == 0 {
		return
	}
	slices.Sort(s.durations)
	s.P50 = quantile(s.durations, 0.50)
	s.P99 = quantile(s.durations, 0.99)
}

// quantile is the nearest-rank quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func (c *Console) refuseAccount(w http.ResponseWriter, rq *request, err error) {
	if errors.Is(err, errAccountInvalid) {
		c.render(w, http.StatusBadRequest, "error", rq, view{Title: "Refused", Data: "invalid account", Error: err.Error()})
		return
	}
	c.render(w, http.StatusForbidden, "error", rq, view{Title: "Refused", Data: "forbidden", Error: err.Error()})
}
