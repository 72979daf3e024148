// Package admin serves the tools REST API of the seed (tools-api): the
// execution journal (/tool-executions, /floors/{id}/tool-executions, the
// events of one execution) and its legacy projection (/tools/call-records);
// sessions, their tool permissions and runtime catalog (/sessions…);
// /tools/builtin, an account's delivery setting of a builtin
// (/tools/builtin/{name}/settings) and the tool definitions CRUD
// (/tools/definitions…); and key management and accounts' job limits
// (/admin/…). Every route is scoped to the caller's account:
// another account's object is a 404, never a 403. A key with the admin
// scope may name another account with ?account= on the approvals routes,
// one execution and its events, and job cancellation; any other key
// naming an account not its own is 403 insufficient_scope.
package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools/session"
)

// MaxLimit caps limit on every list.
const MaxLimit = 500

// Journal serves the journal routes from a store.
type Journal struct {
	Store journal.Store
	// Slots are the caller slots the caller_slot filter may name (nil:
	// session.DefaultSlots).
	Slots []string
	// Account returns the account whose records a request may read. Nil
	// means the caller's identity.Identity (accountOf).
	Account func(*http.Request) string
}

// Routes returns the routes for server.Options.Routes.
func (j *Journal) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /tool-executions":             http.HandlerFunc(j.list),
		"GET /floors/{id}/tool-executions": http.HandlerFunc(j.floor),
		"GET /tool-executions/{id}":        http.HandlerFunc(j.one),
		"GET /tool-executions/{id}/events": http.HandlerFunc(j.events),
		"GET /tools/call-records":          http.HandlerFunc(j.callRecords),
	}
}

func (j *Journal) account(r *http.Request) string {
	return accountOf(r, j.Account)
}

var (
	executionParams = []string{"session_id", "floor_id", "run_id", "page_id", "caller_slot", "face", "tool_name", "status",
		"lifecycle_state", "commit_outcome", "provider_type", "sort_by", "sort_order", "limit", "offset", "cursor"}
	statuses       = []string{"running", "queued", "success", "error", "denied", "timeout", "uncertain", "blocked"}
	legacyStatuses = []string{"success", "error", "denied", "queued", "running"}
	lifecycles     = []string{"opened", "finished"}
	commits        = []string{"pending", "committed", "discarded", "replay_blocked", "uncertain"}
	faces          = []string{"mcp", "hosted", "cli", "console"}
	sortOrders     = []string{"asc", "desc"}
)

// ExecutionQuery turns /tool-executions parameters into a query; slots
// are the caller slots caller_slot may name (nil: session.DefaultSlots).
// It is exported for `toolhost journal`, which takes the same filters.
func ExecutionQuery(v url.Values, account string, slots []string) (journal.Query, error) {
	q := journal.Query{AccountID: account}
	if err := texts(v, filter{"session_id", &q.SessionID}, filter{"floor_id", &q.FloorID},
		filter{"run_id", &q.RunID}, filter{"tool_name", &q.ToolName}); err != nil {
		return q, err
	}
	if err := pageID(v, &q); err != nil {
		return q, err
	}
	var err error
	if q.CallerSlot, err = oneOf(v, "caller_slot", slotsOr(slots), ""); err != nil {
		return q, err
	}
	var s string
	if s, err = oneOf(v, "status", statuses, ""); err != nil {
		return q, err
	}
	if s != "" {
		q.Statuses = []journal.Status{journal.Status(s)}
	}
	if s, err = oneOf(v, "lifecycle_state", lifecycles, ""); err != nil {
		return q, err
	}
	q.Lifecycle = journal.Lifecycle(s)
	if s, err = oneOf(v, "commit_outcome", commits, ""); err != nil {
		return q, err
	}
	q.Commit = journal.Commit(s)
	if q.ProviderType, err = oneOf(v, "provider_type", journal.ProviderTypes, ""); err != nil {
		return q, err
	}
	if q.Face, err = oneOf(v, "face", faces, ""); err != nil {
		return q, err
	}
	if q.SortBy, err = oneOf(v, "sort_by", []string{journal.SortCreatedAt, journal.SortStartedAt, journal.SortFinishedAt}, journal.SortStartedAt); err != nil {
		return q, err
	}
	order, err := oneOf(v, "sort_order", sortOrders, "desc")
	if err != nil {
		return q, err
	}
	q.Asc = order == "asc"
	// No view of an execution shows seq: do not compute it.
	q.NoSeq = true
	if v.Has("cursor") && v.Has("offset") {
		return q, validationError{msg: "give cursor or offset, not both", field: "cursor"}
	}
	return q, paging(v, &q)
}

