package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/server/console"
	"github.com/toolhost/toolhost/tools"
)

// storeCanceller cancels a queued job by finishing its record, with
// tools.Executor.CancelJob's account scoping and errors.
type storeCanceller struct{ st journal.Store }

func (c storeCanceller) CancelJob(ctx context.Context, account, id string) (journal.Record, error) {
	rec, err := c.st.Get(ctx, account, id)
	switch {
	case errors.Is(err, journal.ErrNotFound) || (err == nil && rec.DeliveryMode != string(journal.DeliveryAsync)):
		return journal.Record{}, tools.ErrJobNotFound
	case err != nil:
		return rec, err
	case rec.Lifecycle == journal.Finished:
		return rec, tools.ErrJobFinished
	}
	rec.Status, rec.Lifecycle, rec.ErrorCode, rec.FinishedAt = journal.StatusError, journal.Finished, tools.CodeCancelled, jobsNow
	return rec, c.st.Write(ctx, []journal.Write{{Record: rec}})
}

// TestJobsPageFollowsTheAccountSelector: on every store, an admin's
// Account selector shows another account's jobs on the jobs page and on
// the overview, and Cancel acts on that account through
// DELETE /tool-executions/{id}/job?account=; an account key naming
// another account is refused by the page and by a forged post, and
// nothing changes; hostile account names show nothing and cancel nothing.
func TestJobsPageFollowsTheAccountSelector(t *testing.T) {
	stores := map[string]journal.Store{"memory": journal.NewMemStore()}
	for name, db := range storetest.Open(t, "console_test") {
		stores[name] = db
	}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			seedJobs(t, st)
			f := newFixtureWith(t, console.Options{Pages: []console.Page{console.JobsPage(console.JobsOptions{Journal: st})}}, false,
				(&admin.Jobs{Cancel: storeCanceller{st}}).Routes())
			as := map[string]*browser{"admin": f.signIn(t, "admin"), "acme": f.signIn(t, "acme")}
			cases := []struct {
				name, who, path string
				form            url.Values // nil: a GET
				status          int
				want, unwanted  []string
			}{
				{"admin selects globex", "admin", "/console/jobs?account=globex", nil, 200,
					[]string{`id="job-job-globex"`, "secret_tool", `id="jobs-queued">1<`, `Queued (account globex)`,
						`<input type="hidden" name="account" value="globex">`, `href="/console/executions/job-globex?account=globex"`,
						`href="/console/jobs?account=globex"`, `href="/console/executions?account=globex"`},
					[]string{`id="job-job-q"`}},
				{"admin overview of globex", "admin", "/console/overview?account=globex", nil, 200,
					[]string{`id="job-figures"`, `Queued (account globex)`, `id="jobs-queued">1<`, `href="/console/jobs?account=globex"`}, nil},
				{"admin's own", "admin", "/console/jobs", nil, 200, []string{"No background jobs yet."}, []string{"secret_tool", `type="hidden" name="account"`}},
				{"admin, markup account", "admin", "/console/jobs?account=" + url.QueryEscape(`<script>alert(1)</script>`), nil, 200,
					[]string{"No background jobs yet.", "&lt;script&gt;"}, []string{"<script>", "secret_tool"}},
				{"admin, NUL account", "admin", "/console/jobs?account=glob%00ex", nil, 400, []string{"validation_error"}, []string{"secret_tool"}},
				{"admin, bidi account", "admin", "/console/jobs?account=" + url.QueryEscape("globex\u202e"), nil, 200,
					[]string{"No background jobs yet."}, []string{"secret_tool"}},
				{"acme names globex", "acme", "/console/jobs?account=globex", nil, 403, nil, []string{"secret_tool", "job-globex"}},
				{"acme overview of globex", "acme", "/console/overview?account=globex", nil, 403, nil, []string{"secret_tool", `id="job-figures"`}},
				{"acme's own", "acme", "/console/jobs", nil, 200, []string{`id="job-job-q"`}, []string{"secret_tool", `type="hidden" name="account"`}},
				{"acme forged post naming globex", "acme", "/console/jobs", url.Values{"id": {"job-globex"}, "account": {"globex"}}, 403, nil, nil},
				{"acme post of globex's id", "acme", "/console/jobs", url.Values{"id": {"job-globex"}}, 404, []string{"not_found"}, nil},
				{"admin, huge account", "admin", "/console/jobs", url.Values{"id": {"job-globex"}, "account": {strings.Repeat("g", 5000)}}, 400, []string{"validation_error"}, nil},
				{"admin, NUL in account", "admin", "/console/jobs", url.Values{"id": {"job-globex"}, "account": {"glob\x00ex"}}, 400, []string{"validation_error"}, nil},
				{"admin, acme's job in globex", "admin", "/console/jobs", url.Values{"id": {"job-q"}, "account": {"globex"}}, 404, []string{"not_found"}, nil},
				{"admin cancels globex's job", "admin", "/console/jobs", url.Values{"id": {"job-globex"}, "account": {"globex"}}, 200,
					[]string{"Job job-globex cancelled.", `Queued (account globex)`, `id="jobs-queued">0<`}, nil},
				{"admin cancels it again", "admin", "/console/jobs", url.Values{"id": {"job-globex"}, "account": {"globex"}}, 409, []string{"job_finished"}, nil},
			}
			for _, tc := range cases {
				var status int
				var page string
				if tc.form == nil {
					var resp *http.Response
					resp, page = as[tc.who].get(tc.path)
					status = resp.StatusCode
				} else {
					status, page = as[tc.who].postPage(tc.path, tc.form)
				}
				if status != tc.status {
					t.Errorf("%s: %d, want %d", tc.name, status, tc.status)
				}
				for _, w := range tc.want {
					if !strings.Contains(page, w) {
						t.Errorf("%s: page lacks %s", tc.name, w)
					}
				}
				for _, u := range tc.unwanted {
					if strings.Contains(page, u) {
						t.Errorf("%s: page shows %s", tc.name, u)
					}
				}
				if tc.name == "acme forged post naming globex" || tc.name == "acme post of globex's id" {
					if rec, err := st.Get(context.Background(), "globex", "job-globex"); err != nil || rec.Lifecycle != journal.Opened {
						t.Errorf("%s: globex's job is %s (%v), want still open", tc.name, rec.Lifecycle, err)
					}
				}
			}
			if rec, err := st.Get(context.Background(), "globex", "job-globex"); err != nil || rec.ErrorCode != tools.CodeCancelled {
				t.Errorf("globex's job after the admin's Cancel: %s %s (%v)", rec.Lifecycle, rec.ErrorCode, err)
			}
			if rec, err := st.Get(context.Background(), "acme", "job-q"); err != nil || rec.Lifecycle != journal.Opened {
				t.Errorf("acme's job: %s (%v), want still open", rec.Lifecycle, err)
			}
		})
	}
}

