package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
)

// executionFilters are the /tool-executions filters the page's form
// offers, read by admin.ExecutionQuery exactly as the REST route reads them.
var executionFilters = []string{"session_id", "floor_id", "run_id", "page_id", "caller_slot", "face", "tool_name", "status",
	"lifecycle_state", "commit_outcome", "provider_type", "sort_by", "sort_order", "limit"}

type executionsData struct {
	Rows    []admin.ExecutionView
	Filters map[string]string
	// First, Prev and Next are the links to the first page (when not on
	// it), the page before (newer, in the default order) and the page
	// after: built here from url.Values, so template.URL keeps their
	// query string whole (html/template would escape its = and &).
	First, Prev, Next template.URL
	Asc               bool // oldest first: the links say Previous and Next
}

// executions lists the account's journal with the REST route's filters,
// by keyset (journal.ListPage): a page costs its own rows however deep,
// and no total is counted. Unlike GET /tool-executions it needs no
// session, floor or run: the console browses the account's whole journal.
func (c *Console) executions(w http.ResponseWriter, r *http.Request, rq *request) {
	account, err := rq.account(r)
	if err != nil {
		c.refuseAccount(w, rq, err)
		return
	}
	v := url.Values{}
	d := &executionsData{Filters: map[string]string{}}
	for _, name := range executionFilters {
		// An empty field of the form is no filter; a value is checked.
		if s := r.URL.Query().Get(name); s != "" {
			v.Set(name, s)
			d.Filters[name] = s
		}
	}
	page := func(cursor string) template.URL {
		p := url.Values{}
		for k, s := range d.Filters {
			p.Set(k, s)
		}
		if account != rq.AccountID {
			p.Set("account", account)
		}
		if cursor != "" {
			p.Set("cursor", cursor)
		}
		return template.URL("/console/executions?" + p.Encode()) //nolint:gosec // built from url.Values, a path of our own
	}
	vw := view{Title: "Executions", Nav: "executions", Account: account, Data: d}
	q, err := admin.ExecutionQuery(v, account, c.o.Slots)
	if err != nil {
		vw.Error = err.Error()
		c.render(w, http.StatusBadRequest, "executions", rq, vw)
		return
	}
	q.NoTotal, d.Asc = true, q.Asc
	cursor := r.URL.Query().Get("cursor")
	if cursor != "" {
		d.First = page("")
	}
	pg, err := journal.ListPage(r.Context(), c.o.Journal, q, cursor)
	switch {
	case errors.Is(err, journal.ErrInvalidCursor):
		vw.Error = "this page link was not made for these filters and this account, or was changed: start from the first page (" + err.Error() + ")"
		c.render(w, http.StatusBadRequest, "executions", rq, vw)
		return
	case err != nil:
		c.o.Logger.Error("console: executions", "err", err)
		vw.Error = "the journal cannot be read right now"
		c.render(w, http.StatusServiceUnavailable, "executions", rq, vw)
		return
	}
	for _, rec := range pg.Records {
		d.Rows = append(d.Rows, admin.Execution(rec))
	}
	if pg.Prev != "" {
		d.Prev = page(pg.Prev)
	}
	if pg.Next != "" {
		d.Next = page(pg.Next)
	}
	c.render(w, http.StatusOK, "executions", rq, vw)
}

type executionData struct {
	X        admin.ExecutionView
	Events   []admin.EventView
	Attempts int
	Raw      string
	Args     string
	Result   string
	Text     string
	Trace    string
}

// execution is one record's life: its fields, its events in order
// (transitions and attempts), raw and normalized arguments, the result as
// the model received it.
func (c *Console) execution(w http.ResponseWriter, r *http.Request, rq *request) {
	account, err := rq.account(r)
	if err != nil {
		c.refuseAccount(w, rq, err)
		return
	}
	id := r.PathValue("id")
	rec, err := c.o.Journal.Get(r.Context(), account, id)
	if errors.Is(err, journal.ErrNotFound) {
		c.render(w, http.StatusNotFound, "error", rq, view{Title: "Not found", Data: "not_found", Error: "no execution " + id + " in account " + account})
		return
	}
	var evs []journal.Event
	if err == nil {
		evs, err = c.o.Journal.Events(r.Context(), account, id)
	}
	if err != nil {
		c.o.Logger.Error("console: execution", "err", err)
		c.render(w, http.StatusServiceUnavailable, "error", rq, view{Title: "Unavailable", Data: "journal_unavailable", Error: "the journal cannot be read right now"})
		return
	}
	x := admin.Execution(rec)
	x.Attempts = admin.Attempts(evs)
	d := &executionData{X: x, Attempts: len(x.Attempts), Raw: string(rec.ArgsRaw), Args: prettyJSON(rec.Args),
		Result: prettyJSON(rec.Result), Text: rec.ResultText, Trace: c.traceLink(rec.TraceID)}
	for _, e := range evs {
		d.Events = append(d.Events, admin.Event(e))
	}
	c.render(w, http.StatusOK, "execution", rq, view{Title: "Execution " + id, Nav: "executions", Account: account, Data: d})
}
