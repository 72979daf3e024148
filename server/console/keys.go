package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/internal/keys"
)

// keyRow is one key with this month's use against its cap.
type keyRow struct {
	keys.Key
	Units, Cost float64
	Calls       int64
	CapPct      float64 // of monthly_units_cap; 0 without a cap
}

type keysData struct {
	Keys      []keyRow
	Usage     []keys.UsageRow
	Month     string
	Own       *keys.Key
	Created   string // a new key's secret, shown once
	CreatedID string
	AllScopes []string
}

// keys shows the account's keys and this month's usage. Key management is
// the admin scope's (GET /admin/keys?account=, GET /admin/usage), so any
// other key sees only itself.
func (c *Console) keys(w http.ResponseWriter, r *http.Request, rq *request) {
	c.showKeys(w, r, rq, http.StatusOK, view{})
}

func (c *Console) showKeys(w http.ResponseWriter, r *http.Request, rq *request, status int, vw view) {
	account, err := rq.account(r)
	if err != nil {
		c.refuseAccount(w, rq, err)
		return
	}
	d, _ := vw.Data.(*keysData)
	if d == nil {
		d = &keysData{}
	}
	d.Own, d.AllScopes = rq.key, keys.AllScopes
	vw.Title, vw.Nav, vw.Account, vw.Data = "Keys and usage", "keys", account, d
	if !rq.Admin {
		c.render(w, status, "keys", rq, vw)
		return
	}
	var list struct {
		Data []keys.Key `json:"data"`
	}
	var usage struct {
		Month string          `json:"month"`
		Data  []keys.UsageRow `json:"data"`
	}
	a := url.QueryEscape(account)
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodGet, "/admin/keys?account="+a, nil, &list)
	if err == nil && msg == "" {
		st, msg, err = c.apiCall(r.Context(), rq, http.MethodGet, "/admin/usage?account="+a, nil, &usage)
	}
	if err != nil {
		c.o.Logger.Error("console: keys", "err", err)
		st, msg = http.StatusServiceUnavailable, "keys cannot be read right now"
	}
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "keys", rq, vw)
		return
	}
	d.Month, d.Usage = usage.Month, usage.Data
	for _, k := range list.Data {
		row := keyRow{Key: k}
		for _, u := range usage.Data {
			if u.KeyID == k.ID {
				row.Units += u.Units
				row.Cost += u.Cost
				row.Calls += u.Calls
			}
		}
		if k.Limits.MonthlyUnitsCap > 0 {
			row.CapPct = row.Units / k.Limits.MonthlyUnitsCap
		}
		d.Keys = append(d.Keys, row)
	}
	c.render(w, status, "keys", rq, vw)
}

// createKey creates a key through POST /admin/keys and shows its secret
// once, on the answer to this post alone.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, rq *request) {
	f := r.PostForm
	limits := keys.Limits{}
	var bad []string
	num := func(name string, dst *int) {
		if s := strings.TrimSpace(f.Get(name)); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				bad = append(bad, name+" must be a whole number ≥ 0")
			}
			*dst = n
		}
	}
	num("calls_per_minute", &limits.CallsPerMinute)
	num("concurrent_calls", &limits.ConcurrentCalls)
	if s := strings.TrimSpace(f.Get("monthly_units_cap")); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || n < 0 {
			bad = append(bad, "monthly_units_cap must be a number ≥ 0")
		}
		limits.MonthlyUnitsCap = n
	}
	if len(bad) > 0 {
		c.showKeys(w, r, rq, http.StatusBadRequest, view{Error: strings.Join(bad, "; ")})
		return
	}
	body := map[string]any{"account": strings.TrimSpace(f.Get("account")), "name": strings.TrimSpace(f.Get("name")),
		"scopes": f["scopes"], "limits": limits}
	var out struct {
		Key    keys.Key `json:"key"`
		Secret string   `json:"secret"`
	}
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodPost, "/admin/keys", body, &out)
	if err != nil {
		c.o.Logger.Error("console: create key", "err", err)
		st, msg = http.StatusServiceUnavailable, "the key cannot be created right now"
	}
	if msg != "" {
		c.showKeys(w, r, rq, st, view{Error: msg})
		return
	}
	c.showKeys(w, r, rq, http.StatusCreated, view{Notice: "Key " + out.Key.ID + " created: copy its secret now, it is shown only once.",
		Data: &keysData{Created: out.Secret, CreatedID: out.Key.ID}})
}

// revokeKey revokes a key through DELETE /admin/keys/{id}.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, rq *request) {
	id := r.PathValue("id")
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodDelete, "/admin/keys/"+url.PathEscape(id), nil, nil)
	if err != nil {
		c.o.Logger.Error("console: revoke key", "err", err)
		st, msg = http.StatusServiceUnavailable, "the key cannot be revoked right now"
	}
	if msg != "" {
		c.showKeys(w, r, rq, st, view{Error: msg})
		return
	}
	c.showKeys(w, r, rq, http.StatusOK, view{Notice: "Key " + id + " revoked."})
}

// extraPage serves one of Options.Pages, for the account the selector
// names (an admin's) or the viewer's own.
func (c *Console) extraPage(p Page) func(http.ResponseWriter, *http.Request, *request) {
	return func(w http.ResponseWriter, r *http.Request, rq *request) {
		account, ok := c.extraAccount(w, r, rq, p)
		if !ok {
			return
		}
		c.showExtra(w, r, rq, p, account, http.StatusOK, "", "")
	}
}

// extraPost takes a form of one of Options.Pages and shows the page again
// with the outcome. A form naming an account not the viewer's is refused
// unless the key holds the admin scope, before the Page sees it.
func (c *Console) extraPost(p Page) func(http.ResponseWriter, *http.Request, *request) {
	return func(w http.ResponseWriter, r *http.Request, rq *request) {
		account, ok := c.extraAccount(w, r, rq, p)
		if !ok {
			return
		}
		notice, msg, status := p.Post(r.Context(), c.pageViewer(rq, account), r.PostForm)
		if status == 0 {
			status = http.StatusOK
		}
		c.showExtra(w, r, rq, p, account, status, notice, msg)
	}
}

// extraAccount is the account an extra page shows (request.account), or
// false once the request was refused (refuseAccount).
func (c *Console) extraAccount(w http.ResponseWriter, r *http.Request, rq *request, _ Page) (string, bool) {
	account, err := rq.account(r)
	if err != nil {
		c.refuseAccount(w, rq, err)
		return "", false
	}
	return account, true
}

func (c *Console) showExtra(w http.ResponseWriter, r *http.Request, rq *request, p Page, account string, status int, notice, msg string) {
	body, err := p.Render(r.Context(), c.pageViewer(rq, account))
	if err != nil {
		c.o.Logger.Error("console: page", "path", p.Path, "err", err)
		c.render(w, http.StatusServiceUnavailable, "extra", rq, view{Title: p.Title, Nav: p.Path, Account: account, Error: "this page cannot be shown right now"})
		return
	}
	c.render(w, status, "extra", rq, view{Title: p.Title, Nav: p.Path, Account: account, Data: body, Notice: notice, Error: msg})
}

// pageViewer is the viewer handed to a Page: showing account (checked by
// request.account), with the session's CSRF token and the REST API as the
// session's key.
func (c *Console) pageViewer(rq *request, account string) Viewer {
	v := rq.Viewer
	v.Account = account
	v.CSRF = rq.csrf
	v.API = func(ctx context.Context, method, path string, body, out any) (int, string, error) {
		return c.apiCall(ctx, rq, method, path, body, out)
	}
	return v
}
