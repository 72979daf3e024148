package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools"
)

// BuiltinSettings reads and sets an account's delivery setting of a
// builtin tool (tools.Executor).
type BuiltinSettings interface {
	BuiltinSetting(ctx context.Context, account, name string) (tools.BuiltinSetting, error)
	SetBuiltinSetting(ctx context.Context, account, name string, d tools.Delivery) (tools.BuiltinSetting, error)
}

// ToolSettings serves an account's settings of builtin tools:
// GET and PATCH /tools/builtin/{name}/settings.
type ToolSettings struct {
	Builtins BuiltinSettings
	// Account is as Journal's.
	Account func(*http.Request) string
}

// Routes returns the routes for server.Options.Routes.
func (s *ToolSettings) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /tools/builtin/{name}/settings":   http.HandlerFunc(s.get),
		"PATCH /tools/builtin/{name}/settings": http.HandlerFunc(s.patch),
	}
}

func (s *ToolSettings) get(w http.ResponseWriter, r *http.Request) {
	st, err := s.Builtins.BuiltinSetting(r.Context(), accountOf(r, s.Account), r.PathValue("name"))
	s.answer(w, st, err)
}

// builtinSettingsPatch is the body of PATCH /tools/builtin/{name}/settings:
// default_delivery_mode inline or async_job, or null to remove the
// account's own.
type builtinSettingsPatch struct {
	DefaultDeliveryMode json.RawMessage `json:"default_delivery_mode"`
}

func (s *ToolSettings) patch(w http.ResponseWriter, r *http.Request) {
	var in builtinSettingsPatch
	if err := decodeStrict(r, &in); err != nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", err.Error())
		return
	}
	var mode *string
	if len(in.DefaultDeliveryMode) == 0 {
		server.WriteError(w, http.StatusBadRequest, "validation_error", "default_delivery_mode is required: inline, async_job, or null to use the tool's own")
		return
	}
	if err := json.Unmarshal(in.DefaultDeliveryMode, &mode); err != nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", "default_delivery_mode must be inline, async_job or null")
		return
	}
	d := tools.DeliveryDefault
	if mode != nil {
		if *mode == "" {
			server.WriteError(w, http.StatusBadRequest, "validation_error", "default_delivery_mode must be inline, async_job or null")
			return
		}
		d = tools.Delivery(*mode)
	}
	st, err := s.Builtins.SetBuiltinSetting(r.Context(), accountOf(r, s.Account), r.PathValue("name"), d)
	s.answer(w, st, err)
}

func (s *ToolSettings) answer(w http.ResponseWriter, st tools.BuiltinSetting, err error) {
	var te *tools.Error
	switch {
	case errors.Is(err, tools.ErrNoSuchBuiltin):
		server.WriteError(w, http.StatusNotFound, "not_found", "no builtin tool of this name")
	case errors.Is(err, tools.ErrNoSettings):
		server.WriteError(w, http.StatusNotImplemented, "settings_unavailable", err.Error())
	case errors.As(err, &te) && te.Code == tools.CodeInvalidArgs:
		server.WriteError(w, http.StatusBadRequest, "validation_error", te.Message)
	case errors.As(err, &te):
		server.WriteError(w, http.StatusUnprocessableEntity, te.Code, te.Message)
	case err != nil:
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "the tool settings could not be read or written; see the server log")
	default:
		server.WriteJSON(w, http.StatusOK, struct {
			Data tools.BuiltinSetting `json:"data"`
		}{st})
	}
}

// JobLimits serves the accounts' limits of background jobs for holders
// of the admin scope: GET and PUT /admin/accounts/{account}/job-limits.
type JobLimits struct {
	Settings tools.AccountSettings
	// Now stamps a change (nil: time.Now).
	Now func() time.Time
}

// Routes returns the routes for server.Options.Routes. The caller mounts
// them behind server.Auth with the admin scope.
func (j *JobLimits) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /admin/accounts/{account}/job-limits": http.HandlerFunc(j.get),
		"PUT /admin/accounts/{account}/job-limits": http.HandlerFunc(j.put),
	}
}

// jobLimitsView is an account's job limits on the wire; 0 is the server's.
type jobLimitsView struct {
	Account          string `json:"account"`
	MaxJobs          int    `json:"max_jobs"`
	MaxRunning       int    `json:"max_running"`
	ResultRetentionS int64  `json:"result_retention_s"`
}

func (j *JobLimits) account(w http.ResponseWriter, r *http.Request) (string, bool) {
	a := r.PathValue("account")
	if !keys.ValidAccount(a) {
		server.WriteError(w, http.StatusBadRequest, "validation_error", "account must be 1 to 64 lower-case letters, digits, '_' or '-', a letter or digit first")
		return "", false
	}
	return a, true
}

// unavailable answers 501 when the server keeps no settings.
func (j *JobLimits) unavailable(w http.ResponseWriter) bool {
	if j.Settings == nil {
		server.WriteError(w, http.StatusNotImplemented, "settings_unavailable", tools.ErrNoSettings.Error())
		return true
	}
	return false
}

func (j *JobLimits) get(w http.ResponseWriter, r *http.Request) {
	a, ok := j.account(w, r)
	if !ok || j.unavailable(w) {
		return
	}
	l, err := j.Settings.JobLimits(r.Context(), a)
	j.answer(w, a, l, err)
}

func (j *JobLimits) put(w http.ResponseWriter, r *http.Request) {
	a, ok := j.account(w, r)
	if !ok {
		return
	}
	var in struct {
		MaxJobs          int   `json:"max_jobs"`
		MaxRunning       int   `json:"max_running"`
		ResultRetentionS int64 `json:"result_retention_s"`
	}
	if err := decodeStrict(r, &in); err != nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", err.Error())
		return
	}
	if in.ResultRetentionS < 0 || in.ResultRetentionS > int64(tools.MaxResultRetention/time.Second) {
		server.WriteError(w, http.StatusBadRequest, "validation_error",
			fmt.Sprintf("result_retention_s must be 0 (the journal's retention) to %d", int64(tools.MaxResultRetention/time.Second)))
		return
	}
	l := tools.JobLimits{MaxJobs: in.MaxJobs, MaxRunning: in.MaxRunning, ResultRetention: time.Duration(in.ResultRetentionS) * time.Second, UpdatedAt: nowOf(j.Now)}
	if err := l.Check(); err != nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", err.Error())
		return
	}
	if j.unavailable(w) {
		return
	}
	err := j.Settings.SetJobLimits(r.Context(), a, l)
	j.answer(w, a, l, err)
}

func (j *JobLimits) answer(w http.ResponseWriter, account string, l tools.JobLimits, err error) {
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "the job limits could not be read or written; see the server log")
		return
	}
	server.WriteJSON(w, http.StatusOK, struct {
		Data jobLimitsView `json:"data"`
	}{jobLimitsView{Account: account, MaxJobs: l.MaxJobs, MaxRunning: l.MaxRunning, ResultRetentionS: int64(l.ResultRetention / time.Second)}})
}
