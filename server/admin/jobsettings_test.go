package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
)

// fakeBuiltins answers as tools.Executor does for one deferrable builtin,
// "gate", and one inline_only, "read_result".
type fakeBuiltins struct{ set map[string]tools.Delivery }

func (f *fakeBuiltins) BuiltinSetting(_ context.Context, _, name string) (tools.BuiltinSetting, error) {
	if name != "gate" && name != "read_result" {
		return tools.BuiltinSetting{}, tools.ErrNoSuchBuiltin
	}
	return tools.BuiltinSetting{Name: name, DefaultDeliveryMode: "inline", DefaultDeliveryModeBasis: "tool_declared"}, nil
}

func (f *fakeBuiltins) SetBuiltinSetting(ctx context.Context, account, name string, d tools.Delivery) (tools.BuiltinSetting, error) {
	st, err := f.BuiltinSetting(ctx, account, name)
	if err != nil {
		return st, err
	}
	if _, err := tools.ParseDelivery(string(d)); err != nil {
		return st, tools.Errorf(tools.CodeInvalidArgs, "%v", err)
	}
	if d == tools.DeliveryAsync && name == "read_result" {
		return st, tools.Errorf(tools.CodeDeliveryUnsupported, "read_result runs inline only")
	}
	f.set[name] = d
	return st, nil
}

func TestBuiltinSettingsRoutes(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"read", "GET", "/tools/builtin/gate/settings", "", 200, ""},
		{"set async", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":"async_job"}`, 200, ""},
		{"clear", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":null}`, 200, ""},
		{"inline_only made async", "PATCH", "/tools/builtin/read_result/settings", `{"default_delivery_mode":"async_job"}`, 422, "delivery_unsupported"},
		{"invalid mode", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":"ASYNC"}`, 400, "validation_error"},
		{"empty mode", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":""}`, 400, "validation_error"},
		{"mode a number", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":1}`, 400, "validation_error"},
		{"no mode", "PATCH", "/tools/builtin/gate/settings", `{}`, 400, "validation_error"},
		{"unknown field", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":"inline","x":1}`, 400, "validation_error"},
		{"huge body", "PATCH", "/tools/builtin/gate/settings", `{"default_delivery_mode":"` + strings.Repeat("a", 70<<10) + `"}`, 400, "validation_error"},
		{"unknown tool", "GET", "/tools/builtin/nope/settings", "", 404, "not_found"},
		{"look-alike tool", "GET", "/tools/builtin/g%D0%B0te/settings", "", 404, "not_found"},
		{"huge tool name", "GET", "/tools/builtin/" + strings.Repeat("g", 8000) + "/settings", "", 404, "not_found"},
	}
	mux := http.NewServeMux()
	for p, h := range (&admin.ToolSettings{Builtins: &fakeBuiltins{set: map[string]tools.Delivery{}},
		Account: func(*http.Request) string { return "local" }}).Routes() {
		mux.Handle(p, h)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			_ = json.Unmarshal(w.Body.Bytes(), &body)
			if body.Error.Code != tc.code {
				t.Fatalf("code %q, want %q: %s", body.Error.Code, tc.code, w.Body)
			}
		})
	}
}

func TestJobLimitsRoutesRefuseBadInput(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"bad account", "GET", "/admin/accounts/Acme!/job-limits", "", 400},
		{"unicode account", "GET", "/admin/accounts/%E2%80%AEacme/job-limits", "", 400},
		{"negative", "PUT", "/admin/accounts/acme/job-limits", `{"max_jobs":-1}`, 400},
		{"too many", "PUT", "/admin/accounts/acme/job-limits", `{"max_running":1000001}`, 400},
		{"retention too long", "PUT", "/admin/accounts/acme/job-limits", `{"result_retention_s":99999999999}`, 400},
		{"unknown field", "PUT", "/admin/accounts/acme/job-limits", `{"max":1}`, 400},
		{"no store", "GET", "/admin/accounts/acme/job-limits", "", 501},
	}
	mux := http.NewServeMux()
	for p, h := range (&admin.JobLimits{}).Routes() {
		mux.Handle(p, h)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
		})
	}
}

