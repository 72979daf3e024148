package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/toolhost/toolhost/journal"
)

// QueueStats is the job queue's depth across every account (as /healthz
// reports it): jobs waiting, running, and the age of the oldest waiting.
type QueueStats struct {
	Queued, Running int
	OldestQueued    time.Duration
}

// JobsOptions are what the job queue's page reads.
type JobsOptions struct {
	// Journal is the execution journal's store: a job is a deferred call's
	// record (delivery_mode async_job).
	Journal journal.Store
	// Stats reads the queue's depth (nil: not shown).
	Stats func(context.Context) (QueueStats, error)
	// Now is the clock ages are counted on (nil: time.Now).
	Now func() time.Time
}

// jobsShown is how many of the account's newest jobs the page lists.
const jobsShown = 50

// JobsPage is the job queue's page for Options.Pages: the shown
// account's newest jobs (Viewer.Account: the viewer's own, or the one an
// admin's Account selector names) with status, age and attempt, a Cancel
// button on the queued and running ones that goes through
// DELETE /tool-executions/{id}/job[?account=] as the viewer's key, and on
// the overview that account's queued and running jobs beside the whole
// queue's depth and its oldest waiting job's age.
func JobsPage(o JobsOptions) Page {
	if o.Now == nil {
		o.Now = time.Now
	}
	jp := &jobsPage{o: o}
	return Page{Path: "/jobs", Title: "Jobs", Render: jp.render, Post: jp.cancel, Overview: jp.overview}
}

type jobsPage struct{ o JobsOptions }

type jobRow struct {
	ID, Tool, Status, Error, JobID string
	Age                            time.Duration
	Attempt                        int
	Active                         bool
}

type jobsData struct {
	Account string
	// Other is Account when it is not the viewer's own: the links and the
	// Cancel form carry it as ?account= (the form's account field).
	Other string
	CSRF  string
	Rows  []jobRow
	More  bool
	Queue *QueueStats
	Mine  [2]int // the account's queued and running jobs
}

var jobsTemplate = template.Must(template.New("jobs").Funcs(template.FuncMap{"age": age, "query": query}).Parse(`
{{define "figures"}}<dl class="figures" id="job-figures">
<div><dt>Queued (account {{.Account}})</dt><dd id="jobs-queued">{{index .Mine 0}}</dd></div>
<div><dt>Running (account {{.Account}})</dt><dd id="jobs-running">{{index .Mine 1}}</dd></div>
{{with .Queue}}<div><dt>Queue depth, every account</dt><dd id="queue-depth">{{.Queued}} queued, {{.Running}} running</dd></div>
<div><dt>Oldest queued</dt><dd id="queue-oldest">{{if .Queued}}{{age .OldestQueued}}{{else}}none waiting{{end}}</dd></div>{{end}}
</dl>{{end}}
{{define "page"}}{{template "figures" .}}
<div class="scroll" tabindex="0" role="region" aria-label="Jobs">
<table id="jobs">
<thead><tr><th scope="col">Age</th><th scope="col">Tool</th><th scope="col">Status</th><th scope="col">Attempt</th><th scope="col">Error</th><th scope="col">Job</th><th scope="col">Action</th></tr></thead>
<tbody>
{{range .Rows}}<tr id="job-{{.ID}}"><td><a href="/console/executions/{{.ID}}{{with $.Other}}?{{query "account" .}}{{end}}">{{age .Age}}</a></td><td class="tool">{{.Tool}}</td><td><span class="st st-{{.Status}}">{{.Status}}</span></td><td>{{.Attempt}}</td><td>{{.Error}}</td><td>{{.JobID}}</td>
<td>{{if .Active}}<form method="post" action="/console/jobs" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="id" value="{{.ID}}">{{with $.Other}}<input type="hidden" name="account" value="{{.}}">{{end}}<button type="submit" class="secondary" aria-label="Cancel the {{.Tool}} job {{.ID}}">Cancel</button></form>{{end}}</td></tr>
{{else}}<tr><td colspan="7">No background jobs yet.</td></tr>{{end}}
</tbody>
</table>
</div>
{{if .More}}<p class="hint">The newest {{len .Rows}} jobs; <a href="/console/executions?{{with .Other}}{{query "account" . "lifecycle_state" "opened"}}{{else}}lifecycle_state=opened{{end}}">open executions</a> lists every call still running.</p>{{end}}
{{end}}
{{define "overview"}}<h3>Background jobs</h3>{{template "figures" .}}<p><a href="/console/jobs{{with .Other}}?{{query "account" .}}{{end}}">Jobs</a></p>{{end}}`))

