package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// grant is one OAuth grant in the GET /admin/grants shape.
type grant struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	KeyID      string     `json:"key_id"`
	ClientID   string     `json:"client_id"`
	ClientName string     `json:"client_name"`
	Scopes     []string   `json:"scopes"`
	Resource   string     `json:"resource"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// grants lists an account's OAuth grants through GET /admin/grants
// (admin scope: any other key gets that route's 403, shown as such).
func (c *Console) grants(w http.ResponseWriter, r *http.Request, rq *request) {
	c.showGrants(w, r, rq, http.StatusOK, view{})
}

func (c *Console) showGrants(w http.ResponseWriter, r *http.Request, rq *request, status int, vw view) {
	account, err := rq.account(r)
	if err != nil {
		c.refuseAccount(w, rq, err)
		return
	}
	vw.Title, vw.Nav, vw.Account = "OAuth grants", "grants", account
	var list struct {
		Data []grant `json:"data"`
	}
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodGet, "/admin/grants?account="+url.QueryEscape(account), nil, &list)
	switch {
	case err != nil:
		c.o.Logger.Error("console: grants", "err", err)
		st, msg = http.StatusServiceUnavailable, "grants cannot be read right now"
	case st == http.StatusNotFound:
		msg = "the embedded OAuth server is off here (--dev, or OAuth turned off): there are no grants"
	}
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "grants", rq, vw)
		return
	}
	vw.Data = list.Data
	c.render(w, status, "grants", rq, vw)
}

// revokeGrant revokes one grant through DELETE /admin/grants/{id}.
func (c *Console) revokeGrant(w http.ResponseWriter, r *http.Request, rq *request) {
	id := r.PathValue("id")
	st, msg, err := c.apiCall(r.Context(), rq, http.MethodDelete, "/admin/grants/"+url.PathEscape(id), nil, nil)
	if err != nil {
		c.o.Logger.Error("console: revoke grant", "err", err)
		st, msg = http.StatusServiceUnavailable, "the grant cannot be revoked right now"
	}
	if msg != "" {
		c.showGrants(w, r, rq, st, view{Error: msg})
		return
	}
	c.showGrants(w, r, rq, http.StatusOK, view{Notice: "Grant " + id + " revoked: its tokens no longer work."})
}
