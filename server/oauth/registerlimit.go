package oauth

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
)

// Default limits of dynamic client registration: anyone may register, so
// the number of clients one address (and everybody) can add is bounded,
// or a script could fill the store.
const (
	DefaultRegistrationsPerMinute      = 10
	DefaultRegistrationsPerMinuteTotal = 100
)

// registerLimit admits a registration under the per-address and the
// global limit, on the keys.Limiter the API keys' call limits use (in
// Redis when replicas share it: one limit for all of them). An address is
// the client's IP (server.ClientAddr); an IPv6 address counts as its /64, which
// one host can hand itself whole.
type registerLimit struct {
	lim             keys.Limiter
	perAddr, global int
}

// take answers false with the wait when the registration is refused.
func (l registerLimit) take(ctx context.Context, r *http.Request) (bool, time.Duration, error) {
	for _, c := range []struct {
		key string
		n   int
	}{{"oauth-register:" + addressOf(r), l.perAddr}, {"oauth-register:*", l.global}} {
		ok, retry, err := l.lim.TakeCall(ctx, c.key, c.n)
		if err != nil || !ok {
			return false, retry, err
		}
	}
	return true, 0, nil
}

// addressOf is the client's IP (its /64 for IPv6): the connection's peer,
// or what a trusted proxy says it is (server.ClientAddr).
func addressOf(r *http.Request) string {
	a := server.ClientAddr(r)
	if !a.IsValid() {
		return r.RemoteAddr
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// tooManyRegistrations is 429 with the RFC 7591 error object and
// Retry-After in whole seconds.
func tooManyRegistrations(w http.ResponseWriter, retry time.Duration) {
	secs := int(math.Ceil(retry.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	oauthError(w, http.StatusTooManyRequests, "temporarily_unavailable",
		"too many client registrations from this address (or from everybody) in the last minute; retry after "+strconv.Itoa(max(secs, 1))+" s")
}
