package console_test

import (
	"context"
	"html/template"
	"net/http"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/console"
)

// TestExtraPagesJoinTheNavigationBehindSignIn: a page added through
// Options.Pages (the job queue's, later) is listed in the navigation, is
// given the signed-in viewer and needs a session like every other.
func TestExtraPagesJoinTheNavigationBehindSignIn(t *testing.T) {
	var seen console.Viewer
	f := newFixture(t, console.Options{Pages: []console.Page{{Path: "/jobs", Title: "Jobs",
		Render: func(_ context.Context, v console.Viewer) (template.HTML, error) {
			seen = v
			return template.HTML(`<p id="jobs">3 queued</p>`), nil
		}}}})
	if resp, _ := f.browser(t).get("/console/jobs"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("without a session: %d, want the sign-in redirect", resp.StatusCode)
	}
	b := f.signIn(t, "acme")
	resp, page := b.get("/console/jobs")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<p id="jobs">3 queued</p>`) {
		t.Fatalf("jobs page: %d\n%s", resp.StatusCode, page)
	}
	if seen.AccountID != "acme" || seen.Admin {
		t.Errorf("the page was given %+v", seen)
	}
	if _, overview := b.get("/console/overview"); !strings.Contains(overview, `href="/console/jobs"`) {
		t.Error("the navigation does not list the page")
	}
}
