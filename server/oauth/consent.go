package oauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/net/idna"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

const consentCookie = "toolhost_consent"

var scopeText = map[string]string{
	keys.ScopeMCP:    "use toolhost's tools over MCP (web search, fetching pages, running code) as your account, metered on your key",
	keys.ScopeHosted: "run toolhost's hosted tools inside /v1 model requests as your account, metered on your key",
	keys.ScopeTools:  "change your account's tool definitions, sessions, remote MCP servers and approvals",
	keys.ScopeAdmin:  "manage API keys, usage and OAuth grants of every account",
}

// consentTmpl is the whole page: server-rendered, no script, one form. The
// client's name is what the client registered (untrusted: escaped, and
// labelled as self-declared); the redirect host is shown in ASCII
// (punycode) so look-alike Unicode hosts are visible as such.
var consentTmpl = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize {{.ClientName}} — toolhost</title>
<style>
body{font-family:"Liberation Sans",Arial,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.35rem} .box{border:1px solid #c9c9c9;border-radius:6px;padding:1rem 1.2rem;margin:1rem 0}
.host{font-family:"Liberation Mono",monospace;background:#f1f1f1;padding:0 .25rem} .err{color:#a00000;font-weight:bold}
label{display:block;margin:.8rem 0 .3rem;font-weight:bold} input[type=password]{width:100%;padding:.45rem;box-sizing:border-box}
button{padding:.5rem 1.1rem;margin:1rem .6rem 0 0;font-size:1rem} small{color:#555}
</style></head><body>
<h1>Authorize access to toolhost</h1>
{{if .Error}}<p class="err" role="alert">{{.Error}}</p>{{end}}
<div class="box">
<p><strong id="client-name">{{.ClientName}}</strong> <small>(name given by the application itself)</small> asks to:</p>
<ul id="scopes">{{range .Scopes}}<li><code>{{.Name}}</code> — {{.Text}}</li>{{end}}</ul>
<p>After you approve, you are sent back to <span class="host" id="redirect-host">{{.RedirectHost}}</span>.</p>
</div>
<form method="post" action="/oauth/consent">
<input type="hidden" name="id" value="{{.ID}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="api_key">Your toolhost API key</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" placeholder="th_…">
<small>The key is checked once and not given to the application; the access it grants is bound to this key's account and at most its scopes.</small><br>
<button type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>
</body></html>
`))

type consentView struct {
	ID, CSRF, ClientName, RedirectHost, Error string
	Scopes                                    []scopeView
}

type scopeView struct{ Name, Text string }

// consentPage shows what a client asks for and the sign-in form.
func (p *Provider) consentPage(w http.ResponseWriter, r *http.Request) {
	a, c, ok := p.consentRequest(w, r, r.URL.Query().Get("id"))
	if !ok {
		return
	}
	nonce := ""
	if ck, err := r.Cookie(consentCookie); err == nil && len(ck.Value) >= 32 && len(ck.Value) <= 64 {
		nonce = ck.Value
	} else {
		var err error
		if nonce, err = randomToken(); err != nil {
			consentFail(w, http.StatusInternalServerError, "Cannot start the sign-in right now.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: consentCookie, Value: nonce, Path: "/oauth/consent", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || p.secure()})
	}
	p.renderConsent(w, http.StatusOK, a, c, p.csrf(a.ID, nonce), "")
}

// consentSubmit checks the CSRF token (bound to the browser's cookie and
// the request), then either denies (access_denied to the client) or signs
// the user in with the API key and records the grant: the key's account,
// the requested scopes the key holds, the request's resource.
func (p *Provider) consentSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		consentFail(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	id := r.PostForm.Get("id")
	ck, err := r.Cookie(consentCookie)
	if err != nil || r.PostForm.Get("csrf") == "" || !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(p.csrf(id, ck.Value))) {
		consentFail(w, http.StatusForbidden, "The form's CSRF token is missing or does not match this browser. Reload the page from the application and try again.")
		return
	}
	a, c, ok := p.consentRequest(w, r, id)
	if !ok {
		return
	}
	ctx := op.ContextWithIssuer(r.Context(), p.opts.Issuer)
	if r.PostForm.Get("action") != "approve" {
		op.AuthRequestError(w, r.WithContext(ctx), a, oidc.ErrAccessDenied().WithDescription("the user denied the request"), p.op)
		return
	}
	csrf := p.csrf(a.ID, ck.Value)
	k, err := p.opts.Keys.Authenticate(r.Context(), r.PostForm.Get("api_key"))
	switch {
	case errors.Is(err, keys.ErrInvalidKey), errors.Is(err, keys.ErrRevoked):
		p.renderConsent(w, http.StatusUnauthorized, a, c, csrf, "That API key is not valid.")
		return
	case err != nil:
		p.renderConsent(w, http.StatusServiceUnavailable, a, c, csrf, "API keys cannot be checked right now; try again shortly.")
		return
	}
	var scopes []string
	for _, s := range requestedScopes(a) {
		if k.Has(s) {
			scopes = append(scopes, s)
		}
	}
	if len(scopes) == 0 {
		p.renderConsent(w, http.StatusForbidden, a, c, csrf, "This API key holds none of the requested scopes.")
		return
	}
	slices.Sort(scopes)
	g := identity.Grant{ID: keys.NewID("grant"), AccountID: k.AccountID, KeyID: k.ID, ClientID: c.c.ID,
		Scopes: scopes, Resource: a.Resource, CreatedAt: p.opts.Now().UTC()}
	if err := p.opts.Store.Approve(r.Context(), a.ID, g); err != nil {
		p.opts.Logger.Warn("record oauth grant", "request", a.ID, "err", err)
		consentFail(w, http.StatusConflict, "This authorization request was already answered or has expired. Start again from the application.")
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(p.op)(ctx, a.ID), http.StatusSeeOther)
}

// requestedScopes are the grantable scopes a request asks for; a request
// naming none of them (only openid, say) asks for mcp.
func requestedScopes(a *authRequest) []string {
	var out []string
	for _, s := range a.Scopes {
		if slices.Contains(scopesFor(a.ClientID), s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = []string{keys.ScopeMCP}
	}
	return out
}

func (p *Provider) consentRequest(w http.ResponseWriter, r *http.Request, id string) (*authRequest, *client, bool) {
	if id == "" || len(id) > 100 {
		consentFail(w, http.StatusBadRequest, "This page needs an authorization request. Start again from the application.")
		return nil, nil, false
	}
	ar, err := p.storage.AuthRequestByID(r.Context(), id)
	if err != nil {
		consentFail(w, http.StatusBadRequest, "This authorization request is unknown or has expired. Start again from the application.")
		return nil, nil, false
	}
	a := ar.(*authRequest)
	if a.Done() {
		consentFail(w, http.StatusConflict, "This authorization request was already answered. Start again from the application.")
		return nil, nil, false
	}
	oc, err := p.storage.GetClientByClientID(r.Context(), a.ClientID)
	if err != nil {
		consentFail(w, http.StatusBadRequest, "The application that started this request is not registered.")
		return nil, nil, false
	}
	return a, oc.(*client), true
}

func (p *Provider) renderConsent(w http.ResponseWriter, status int, a *authRequest, c *client, csrf, msg string) {
	v := consentView{ID: a.ID, CSRF: csrf, ClientName: c.c.Name, RedirectHost: redirectHost(a.RedirectURI), Error: msg}
	for _, s := range requestedScopes(a) {
		v.Scopes = append(v.Scopes, scopeView{Name: s, Text: scopeText[s]})
	}
	pageHeaders(w)
	w.WriteHeader(status)
	_ = consentTmpl.Execute(w, v)
}

func redirectHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid)"
	}
	if u.Host == "" {
		return u.Scheme + ":"
	}
	host, err := idna.Lookup.ToASCII(u.Hostname())
	if err != nil {
		host = u.Hostname()
	}
	if port := u.Port(); port != "" {
		return host + ":" + port
	}
	return host
}

var failTmpl = template.Must(template.New("fail").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>toolhost — authorization</title></head>
<body style="font-family:'Liberation Sans',Arial,sans-serif;max-width:36rem;margin:2rem auto"><h1>Authorization failed</h1><p role="alert">{{.}}</p></body></html>
`))

func consentFail(w http.ResponseWriter, status int, msg string) {
	pageHeaders(w)
	w.WriteHeader(status)
	_ = failTmpl.Execute(w, msg)
}

// pageHeaders: no framing (clickjacking), no script, no caching, no
// referrer carrying the request id elsewhere.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
}

func (p *Provider) csrf(id, nonce string) string {
	m := hmac.New(sha256.New, p.csrfKey)
	m.Write([]byte(id + "\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (p *Provider) secure() bool {
	u, err := url.Parse(p.opts.Issuer)
	return err == nil && u.Scheme == "https"
}
