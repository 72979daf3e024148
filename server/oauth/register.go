package oauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server"
)

// Registration limits: a client is public data anyone can create, so it
// stays small.
const (
	maxRegistrationBytes = 16 << 10
	maxRedirectURIs      = 8
	maxRedirectURIBytes  = 2000
	maxClientNameRunes   = 100
)

// register is dynamic client registration (RFC 7591). Redirect URIs must
// be https, or http on a loopback address (a native app, whose port may
// vary per RFC 8252), or a private-use scheme of a native app; none may
// carry a fragment. Public clients ("none") get no secret; confidential
// ones get a secret shown once and stored hashed.
func (p *Provider) register(w http.ResponseWriter, r *http.Request) {
	ok, retry, err := p.regLimit.take(r.Context(), r)
	if err != nil {
		p.opts.Logger.Error("oauth registration limit", "err", err)
		w.Header().Set("Retry-After", "1")
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "cannot register the client right now; retry shortly")
		return
	}
	if !ok {
		tooManyRegistrations(w, retry)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRegistrationBytes))
	if err != nil {
		regError(w, "invalid_client_metadata", "the registration body is larger than 16 KiB or unreadable")
		return
	}
	if err := wire.Check(body); err != nil {
		regError(w, "invalid_client_metadata", "the registration body is not one strict JSON object: "+err.Error())
		return
	}
	var m oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		regError(w, "invalid_client_metadata", "the registration body does not match RFC 7591: "+err.Error())
		return
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	if !slices.Contains([]string{"none", "client_secret_basic", "client_secret_post"}, method) {
		regError(w, "invalid_client_metadata", "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
		return
	}
	for _, gt := range m.GrantTypes {
		if gt != "authorization_code" && gt != "refresh_token" {
			regError(w, "invalid_client_metadata", "grant_types may hold authorization_code and refresh_token only")
			return
		}
	}
	for _, rt := range m.ResponseTypes {
		if rt != "code" {
			regError(w, "invalid_client_metadata", "response_types may hold code only")
			return
		}
	}
	c, refusal := clientFromMetadata(m)
	if refusal != "" {
		code := "invalid_redirect_uri"
		if strings.HasPrefix(refusal, "client_name") {
			code = "invalid_client_metadata"
		}
		regError(w, code, refusal)
		return
	}
	c.ID, c.AuthMethod, c.CreatedAt = keys.NewID("client"), method, p.opts.Now().UTC()
	name := c.Name
	var secret string
	if method != "none" {
		if secret, err = randomToken(); err != nil {
			server.WriteError(w, http.StatusInternalServerError, "internal_error", "cannot create a client secret")
			return
		}
		c.SecretHash = identity.Hash(secret)
	}
	if err := p.opts.Store.CreateClient(r.Context(), *c); err != nil {
		p.opts.Logger.Error("register oauth client", "err", err)
		server.WriteError(w, http.StatusServiceUnavailable, "store_unavailable", "cannot register the client right now; retry shortly")
		return
	}
	p.purge.kick()
	m.ClientName, m.TokenEndpointAuthMethod = name, method
	m.GrantTypes, m.ResponseTypes = []string{"authorization_code", "refresh_token"}, []string{"code"}
	resp := &oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: m, ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: c.CreatedAt}
	w.Header().Set("Cache-Control", "no-store")
	server.WriteJSON(w, http.StatusCreated, resp)
}

func checkClientName(name string) string {
	if utf8.RuneCountInString(name) > maxClientNameRunes || strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) // bidi overrides, zero-width tricks
	}) >= 0 {
		return "client_name must be at most 100 characters with no control or format characters"
	}
	return ""
}

// redirectKind classifies a redirect URI: "https", "loopback" or
// "private-use", or returns why it is refused.
func redirectKind(raw string) (kind, refusal string) {
	if len(raw) > maxRedirectURIBytes {
		return "", "a redirect_uri is longer than 2000 bytes"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return "", "a redirect_uri is not an absolute URI"
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", "a redirect_uri must not contain a fragment"
	}
	if u.User != nil {
		return "", "a redirect_uri must not contain user information"
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return "", "an https redirect_uri needs a host"
		}
		return "https", ""
	case "http":
		if _, loop := op.HTTPLoopbackOrLocalhost(raw); loop {
			return "loopback", ""
		}
		return "", "an http redirect_uri must be on a loopback address (127.0.0.1, [::1] or localhost); use https otherwise"
	case "javascript", "data", "file", "vbscript":
		return "", "a redirect_uri must not use the " + u.Scheme + " scheme"
	}
	// A native app's private-use scheme (RFC 8252 §7.1) needs a dot.
	if !strings.Contains(u.Scheme, ".") {
		return "", "a private-use redirect_uri scheme must be a reversed domain name (com.example.app:/callback)"
	}
	return "private-use", ""
}

func regError(w http.ResponseWriter, code, desc string) {
	oauthError(w, http.StatusBadRequest, code, desc)
}
