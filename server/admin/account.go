package admin

import (
	"net/http"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
)

// accountOf is the account a request acts for: hook's answer when the
// caller set one (tests), else the identity.Identity that authentication
// stored, else the single local account (no authentication in front).
func accountOf(r *http.Request, hook func(*http.Request) string) string {
	if hook != nil {
		return hook(r)
	}
	if id, ok := identity.FromContext(r.Context()); ok && id.AccountID != "" {
		return id.AccountID
	}
	return "local"
}

// nowOf is the time on a handler's clock, or on the wall clock when the
// handler has none.
func nowOf(clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return time.Now()
}
