package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

// storeCanceller cancels a queued job by finishing its record in the
// store, with tools.Executor.CancelJob's account scoping and errors: it
// reads the job of (account, id) only.
type storeCanceller struct {
	st  journal.Store
	now time.Time
}

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
	rec.Status, rec.Lifecycle, rec.ErrorCode, rec.FinishedAt = journal.StatusError, journal.Finished, tools.CodeCancelled, c.now
	if err := c.st.Write(ctx, []journal.Write{{Record: rec}}); err != nil {
		return rec, err
	}
	return rec, nil
}

// TestJobAndExecutionAccountParameterNeedsAdmin: ?account= on
// DELETE /tool-executions/{id}/job and GET /tool-executions/{id} (and its
// events) lets a key with the admin scope act on another account's job,
// on every store; any other key naming another account gets the 403 the
// approvals routes give and changes nothing; hostile names are refused or
// find nothing.
func TestJobAndExecutionAccountParameterNeedsAdmin(t *testing.T) {
	stores := map[string]journal.Store{"memory": journal.NewMemStore()}
	for name, db := range sqlStores(t) {
		stores[name] = db
	}
	now := time.UnixMilli(1_790_000_000_000).UTC()
	ids := map[string]identity.Identity{
		"admin": {AccountID: "root", KeyID: "k_admin", Scopes: keys.AllScopes},
		"acme":  {AccountID: "acme", KeyID: "k_acme", Scopes: []string{keys.ScopeMCP, keys.ScopeTools}},
	}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			var ws []journal.Write
			for _, id := range []string{"job-globex", "job-acme"} {
				acct := strings.TrimPrefix(id, "job-")
				ws = append(ws, journal.Write{Insert: true, Record: journal.Record{ID: id, AccountID: acct, ToolName: "<b>" + acct + "</b>",
					Status: journal.StatusQueued, Lifecycle: journal.Opened, Commit: journal.CommitPending, State: journal.StateExecuting,
					DeliveryMode: journal.DeliveryAsync, RuntimeJobID: id + "-river", StartedAt: now, CreatedAt: now}})
			}
			if err := st.Write(context.Background(), ws); err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			for p, h := range (&admin.Jobs{Cancel: storeCanceller{st, now}}).Routes() {
				mux.Handle(p, h)
			}
			for p, h := range (&admin.Journal{Store: st}).Routes() {
				mux.Handle(p, h)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mux.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), ids[r.Header.Get("X-Who")])))
			}))
			t.Cleanup(srv.Close)
			q := func(account string) string { return "?" + url.Values{"account": {account}}.Encode() }
			cases := []whoCase{
				{"acme", "DELETE", "/tool-executions/job-globex/job" + q("globex"), 403, "insufficient_scope", ""},
				{"acme", "GET", "/tool-executions/job-globex" + q("globex"), 403, "insufficient_scope", ""},
				{"acme", "GET", "/tool-executions/job-globex/events" + q("globex"), 403, "insufficient_scope", ""},
				{"acme", "DELETE", "/tool-executions/job-globex/job", 404, "not_found", ""},
				{"acme", "DELETE", "/tool-executions/job-globex/job" + q("<script>alert(1)</script>"), 403, "insufficient_scope", ""},
				{"acme", "GET", "/tool-executions/job-acme" + q("acme"), 200, "", `"status":"queued"`},
				{"acme", "DELETE", "/tool-executions/job-acme/job?accounts=globex", 400, "validation_error", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q(strings.Repeat("g", 2000)), 400, "validation_error", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q("glob\x00ex"), 400, "validation_error", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q("globex\u202e"), 404, "not_found", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q("ｇｌｏｂｅｘ"), 404, "not_found", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q(""), 400, "validation_error", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job?account=globex&account=acme", 400, "validation_error", ""},
				{"admin", "DELETE", "/tool-executions/job-globex/job", 404, "not_found", ""},
				{"admin", "GET", "/tool-executions/job-globex" + q("globex"), 200, "", `"status":"queued"`},
				{"admin", "GET", "/tool-executions/job-globex" + q("globex"), 200, "", `"tool_name":"<b>globex</b>"`},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q("globex"), 200, "", `"error_code":"cancelled"`},
				{"admin", "DELETE", "/tool-executions/job-globex/job" + q("globex"), 409, "job_finished", ""},
				{"admin", "GET", "/tool-executions/job-acme" + q("acme"), 200, "", `"status":"queued"`},
				{"acme", "DELETE", "/tool-executions/job-acme/job" + q("acme"), 200, "", `"status":"error"`},
			}
			checkWhoCases(t, srv.URL, cases)
		})
	}
}
