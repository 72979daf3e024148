package admin

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
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

// errOtherAccount refuses ?account= naming another account to a key
// without the admin scope (403 insufficient_scope, writeErr).
var errOtherAccount = errors.New("only a key with the admin scope may name another account")

// namedAccount is the account a request acts on: the caller's
// (accountOf), or the one ?account= names when the caller holds the admin
// scope (as on GET /admin/keys?account=). The name is a text filter (1 to
// MaxFilterBytes bytes of UTF-8 without control characters); any key
// without the admin scope naming another account is errOtherAccount, and
// naming its own changes nothing. The approvals routes, one execution and
// its events, and job cancellation take it.
func namedAccount(r *http.Request, v url.Values, hook func(*http.Request) string) (string, error) {
	own := accountOf(r, hook)
	if !v.Has("account") || v.Get("account") == own {
		return own, nil
	}
	var named string
	if err := texts(v, filter{"account", &named}); err != nil {
		return "", err
	}
	if id, ok := identity.FromContext(r.Context()); !ok || !id.Has(keys.ScopeAdmin) {
		return "", errOtherAccount
	}
	return named, nil
}

// nowOf is the time on a handler's clock, or on the wall clock when the
// handler has none.
func nowOf(clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return time.Now()
}
