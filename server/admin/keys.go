package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
)

// Keys serves key management and usage for holders of the admin scope:
// POST/GET /admin/keys, DELETE/PATCH /admin/keys/{id}, GET /admin/usage.
type Keys struct {
	Service *keys.Service
	// Now is the clock of the month /admin/usage reports by default; nil
	// means the Service's, the clock calls are billed on when the
	// executor gives none.
	Now func() time.Time
}

// Routes returns the routes for server.Options.Routes. The caller mounts
// them behind server.Auth with the admin scope.
func (k *Keys) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /admin/keys":        http.HandlerFunc(k.create),
		"GET /admin/keys":         http.HandlerFunc(k.list),
		"DELETE /admin/keys/{id}": http.HandlerFunc(k.revoke),
		"PATCH /admin/keys/{id}":  http.HandlerFunc(k.patch),
		"GET /admin/usage":        http.HandlerFunc(k.usage),
		"GET /admin/keys/{id}":    http.HandlerFunc(k.one),
	}
}

// decodeStrict reads a JSON body of at most 64 KiB, refusing unknown fields
// and trailing data.
func decodeStrict(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(b) > 64<<10 {
		return errors.New("body larger than 64 KiB")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if dec.More() {
		return errors.New("body: trailing data after the JSON object")
	}
	return nil
}

func (k *Keys) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Account string      `json:"account"`
		Name    string      `json:"name"`
		Scopes  []string    `json:"scopes"`
		Limits  keys.Limits `json:"limits"`
	}
	if err := decodeStrict(r, &in); err != nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", err.Error())
		return
	}
	key, secret, err := k.Service.CreateKey(r.Context(), in.Account, in.Name, in.Scopes, in.Limits)
	if err != nil {
		k.fail(w, err)
		return
	}
	server.WriteJSON(w, http.StatusCreated, createdKey{
		Key:    key,
		Secret: secret,
		Notice: "store the secret now: it is shown only once",
	})
}

func (k *Keys) list(w http.ResponseWriter, r *http.Request) {
	ks, err := k.Service.Store().ListKeys(r.Context(), r.URL.Query().Get("account"))
	if err != nil {
		k.fail(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, keyList{Data: ks})
}

func (k *Keys) one(w http.ResponseWriter, r *http.Request) {
	key, err := k.Service.Store().KeyByID(r.Context(), r.PathValue("id"))
	if err != nil {
		k.fail(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, key)
}

func (k *Keys) revoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := k.Service.Revoke(r.Context(), id); err != nil {
		k.fail(w, err)
		return
	}
	k.one(w, r)
}

func (k *Keys) patch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in struct {
		CallsPerMinute  *int     `json:"calls_per_minute"`
		ConcurrentCalls *int     `json:"concurrent_calls"`
		MonthlyUnitsCap *float64 `json:"monthly_units_cap"`
		// Hosted replaces the key's hosted budgets whole.
		Hosted *keys.HostedBudgets `json:"hosted"`
	}
	if err := decodeStrict(r, &in); err != nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", err.Error())
		return
	}
	if in.CallsPerMinute == nil && in.ConcurrentCalls == nil && in.MonthlyUnitsCap == nil && in.Hosted == nil {
		server.WriteError(w, http.StatusBadRequest, "validation_error", "nothing to update: send calls_per_minute, concurrent_calls, monthly_units_cap or hosted")
		return
	}
	cur, err := k.Service.Store().KeyByID(r.Context(), id)
	if err != nil {
		k.fail(w, err)
		return
	}
	l := cur.Limits
	if in.CallsPerMinute != nil {
		l.CallsPerMinute = *in.CallsPerMinute
	}
	if in.ConcurrentCalls != nil {
		l.ConcurrentCalls = *in.ConcurrentCalls
	}
	if in.MonthlyUnitsCap != nil {
		l.MonthlyUnitsCap = *in.MonthlyUnitsCap
	}
	if in.Hosted != nil {
		l.Hosted = *in.Hosted
	}
	if err := k.Service.SetLimits(r.Context(), id, l); err != nil {
		k.fail(w, err)
		return
	}
	k.one(w, r)
}

func (k *Keys) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return k.Service.Now()
}

var monthPattern = regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])$`)

func (k *Keys) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	month := q.Get("month")
	if month == "" {
		month = keys.Month(k.now())
	}
	if !monthPattern.MatchString(month) {
		server.WriteError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("month %q: want YYYY-MM", month))
		return
	}
	rows, err := k.Service.Store().Usage(r.Context(), q.Get("account"), month)
	if err != nil {
		k.fail(w, err)
		return
	}
	var units, cost float64
	var calls int64
	for _, row := range rows {
		units += row.Units
		cost += row.Cost
		calls += row.Calls
	}
	server.WriteJSON(w, http.StatusOK, usageReport{
		Month: month, Account: q.Get("account"), Data: rows,
		Totals: usageTotals{Calls: calls, Units: units, Cost: cost},
	})
}

func (k *Keys) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, keys.ErrInvalidInput):
		server.WriteError(w, http.StatusBadRequest, "validation_error", err.Error())
	case errors.Is(err, keys.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no such API key")
	default:
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "the key store failed; see the server log")
	}
}

// The key routes' response shapes. Their fields are declared in the order
// encoding/json writes a map's keys (sorted): the bytes these routes wrote
// when they were maps.
type (
	// createdKey answers a POST: the secret appears here and never again.
	createdKey struct {
		Key    *keys.Key `json:"key"`
		Notice string    `json:"notice"`
		Secret string    `json:"secret"`
	}
	keyList struct {
		Data []keys.Key `json:"data"`
	}
	usageReport struct {
		Account string          `json:"account"`
		Data    []keys.UsageRow `json:"data"`
		Month   string          `json:"month"`
		Totals  usageTotals     `json:"totals"`
	}
	usageTotals struct {
		Calls int64   `json:"calls"`
		Cost  float64 `json:"cost"`
		Units float64 `json:"units"`
	}
)
