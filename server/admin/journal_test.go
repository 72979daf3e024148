package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

func seeded(t *testing.T) *httptest.Server {
	t.Helper()
	s := journal.NewMemStore()
	at := time.UnixMilli(1_790_000_000_000)
	var ws []journal.Write
	for i, st := range []journal.Status{journal.StatusSuccess, journal.StatusTimeout, journal.StatusUncertain, journal.StatusBlocked, journal.StatusDenied, journal.StatusRunning} {
		r := journal.Record{ID: string(rune('a' + i)), AccountID: "local", SessionID: "s", FloorID: "f", ToolName: "get_time",
			Face: "mcp", ProviderType: "builtin", Status: st, Lifecycle: journal.Finished, Commit: journal.CommitDiscarded,
			ArgsRaw: []byte(`{}`), StartedAt: at.Add(time.Duration(i) * time.Second), CreatedAt: at.Add(time.Duration(i) * time.Second),
			Result: json.RawMessage(`{"t":1}`), FinishedAt: at.Add(time.Duration(i)*time.Second + time.Millisecond), Duration: time.Millisecond}
		if st == journal.StatusRunning {
			r.Lifecycle, r.Commit, r.FinishedAt, r.Result = journal.Opened, journal.CommitPending, time.Time{}, nil
		}
		ws = append(ws, journal.Write{Insert: true, Record: r, Events: []journal.Event{{Seq: 0, State: journal.StateProposed, At: at}}})
	}
	other := journal.Record{ID: "z", AccountID: "other", SessionID: "s", FloorID: "f", Status: journal.StatusSuccess, StartedAt: at, CreatedAt: at}
	ws = append(ws, journal.Write{Insert: true, Record: other})
	if err := s.Write(t.Context(), ws); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for p, h := range (&admin.Journal{Store: s}).Routes() {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type body struct {
	Data  json.RawMessage `json:"data"`
	Meta  map[string]any  `json:"meta"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func get(t *testing.T, u string) (int, body) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b body
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestJournalRoutesValidate(t *testing.T) {
	srv := seeded(t)
	bad := []string{
		"/tool-executions",
		"/tool-executions?tool_name=get_time",
		"/tool-executions?session_id=s&status=done",
		"/tool-executions?session_id=s&lifecycle_state=closed",
		"/tool-executions?session_id=s&commit_outcome=maybe",
		"/tool-executions?session_id=s&provider_type=remote",
		"/tool-executions?session_id=s&face=narrator",
		"/tool-executions?session_id=s&sort_by=seq",
		"/tool-executions?session_id=s&sort_order=up",
		"/tool-executions?session_id=s&limit=0",
		"/tool-executions?session_id=s&limit=501",
		"/tool-executions?session_id=s&offset=-1",
		"/tool-executions?session_id=s&sesion_id=x",
		"/tool-executions?session_id=s&session_id=t",
		"/floors/f/tool-executions?floor_id=g",
		"/tools/call-records",
		"/tools/call-records?caller_slot=mcp",
		"/tools/call-records?floor_id=f&status=timeout",
		"/tools/call-records?floor_id=f&sort_by=started_at",
		// A pair that does not parse must not be dropped (it would widen
		// the filter to every tool).
		"/tool-executions?session_id=s&tool_name=run_code;",
		"/tool-executions?session_id=s;tool_name=run_code",
		"/tool-executions?session_id=s&tool_name=%zz",
	}
	for _, u := range bad {
		code, b := get(t, srv.URL+u)
		if code != http.StatusBadRequest || b.Error.Code != "validation_error" || b.Error.Message == "" {
			t.Errorf("%s: %d %+v, want 400 validation_error", u, code, b.Error)
		}
	}
	for _, u := range []string{"/tool-executions/nope/events", "/tool-executions/z/events", "/tool-executions/z"} {
		if code, b := get(t, srv.URL+u); code != http.StatusNotFound || b.Error.Code != "not_found" {
			t.Errorf("%s: %d %+v, want 404 not_found (z belongs to another account)", u, code, b.Error)
		}
	}
}

func TestJournalRoutesShapes(t *testing.T) {
	srv := seeded(t)
	code, b := get(t, srv.URL+"/tool-executions?session_id=s&limit=2&offset=1&sort_by=created_at&sort_order=asc")
	if code != http.StatusOK {
		t.Fatal(code, b.Error)
	}
	var recs []map[string]any
	json.Unmarshal(b.Data, &recs)
	if len(recs) != 2 || recs[0]["id"] != "b" || recs[1]["id"] != "c" {
		t.Errorf("page: %v", recs)
	}
	wantMeta := map[string]any{"total": 6.0, "limit": 2.0, "offset": 1.0, "has_more": true, "sort_by": "created_at", "sort_order": "asc"}
	for k, v := range wantMeta {
		if b.Meta[k] != v {
			t.Errorf("meta %s = %v, want %v", k, b.Meta[k], v)
		}
	}
	for _, f := range []string{"id", "run_id", "floor_id", "page_id", "caller_slot", "provider_id", "provider_type", "tool_name",
		"args", "result", "status", "lifecycle_state", "commit_outcome", "side_effect_level", "error_message", "duration_ms",
		"started_at", "finished_at", "delivery_mode", "attempt_no", "runtime_job_id", "replay_parent_execution_id", "created_at",
		"account_id", "key_id", "round", "call_id", "args_digest", "idempotency_key", "trace_id"} {
		if _, ok := recs[0][f]; !ok {
			t.Errorf("record lacks %s", f)
		}
	}
	if recs[0]["page_id"] != nil || recs[0]["started_at"] != 1_790_000_001_000.0 {
		t.Errorf("page_id %v started_at %v", recs[0]["page_id"], recs[0]["started_at"])
	}

	// Legacy: five statuses; timeout and uncertain are errors, blocked is
	// denied; a status filter matches what it projects from.
	code, b = get(t, srv.URL+"/tools/call-records?floor_id=f&sort_order=asc")
	if code != http.StatusOK {
		t.Fatal(code)
	}
	recs = nil
	json.Unmarshal(b.Data, &recs)
	want := []string{"success", "error", "error", "denied", "denied", "running"}
	for i, r := range recs {
		if r["status"] != want[i] || r["seq"] != float64(i) {
			t.Errorf("legacy %d: status %v seq %v, want %s %d", i, r["status"], r["seq"], want[i], i)
		}
		if len(r) != 10 {
			t.Errorf("legacy record has %d fields, want the 10 of the seed: %v", len(r), r)
		}
	}
	code, b = get(t, srv.URL+"/tools/call-records?floor_id=f&status=denied")
	recs = nil
	json.Unmarshal(b.Data, &recs)
	if code != http.StatusOK || len(recs) != 2 || b.Meta["sort_by"] != "seq" || b.Meta["sort_order"] != "desc" {
		t.Errorf("legacy denied: %d %v %v", code, recs, b.Meta)
	}
	code, b = get(t, srv.URL+"/tools/call-records?page_id=p1")
	if code != http.StatusOK || string(b.Data) != "[]" {
		t.Errorf("legacy by page: %d %s", code, b.Data)
	}

	code, b = get(t, srv.URL+"/floors/f/tool-executions?status=uncertain")
	recs = nil
	json.Unmarshal(b.Data, &recs)
	if code != http.StatusOK || len(recs) != 1 || recs[0]["id"] != "c" {
		t.Errorf("floor: %d %v", code, recs)
	}
	code, b = get(t, srv.URL+"/tool-executions/a/events")
	var evs []map[string]any
	json.Unmarshal(b.Data, &evs)
	if code != http.StatusOK || len(evs) != 1 || evs[0]["state"] != "proposed" || evs[0]["seq"] != 0.0 {
		t.Errorf("events: %d %v", code, evs)
	}
}

// A success with no structured result (a remote MCP tool that answered
// text only) shows the text the caller saw as its data instead of null;
// a structured result stays the data; a success with neither is null.
func TestJournalResultOfTextOnlySuccess(t *testing.T) {
	fenced := tools.Fence("Echo: hi\n</untrusted-data>")
	for _, c := range []struct {
		result json.RawMessage
		text   string
		want   string
	}{
		{nil, fenced, `{"data":` + string(must(json.Marshal(fenced))) + `}`},
		{json.RawMessage(`{"sum":3}`), "3", `{"data":{"sum":3}}`},
		{nil, "", `{"data":null}`},
	} {
		r := journal.Record{ID: "x", AccountID: "local", ToolName: "demo__echo", ProviderType: "mcp", Status: journal.StatusSuccess,
			Lifecycle: journal.Finished, Result: c.result, ResultText: c.text}
		got, err := json.Marshal(admin.Execution(r).Result)
		if err != nil || string(got) != c.want {
			t.Errorf("result %s / text %q: %s (%v), want %s", c.result, c.text, got, err, c.want)
		}
		if legacy, _ := json.Marshal(admin.CallRecord(r).Result); string(legacy) != c.want {
			t.Errorf("legacy result: %s, want %s", legacy, c.want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
