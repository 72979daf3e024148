package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools"
)

// JobCanceller cancels an account's deferred call (tools.Executor).
type JobCanceller interface {
	CancelJob(ctx context.Context, accountID, executionID string) (journal.Record, error)
}

// Jobs serves the cancellation of deferred calls:
// DELETE /tool-executions/{id}/job[?account=].
type Jobs struct {
	Cancel JobCanceller
	// Account is as Journal's.
	Account func(*http.Request) string
}

// Routes returns the routes for server.Options.Routes.
func (j *Jobs) Routes() map[string]http.Handler {
	return map[string]http.Handler{"DELETE /tool-executions/{id}/job": http.HandlerFunc(j.cancel)}
}

// cancel ends a queued job at once (200, the record finished) or asks a
// running one to stop wherever it runs (202, the record still running:
// it ends as a cancelled call does).
// An admin key may name another account with ?account= (namedAccount).
func (j *Jobs) cancel(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, "account")
	var account string
	if err == nil {
		account, err = namedAccount(r, v, j.Account)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	rec, err := j.Cancel.CancelJob(r.Context(), account, r.PathValue("id"))
	switch {
	case errors.Is(err, tools.ErrJobNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no deferred execution of this id")
		return
	case errors.Is(err, tools.ErrJobFinished):
		server.WriteError(w, http.StatusConflict, "job_finished", "the job has already ended with status "+string(rec.Status))
		return
	case err != nil:
		writeErr(w, err)
		return
	}
	status := http.StatusOK
	if rec.Lifecycle != journal.Finished {
		status = http.StatusAccepted
	}
	server.WriteJSON(w, status, struct {
		Data ExecutionView `json:"data"`
	}{Execution(rec)})
}

// RunnerInstance is the instance id of the process that ran the latest
// attempt of a job, from its events (an attempt's start notes it); ""
// when none did.
func RunnerInstance(evs []journal.Event) string {
	var runner string
	for _, e := range evs {
		if len(e.Detail) == 0 || (e.State != journal.StateExecuting && e.Kind != journal.KindAttempt) {
			continue
		}
		var d struct {
			JobID      string `json:"runtime_job_id"`
			InstanceID string `json:"instance_id"`
		}
		if json.Unmarshal(e.Detail, &d) == nil && d.JobID != "" && d.InstanceID != "" {
			runner = d.InstanceID
		}
	}
	return runner
}