func TestJobLimitsRoundTripOnTheStore(t *testing.T) {
	for name, db := range sqlStores(t) {
		t.Run(name, func(t *testing.T) {
			mux := http.NewServeMux()
			for p, h := range (&admin.JobLimits{Settings: db}).Routes() {
				mux.Handle(p, h)
			}
			for _, step := range []struct{ method, body, want string }{
				{"GET", "", `{"data":{"account":"acme","max_jobs":0,"max_running":0,"result_retention_s":0}}`},
				{"PUT", `{"max_jobs":5,"max_running":2,"result_retention_s":3600}`, `{"data":{"account":"acme","max_jobs":5,"max_running":2,"result_retention_s":3600}}`},
				{"GET", "", `{"data":{"account":"acme","max_jobs":5,"max_running":2,"result_retention_s":3600}}`},
				{"PUT", `{}`, `{"data":{"account":"acme","max_jobs":0,"max_running":0,"result_retention_s":0}}`},
				{"GET", "", `{"data":{"account":"acme","max_jobs":0,"max_running":0,"result_retention_s":0}}`},
			} {
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, httptest.NewRequest(step.method, "/admin/accounts/acme/job-limits", strings.NewReader(step.body)))
				if w.Code != 200 || strings.TrimSpace(w.Body.String()) != step.want {
					t.Fatalf("%s %s: %d %s, want %s", step.method, step.body, w.Code, w.Body, step.want)
				}
			}
		})
	}
}

func TestRunnerInstanceIsTheLatestAttempts(t *testing.T) {
	ev := func(state journal.State, kind, detail string) journal.Event {
		return journal.Event{State: state, Kind: kind, Detail: json.RawMessage(detail)}
	}
	cases := []struct {
		name string
		evs  []journal.Event
		want string
	}{
		{"none", nil, ""},
		{"inline call", []journal.Event{ev(journal.StateExecuting, "", `{"deadline_ms":5}`)}, ""},
		{"first attempt", []journal.Event{ev(journal.StateExecuting, "", `{"attempt":1,"runtime_job_id":"7","instance_id":"a"}`)}, "a"},
		{"rerun elsewhere", []journal.Event{ev(journal.StateExecuting, "", `{"attempt":1,"runtime_job_id":"7","instance_id":"a"}`),
			ev(journal.StateExecuting, journal.KindAttempt, `{"attempt":2,"runtime_job_id":"7","instance_id":"b","rerun":true}`)}, "b"},
		{"remote try without a job", []journal.Event{ev(journal.StateExecuting, "", `{"attempt":1,"runtime_job_id":"7","instance_id":"a"}`),
			ev(journal.StateExecuting, journal.KindAttempt, `{"attempt":1,"invocation_id":"x"}`)}, "a"},
		{"not JSON", []journal.Event{ev(journal.StateExecuting, "", `{"instance_id":`)}, ""},
		{"another state", []journal.Event{ev(journal.StateObserved, "", `{"runtime_job_id":"7","instance_id":"z"}`)}, ""},
		{"markup and bidi kept as data", []journal.Event{ev(journal.StateExecuting, "", `{"runtime_job_id":"7","instance_id":"<b>\u202ex</b>"}`)}, "<b>\u202ex</b>"},
		{"huge", []journal.Event{ev(journal.StateExecuting, "", `{"runtime_job_id":"7","instance_id":"`+strings.Repeat("i", 1<<16)+`"}`)}, strings.Repeat("i", 1<<16)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := admin.RunnerInstance(tc.evs); got != tc.want {
				t.Fatalf("runner %.40q, want %.40q", got, tc.want)
			}
		})
	}
}