// TestEveryPageChecksTheNamedAccount: every page with the Account
// selector refuses, before any store sees it, a name no store could hold
// (400 for an admin: NUL, other control characters, invalid UTF-8, over
// 1024 bytes), and any other account named by a key without the admin
// scope (403).
func TestEveryPageChecksTheNamedAccount(t *testing.T) {
	for name, st := range storetest.Open(t, "console_test") {
		t.Run(name, func(t *testing.T) {
			f := newFixtureWith(t, console.Options{Journal: st, Pages: []console.Page{console.JobsPage(console.JobsOptions{Journal: st})}}, false,
				(&admin.Jobs{Cancel: storeCanceller{st}}).Routes())
			as := map[string]*browser{"admin": f.signIn(t, "admin"), "acme": f.signIn(t, "acme")}
			for _, path := range []string{"/console/overview", "/console/executions", "/console/executions/some-id", "/console/keys", "/console/grants", "/console/jobs"} {
				for _, tc := range []struct {
					who, account string
					status       int
				}{
					{"admin", "glob\x00ex", 400},
					{"admin", "glob\x1bex", 400},
					{"admin", "glob\xffex", 400},
					{"admin", strings.Repeat("g", 1025), 400},
					{"acme", "globex", 403},
					{"acme", "glob\x00ex", 403},
				} {
					resp, page := as[tc.who].get(path + "?account=" + url.QueryEscape(tc.account))
					if resp.StatusCode != tc.status {
						t.Errorf("%s as %s naming %q: %d, want %d", path, tc.who, tc.account, resp.StatusCode, tc.status)
					}
					if tc.status == 400 && !strings.Contains(page, "validation_error") {
						t.Errorf("%s as %s naming %q: the page does not say why", path, tc.who, tc.account)
					}
				}
			}
		})
	}
}
