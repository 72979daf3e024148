package oauth

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/toolhost/toolhost/internal/identity"
)

// Client authentication at the token endpoint comes first (RFC 6749
// §3.2.1, §5.2): a client that is unknown — never registered, or expired
// and purged (expiry.go) —, or presents a wrong or no secret, is answered
// 401 invalid_client before its code or refresh token is looked at. The
// library authenticates only after it has consumed the code, so an
// unknown client spent (and, replayed, revoked) the real client's code,
// and it answers a refresh from an unknown client as a server error.
// invalid_client is also what makes MCP clients register again (the
// TypeScript SDK drops its client information on it, and only its tokens
// on invalid_grant): a client whose registration expired recovers by
// itself. The library still runs its own checks after this one.

// basicRealm is the challenge sent back to a client that authenticated in
// the Authorization header (RFC 6749 §5.2 asks for one matching its
// scheme).
const basicRealm = `Basic realm="toolhost oauth"`

// clientCredentials are the credentials a token request carries: in the
// Authorization header (client_secret_basic) or the form (client_id, and
// client_secret for client_secret_post). inHeader is set when the header
// carried them.
type clientCredentials struct {
	id, secret string
	inHeader   bool
}

// credentialsOf reads a token request's client credentials from its
// parsed form and header; ok is false when the header is not valid Basic
// credentials of form-encoded parts (RFC 6749 §2.3.1).
func credentialsOf(r *http.Request) (c clientCredentials, ok bool) {
	if _, present := r.Header["Authorization"]; !present {
		return clientCredentials{id: r.Form.Get("client_id"), secret: r.Form.Get("client_secret")}, true
	}
	c.inHeader = true
	id, secret, basic := r.BasicAuth()
	if !basic {
		return c, false
	}
	var errID, errSecret error
	c.id, errID = url.QueryUnescape(id)
	c.secret, errSecret = url.QueryUnescape(secret)
	return c, errID == nil && errSecret == nil
}

// authenticateClient answers the token request and returns false when
// its client does not authenticate. A request with a client assertion
// (private_key_jwt) or with credentials both in the header and the form
// is left to the library, which refuses both.
func (p *Provider) authenticateClient(w http.ResponseWriter, r *http.Request) bool {
	if r.Form.Has("client_assertion") || r.Form.Has("client_assertion_type") {
		return true
	}
	c, ok := credentialsOf(r)
	if c.inHeader && r.Form.Has("client_secret") {
		return true // two methods at once: the library answers invalid_request
	}
	fail := func(desc string) bool {
		if c.inHeader {
			w.Header().Set("WWW-Authenticate", basicRealm)
		}
		oauthError(w, http.StatusUnauthorized, "invalid_client", desc)
		return false
	}
	switch {
	case !ok:
		return fail("the Authorization header is not Basic credentials of a form-encoded client_id and client_secret")
	case c.id == "":
		return fail("client authentication is required: send client_id (and the client's secret, if it was issued one)")
	}
	cl, err := p.storage.GetClientByClientID(r.Context(), c.id)
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return fail("the client is not registered, or its registration expired: register again")
	case errors.Is(err, errCIMD):
		// Why (an address, a network error) is for the log, as at
		// /oauth/authorize: the fetch is made on behalf of anyone.
		return fail("the client's metadata document could not be fetched or is not valid")
	case err != nil:
		p.opts.Logger.Error("token endpoint: read oauth client", "err", err)
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "cannot read the client right now; retry shortly")
		return false
	}
	stored := cl.(*client).c
	if stored.AuthMethod == "none" {
		return true // a public client: PKCE and the redirect bind its code
	}
	if stored.SecretHash == "" || !equalHash(stored.SecretHash, identity.Hash(c.secret)) {
		return fail("client authentication failed: wrong or missing client secret")
	}
	return true
}
