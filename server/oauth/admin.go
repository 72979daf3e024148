package oauth

import (
	"errors"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/server"
)

// GrantRoutes are the admin API of grants: list (of one account with
// ?account=, else all) and revoke. Revoking takes effect at once: every
// request checks its token's grant in the store. Mount behind the admin
// scope.
func GrantRoutes(st identity.GrantStore, now func() time.Time) map[string]http.Handler {
	if now == nil {
		now = time.Now
	}
	one := func(w http.ResponseWriter, r *http.Request) {
		g, err := st.Grant(r.Context(), r.PathValue("id"))
		if err != nil {
			writeGrantError(w, r, "read", err)
			return
		}
		server.WriteJSON(w, http.StatusOK, g)
	}
	return map[string]http.Handler{
		"GET /admin/grants": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gs, err := st.ListGrants(r.Context(), r.URL.Query().Get("account"))
			if err != nil {
				server.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", "cannot read grants right now; retry shortly")
				return
			}
			server.WriteJSON(w, http.StatusOK, map[string]any{"data": gs})
		}),
		"GET /admin/grants/{id}": http.HandlerFunc(one),
		"DELETE /admin/grants/{id}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := st.RevokeGrant(r.Context(), r.PathValue("id"), now()); err != nil {
				writeGrantError(w, r, "revoke", err)
				return
			}
			one(w, r)
		}),
	}
}

// writeGrantError answers a failed read or revocation (verb) of the grant
// the path names: 404 when there is none, else 503, the store being
// unreachable.
func writeGrantError(w http.ResponseWriter, r *http.Request, verb string, err error) {
	if errors.Is(err, identity.ErrNotFound) {
		server.WriteError(w, http.StatusNotFound, "grant_not_found", "no grant with id "+r.PathValue("id"))
		return
	}
	server.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", "cannot "+verb+" grants right now; retry shortly")
}
