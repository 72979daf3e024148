package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/console"
)

var jobsNow = time.UnixMilli(1_790_000_000_000).UTC()

// jobsStore holds acme's three jobs (one queued, one running, one ended,
// with a hostile tool name) and a job of globex.
func jobsStore(t *testing.T) journal.Store {
	t.Helper()
	return seedJobs(t, journal.NewMemStore())
}

// seedJobs writes jobsStore's records into s.
func seedJobs(t *testing.T, s journal.Store) journal.Store {
	t.Helper()
	var ws []journal.Write
	for i, j := range []struct {
		id, account, tool string
		status            journal.Status
	}{
		{"job-q", "acme", "run_code", journal.StatusQueued},
		{"job-r", "acme", `<img src=x onerror=alert(1)>`, journal.StatusRunning},
		{"job-done", "acme", "sleep", journal.StatusSuccess},
		{"job-globex", "globex", "secret_tool", journal.StatusQueued},
	} {
		at := jobsNow.Add(-time.Duration(90*(i+1)) * time.Second)
		r := journal.Record{ID: j.id, AccountID: j.account, ToolName: j.tool, Status: j.status, Lifecycle: journal.Opened,
			Commit: journal.CommitPending, State: journal.StateExecuting, DeliveryMode: journal.DeliveryAsync, AttemptNo: i + 1,
			RuntimeJobID: j.id + "-river", StartedAt: at, CreatedAt: at}
		if j.status == journal.StatusSuccess {
			r.Lifecycle, r.FinishedAt = journal.Finished, at.Add(time.Second)
		}
		ws = append(ws, journal.Write{Insert: true, Record: r})
	}
	inline := journal.Record{ID: "inline", AccountID: "acme", ToolName: "get_time", Status: journal.StatusSuccess, Lifecycle: journal.Finished,
		DeliveryMode: "inline", StartedAt: jobsNow, CreatedAt: jobsNow}
	ws = append(ws, journal.Write{Insert: true, Record: inline})
	if err := s.Write(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJobsPageListsTheAccountsJobsWithCancel(t *testing.T) {
	stats := func(context.Context) (console.QueueStats, error) {
		return console.QueueStats{Queued: 2, Running: 1, OldestQueued: 95 * time.Second}, nil
	}
	p := console.JobsPage(console.JobsOptions{Journal: jobsStore(t), Stats: stats, Now: func() time.Time { return jobsNow }})
	body, err := p.Render(context.Background(), console.Viewer{AccountID: "acme", CSRF: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	for _, want := range []string{`id="job-job-q"`, `id="job-job-r"`, `id="job-job-done"`, `&lt;img src=x onerror=alert(1)&gt;`,
		`id="jobs-queued">1<`, `id="jobs-running">1<`, `id="queue-depth">2 queued, 1 running<`, `id="queue-oldest">1 min<`,
		`<a href="/console/executions/job-q">1 min</a>`, `name="csrf" value="tok"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, unwanted := range []string{"job-globex", "secret_tool", `id="job-inline"`, "<img"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("page shows %s", unwanted)
		}
	}
	if n := strings.Count(page, ">Cancel</button>"); n != 2 {
		t.Errorf("%d Cancel buttons, want 2 (the queued and the running job)", n)
	}
	frag, err := p.Overview(context.Background(), console.Viewer{AccountID: "acme"})
	if err != nil || !strings.Contains(string(frag), `id="queue-depth"`) {
		t.Errorf("overview fragment: %v\n%s", err, frag)
	}
}

// TestJobsPageCancelsThroughTheRESTRoute: the Cancel button calls
// DELETE /tool-executions/{id}/job as the viewer, and shows the route's
// answer, refusals included.
func TestJobsPageCancelsThroughTheRESTRoute(t *testing.T) {
	p := console.JobsPage(console.JobsOptions{Journal: jobsStore(t)})
	cases := []struct {
		name, id   string
		account    string // Viewer.Account: "" is the viewer's own
		status     int
		msg        string
		err        error
		wantNotice string
		wantErr    string
		wantStatus int
		wantPath   string
	}{
		{"queued", "job-q", "", 200, "", nil, "Job job-q cancelled.", "", 200, "/tool-executions/job-q/job"},
		{"running", "job-r", "", 202, "", nil, "told to stop", "", 200, "/tool-executions/job-r/job"},
		{"another account's", "job-globex", "", 404, "not_found: no deferred execution of this id", nil, "", "not_found", 404, "/tool-executions/job-globex/job"},
		{"path tricks", "../../admin/keys", "", 404, "not_found: x", nil, "", "not_found", 404, "/tool-executions/..%2F..%2Fadmin%2Fkeys/job"},
		{"store down", "job-q", "", 0, "", errors.New("down"), "", "right now", 503, "/tool-executions/job-q/job"},
		{"own account named", "job-q", "acme", 200, "", nil, "cancelled", "", 200, "/tool-executions/job-q/job"},
		{"selected account", "job-globex", "globex", 200, "", nil, "Job job-globex cancelled.", "", 200, "/tool-executions/job-globex/job?account=globex"},
		{"selected account refused", "job-globex", "globex", 403, "insufficient_scope: x", nil, "", "insufficient_scope", 403, "/tool-executions/job-globex/job?account=globex"},
		{"markup account", "job-globex", "<b>&x=1", 404, "not_found: x", nil, "", "not_found", 404, "/tool-executions/job-globex/job?account=%3Cb%3E%26x%3D1"},
		{"no id", "", "", 0, "", nil, "", "name the job", 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var called string
			v := console.Viewer{AccountID: "acme", Account: tc.account, API: func(_ context.Context, method, path string, _, _ any) (int, string, error) {
				called = method + " " + path
				return tc.status, tc.msg, tc.err
			}}
			notice, msg, st := p.Post(context.Background(), v, url.Values{"id": {tc.id}})
			if !strings.Contains(notice, tc.wantNotice) || !strings.Contains(msg, tc.wantErr) || st != tc.wantStatus {
				t.Errorf("notice %q error %q status %d", notice, msg, st)
			}
			if tc.wantPath != "" && called != http.MethodDelete+" "+tc.wantPath {
				t.Errorf("called %q, want DELETE %s", called, tc.wantPath)
			}
		})
	}
}

// TestJobsPagePostNeedsTheFormToken: the page's form posts pass the
// console's session, cross-origin and CSRF checks like every other form.
func TestJobsPagePostNeedsTheFormToken(t *testing.T) {
	f := newFixture(t, console.Options{Pages: []console.Page{console.JobsPage(console.JobsOptions{Journal: jobsStore(t)})}})
	b := f.signIn(t, "acme")
	resp, page := b.get("/console/jobs")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="job-job-q"`) {
		t.Fatalf("jobs page: %d", resp.StatusCode)
	}
	if r := b.post("/console/jobs", url.Values{"id": {"job-q"}}, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("post without the token: %d", r.StatusCode)
	}
	if r := b.post("/console/jobs", url.Values{"id": {"job-q"}, "csrf": {csrfOf(t, page)}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site post: %d", r.StatusCode)
	}
	// The fixture mounts no job route: the REST answer (404) is shown.
	if r := b.post("/console/jobs", url.Values{"id": {"job-q"}, "csrf": {csrfOf(t, page)}}, nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("post with the token: %d, want the route's 404", r.StatusCode)
	}
	if _, ov := b.get("/console/overview"); !strings.Contains(ov, `id="job-figures"`) {
		t.Error("the overview lacks the job figures")
	}
}