// age is a duration as the page shows it: whole seconds, minutes, hours.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(max(d, 0).Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
}

// shown is the account a page shows: Viewer.Account, else the viewer's
// own.
func shown(v Viewer) string {
	if v.Account != "" {
		return v.Account
	}
	return v.AccountID
}

// figures reads the shown account's queued and running jobs (counted by
// the store over the account's jobs) and the queue's depth.
func (jp *jobsPage) figures(ctx context.Context, v Viewer) (*jobsData, error) {
	d := &jobsData{Account: shown(v), CSRF: v.CSRF}
	if d.Account != v.AccountID {
		d.Other = d.Account
	}
	for i, st := range []journal.Status{journal.StatusQueued, journal.StatusRunning} {
		_, n, err := jp.o.Journal.List(ctx, journal.Query{AccountID: d.Account, DeliveryMode: journal.DeliveryAsync,
			Statuses: []journal.Status{st}, Limit: 1, NoSeq: true})
		if err != nil {
			return nil, fmt.Errorf("jobs: %w", err)
		}
		d.Mine[i] = n
	}
	if jp.o.Stats != nil {
		s, err := jp.o.Stats(ctx)
		if err != nil {
			return nil, fmt.Errorf("job queue depth: %w", err)
		}
		d.Queue = &s
	}
	return d, nil
}

func (jp *jobsPage) render(ctx context.Context, v Viewer) (template.HTML, error) {
	d, err := jp.figures(ctx, v)
	if err != nil {
		return "", err
	}
	pg, err := journal.ListPage(ctx, jp.o.Journal, journal.Query{AccountID: d.Account, DeliveryMode: journal.DeliveryAsync,
		SortBy: journal.SortCreatedAt, Limit: jobsShown, NoTotal: true, NoSeq: true}, "")
	if err != nil {
		return "", fmt.Errorf("jobs: %w", err)
	}
	now := jp.o.Now()
	for _, r := range pg.Records {
		d.Rows = append(d.Rows, jobRow{ID: r.ID, Tool: r.ToolName, Status: string(r.Status), Error: r.ErrorCode, JobID: r.RuntimeJobID,
			Age: now.Sub(r.CreatedAt), Attempt: r.AttemptNo, Active: r.Lifecycle == journal.Opened})
	}
	d.More = pg.Next != ""
	return execute("page", d)
}

func (jp *jobsPage) overview(ctx context.Context, v Viewer) (template.HTML, error) {
	d, err := jp.figures(ctx, v)
	if err != nil {
		return "", err
	}
	return execute("overview", d)
}

func execute(name string, d *jobsData) (template.HTML, error) {
	var b bytes.Buffer
	if err := jobsTemplate.ExecuteTemplate(&b, name, d); err != nil {
		return "", fmt.Errorf("jobs page: %w", err)
	}
	return template.HTML(b.String()), nil //nolint:gosec // rendered by html/template
}

// cancel cancels one job of the shown account through
// DELETE /tool-executions/{id}/job as the viewer's key, with ?account=
// when that account is not the viewer's own: the route's own checks
// decide (another account's job is its 404, naming another account
// without the admin scope its 403).
func (jp *jobsPage) cancel(ctx context.Context, v Viewer, form url.Values) (string, string, int) {
	id := form.Get("id")
	if id == "" {
		return "", "name the job to cancel", http.StatusBadRequest
	}
	st, msg, err := v.API(ctx, http.MethodDelete, jobPath(id, v), nil, nil)
	switch {
	case err != nil:
		return "", "the job cannot be cancelled right now", http.StatusServiceUnavailable
	case msg != "":
		return "", msg, st
	case st == http.StatusAccepted:
		return "Job " + id + " is running: it was told to stop.", "", http.StatusOK
	}
	return "Job " + id + " cancelled.", "", http.StatusOK
}

// jobPath is the REST path that cancels job id of the shown account.
func jobPath(id string, v Viewer) string {
	path := "/tool-executions/" + url.PathEscape(id) + "/job"
	if a := shown(v); a != v.AccountID {
		path += "?" + url.Values{"account": {a}}.Encode()
	}
	return path
}