// slotsOr is slots, else the default ones.
func slotsOr(slots []string) []string {
	if len(slots) == 0 {
		return session.DefaultSlots
	}
	return slots
}

func (j *Journal) list(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, executionParams...)
	if err == nil && !v.Has("session_id") && !v.Has("floor_id") && !v.Has("run_id") {
		err = invalid("at least one of session_id, floor_id, run_id is required")
	}
	j.serveList(w, r, v, err)
}

func (j *Journal) floor(w http.ResponseWriter, r *http.Request) {
	allowed := slices.DeleteFunc(slices.Clone(executionParams), func(s string) bool { return s == "session_id" || s == "floor_id" })
	v, err := params(r, allowed...)
	if err == nil {
		v.Set("floor_id", r.PathValue("id"))
	}
	j.serveList(w, r, v, err)
}

func (j *Journal) serveList(w http.ResponseWriter, r *http.Request, v url.Values, err error) {
	var q journal.Query
	if err == nil {
		q, err = ExecutionQuery(v, j.account(r), j.Slots)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	var pg journal.Page
	if v.Has("cursor") {
		pg, err = journal.ListPage(r.Context(), j.Store, q, v.Get("cursor"))
	} else {
		pg.Records, pg.Total, err = j.Store.List(r.Context(), q)
		if n := len(pg.Records); err == nil && n > 0 && q.Offset+n < pg.Total {
			pg.Next = journal.CursorAfter(q, pg.Records[n-1])
		}
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	data := make([]ExecutionView, len(pg.Records))
	for i, rec := range pg.Records {
		data[i] = Execution(rec)
	}
	m := meta(q, pg.Total, len(pg.Records))
	if pg.Next != "" {
		m.HasMore, m.NextCursor = true, &pg.Next
	} else if v.Has("cursor") {
		m.HasMore = false
	}
	server.WriteJSON(w, http.StatusOK, page[ExecutionView]{Data: data, Meta: m})
}

// page is a list response of the journal routes. Its fields, and those of
// the types below, are declared in the order encoding/json writes a map's
// keys (sorted): the bytes these routes wrote when they were maps.
type page[T any] struct {
	Data []T      `json:"data"`
	Meta pageMeta `json:"meta"`
}

type pageMeta struct {
	HasMore bool `json:"has_more"`
	Limit   int  `json:"limit"`
	// NextCursor (the journal routes) reads the next page by keyset:
	// absent on the last page.
	NextCursor *string `json:"next_cursor,omitempty"`
	Offset     int     `json:"offset"`
	SortBy     string  `json:"sort_by"`
	SortOrder  string  `json:"sort_order"`
	Total      int     `json:"total"`
}

type eventsPage struct {
	Data []EventView `json:"data"`
	Meta eventsMeta  `json:"meta"`
}

type eventsMeta struct {
	ExecutionID string `json:"execution_id"`
	Total       int    `json:"total"`
}

func meta(q journal.Query, total, n int) pageMeta {
	order := "desc"
	if q.Asc {
		order = "asc"
	}
	return pageMeta{Total: total, Limit: q.Limit, Offset: q.Offset,
		HasMore: q.Offset+n < total, SortBy: q.SortBy, SortOrder: order}
}

// named is the account one execution's routes read: the caller's, or
// the one an admin key names with ?account= (namedAccount).
func (j *Journal) named(r *http.Request) (string, error) {
	v, err := params(r, "account")
	if err != nil {
		return "", err
	}
	return namedAccount(r, v, j.Account)
}

func (j *Journal) one(w http.ResponseWriter, r *http.Request) {
	account, err := j.named(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	rec, err := j.Store.Get(r.Context(), account, r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	evs, err := j.Store.Events(r.Context(), account, rec.ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	view := Execution(rec)
	view.Attempts = Attempts(evs)
	view.RunnerInstanceID = str(RunnerInstance(evs))
	server.WriteJSON(w, http.StatusOK, struct {
		Data ExecutionView `json:"data"`
	}{view})
}

// Attempts are the details of the attempt events among evs (a remote
// call's tries, journal.KindAttempt), in order; nil when there are none.
func Attempts(evs []journal.Event) []json.RawMessage {
	var out []json.RawMessage
	for _, e := range evs {
		if e.Kind == journal.KindAttempt && len(e.Detail) > 0 {
			out = append(out, e.Detail)
		}
	}
	return out
}

func (j *Journal) events(w http.ResponseWriter, r *http.Request) {
	account, err := j.named(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	id := r.PathValue("id")
	evs, err := j.Store.Events(r.Context(), account, id)
	if err != nil {
		writeErr(w, err)
		return
	}
	data := make([]EventView, len(evs))
	for i, e := range evs {
		data[i] = Event(e)
	}
	server.WriteJSON(w, http.StatusOK, eventsPage{Data: data, Meta: eventsMeta{ExecutionID: id, Total: len(evs)}})
}

func (j *Journal) callRecords(w http.ResponseWriter, r *http.Request) {
	q, err := j.callRecordsQuery(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	recs, total, err := j.Store.List(r.Context(), q)
	if err != nil {
		writeErr(w, err)
		return
	}
	data := make([]CallRecordView, len(recs))
	for i, rec := range recs {
		data[i] = CallRecord(rec)
	}
	server.WriteJSON(w, http.StatusOK, page[CallRecordView]{Data: data, Meta: meta(q, total, len(recs))})
}

// callRecordsQuery reads the filters of /tools/call-records.
func (j *Journal) callRecordsQuery(r *http.Request) (journal.Query, error) {
	q := journal.Query{AccountID: j.account(r)}
	v, err := params(r, "page_id", "floor_id", "caller_slot", "status", "sort_by", "sort_order", "limit", "offset")
	if err != nil {
		return q, err
	}
	if !v.Has("page_id") && !v.Has("floor_id") {
		return q, invalid("at least one of page_id, floor_id is required")
	}
	if err := texts(v, filter{"floor_id", &q.FloorID}); err != nil {
		return q, err
	}
	if err := pageID(v, &q); err != nil {
		return q, err
	}
	if q.CallerSlot, err = oneOf(v, "caller_slot", slotsOr(j.Slots), ""); err != nil {
		return q, err
	}
	s, err := oneOf(v, "status", legacyStatuses, "")
	if err != nil {
		return q, err
	}
	if s != "" {
		q.Statuses = journal.LegacyStatuses(journal.Status(s))
	}
	if q.SortBy, err = oneOf(v, "sort_by", []string{journal.SortSeq, journal.SortCreatedAt}, journal.SortSeq); err != nil {
		return q, err
	}
	order, err := oneOf(v, "sort_order", sortOrders, "desc")
	if err != nil {
		return q, err
	}
	q.Asc = order == "asc"
	return q, paging(v, &q)
}

func writeErr(w http.ResponseWriter, err error) {
	var ve validationError
	switch {
	case errors.As(err, &ve) && ve.field != "":
		obj := wire.ErrorObject{Code: "validation_error", Field: ve.field, Message: ve.msg}
		if ve.allowed != nil {
			// A slice of strings always encodes.
			_ = obj.SetDetails(struct {
				Allowed []string `json:"allowed"`
			}{ve.allowed})
		}
		server.WriteErrorObject(w, http.StatusBadRequest, obj)
	case errors.As(err, &ve):
		server.WriteError(w, http.StatusBadRequest, "validation_error", ve.msg)
	case errors.Is(err, errOtherAccount):
		server.WriteError(w, http.StatusForbidden, "insufficient_scope", err.Error())
	case errors.Is(err, journal.ErrInvalidCursor):
		server.WriteErrorObject(w, http.StatusBadRequest, wire.ErrorObject{Code: "invalid_cursor", Field: "cursor", Message: err.Error()})
	case errors.Is(err, journal.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no such tool execution")
	case errors.Is(err, journal.ErrUnavailable):
		server.WriteError(w, http.StatusServiceUnavailable, "journal_unavailable", "the journal's store does not answer; calls are kept in the spool and shown once it does")
	default:
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "the journal could not be read; see the server log")
	}
}

// str is a nullable string: null when empty.
func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// millis is a nullable time in Unix milliseconds: null when zero.
func millis(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ms := t.UnixMilli()
	return &ms
}

// args renders the arguments: normalized when the call got that far, else
// the raw bytes as JSON when they parse, else as a string.
func args(r journal.Record) any {
	if len(r.Args) > 0 {
		return r.Args
	}
	if json.Valid(r.ArgsRaw) {
		return json.RawMessage(r.ArgsRaw)
	}
	return string(r.ArgsRaw)
}

// successResult is the result of a call that succeeded.
type successResult struct {
	Data any `json:"data"`
}

// result renders the seed's result shape: {"data": ...} on success, the
// stored {"error": {...}} on failure, null while open and once the
// account's result retention of jobs dropped it. The data of a
// success is its structured result; a tool that answered with text only
// (a remote MCP tool without structuredContent) has that text as the
// caller saw it, fenced when untrusted, instead of null.
func result(r journal.Record) any {
	switch {
	case r.Lifecycle != journal.Finished, !r.ResultExpiredAt.IsZero():
		return nil
	case r.Status == journal.StatusSuccess:
		var data any = r.Result
		if len(r.Result) == 0 {
			data = nil
			if r.ResultText != "" {
				data = r.ResultText
			}
		}
		return successResult{Data: data}
	case len(r.Result) > 0:
		return r.Result
	}
	return nil
}

// ExecutionView is one record in the /tool-executions shape: the seed's
// fields and ours. The fields are declared in the order encoding/json
// writes a map's keys (sorted), the shape this route has always written.
type ExecutionView struct {
	AccountID  string  `json:"account_id"`
	Args       any     `json:"args"`
	ArgsDigest *string `json:"args_digest"`
	ArgsRaw    string  `json:"args_raw"`
	AttemptNo  int     `json:"attempt_no"`
	// Attempts are the tries of a remote call (GET /tool-executions/{id}
	// only; absent elsewhere and for calls that report none): number,
	// invocation id, backoff, jitter, deadline left and outcome of each.
	Attempts       []json.RawMessage `json:"attempts,omitempty"`
	CallID         *string           `json:"call_id"`
	CallerSlot     *string           `json:"caller_slot"`
	CommitOutcome  journal.Commit    `json:"commit_outcome"`
	CreatedAt      *int64            `json:"created_at"`
	DeliveryMode   string            `json:"delivery_mode"`
	DurationMS     int64             `json:"duration_ms"`
	ErrorCode      *string           `json:"error_code"`
	ErrorMessage   *string           `json:"error_message"`
	Face           *string           `json:"face"`
	FinishedAt     *int64            `json:"finished_at"`
	FloorID        *string           `json:"floor_id"`
	ID             string            `json:"id"`
	IdempotencyKey *string           `json:"idempotency_key"`
	KeyID          *string           `json:"key_id"`
	LifecycleState journal.Lifecycle `json:"lifecycle_state"`
	PageID         *string           `json:"page_id"`
	ProviderID     string            `json:"provider_id"`
	ProviderType   string            `json:"provider_type"`
	ReplayParentID *string           `json:"replay_parent_execution_id"`
	Result         any               `json:"result"`
	// ResultExpiredAt is when the account's result retention of jobs
	// dropped the result (result is null since); absent while it is kept.
	ResultExpiredAt *int64 `json:"result_expired_at,omitempty"`
	// ResultVisibility is deferred_receipt for a deferred call (its caller
	// got a receipt; the result is here), else immediate.
	ResultVisibility string  `json:"result_visibility"`
	Round            int     `json:"round"`
	RunID            *string `json:"run_id"`
	// RunnerInstanceID names the process that ran a job's latest attempt
	// (GET /tool-executions/{id} only; absent for an inline call and a
	// job not started).
	RunnerInstanceID *string        `json:"runner_instance_id,omitempty"`
	RuntimeJobID     *string        `json:"runtime_job_id"`
	SessionID        *string        `json:"session_id"`
	SideEffectLevel  *string        `json:"side_effect_level"`
	StartedAt        *int64         `json:"started_at"`
	State            journal.State  `json:"state"`
	Status           journal.Status `json:"status"`
	Summary          string         `json:"summary"`
	ToolName         string         `json:"tool_name"`
	ToolVersion      string         `json:"tool_version"`
	TraceID          *string        `json:"trace_id"`
	Truncated        bool           `json:"truncated"`
	Units            float64        `json:"units"`
}

// Execution is one record in the /tool-executions shape.
func Execution(r journal.Record) ExecutionView {
	return ExecutionView{
		ID: r.ID, RunID: str(r.RunID), FloorID: str(r.FloorID), PageID: str(r.PageID),
		SessionID: str(r.SessionID), CallerSlot: str(r.CallerSlot), ProviderID: r.ProviderID,
		ProviderType: r.ProviderType, ToolName: r.ToolName, ToolVersion: r.ToolVersion,
		Args: args(r), Result: result(r), Status: r.Status, LifecycleState: r.Lifecycle,
		CommitOutcome: r.Commit, SideEffectLevel: str(r.SideEffectLevel),
		ErrorMessage: str(r.ErrorMessage), DurationMS: r.Duration.Milliseconds(),
		StartedAt: millis(r.StartedAt), FinishedAt: millis(r.FinishedAt),
		DeliveryMode: r.DeliveryMode, AttemptNo: r.AttemptNo, RuntimeJobID: str(r.RuntimeJobID),
		ReplayParentID: str(r.ReplayParentID), CreatedAt: millis(r.CreatedAt), ResultVisibility: visibility(r),
		ResultExpiredAt: millis(r.ResultExpiredAt),

		Face: str(r.Face), AccountID: r.AccountID, KeyID: str(r.KeyID), Round: r.Round, CallID: str(r.CallID),
		ArgsRaw: string(r.ArgsRaw), ArgsDigest: str(r.ArgsDigest), IdempotencyKey: str(r.IdempotencyKey),
		TraceID: str(r.TraceID), State: r.State, ErrorCode: str(r.ErrorCode), Summary: r.Summary,
		Units: r.Units, Truncated: r.Truncated,
	}
}

// visibility is a record's result_visibility.
func visibility(r journal.Record) string {
	if r.DeliveryMode == journal.DeliveryAsync {
		return "deferred_receipt"
	}
	return "immediate"
}

// CallRecordView is one record in the legacy /tools/call-records shape:
// five statuses, none of the journal-only fields (keys sorted, as above).
type CallRecordView struct {
	Args       any            `json:"args"`
	CallerSlot *string        `json:"caller_slot"`
	CreatedAt  *int64         `json:"created_at"`
	DurationMS int64          `json:"duration_ms"`
	ID         string         `json:"id"`
	PageID     *string        `json:"page_id"`
	Result     any            `json:"result"`
	Seq        int            `json:"seq"`
	Status     journal.Status `json:"status"`
	ToolName   string         `json:"tool_name"`
}

// CallRecord is one record in the legacy /tools/call-records shape.
func CallRecord(r journal.Record) CallRecordView {
	return CallRecordView{
		ID: r.ID, PageID: str(r.PageID), Seq: r.Seq, CallerSlot: str(r.CallerSlot),
		ToolName: r.ToolName, Args: args(r), Result: result(r), Status: r.Status.Legacy(),
		DurationMS: r.Duration.Milliseconds(), CreatedAt: millis(r.CreatedAt),
	}
}

// EventView is one state event in the /tool-executions/{id}/events shape.
type EventView struct {
	At     int64           `json:"at"`
	Detail json.RawMessage `json:"detail"`
	// Kind is absent for a transition into State, "attempt" for one try
	// of a remote call made in State (its detail says which and how it
	// ended).
	Kind  string        `json:"kind,omitempty"`
	Seq   int           `json:"seq"`
	State journal.State `json:"state"`
}

// Event is one state event in the /tool-executions/{id}/events shape; an
// event with no detail has detail null.
func Event(e journal.Event) EventView {
	var detail json.RawMessage
	if len(e.Detail) > 0 {
		detail = e.Detail
	}
	return EventView{Seq: e.Seq, State: e.State, Kind: e.Kind, At: e.At.UnixMilli(), Detail: detail}
}
