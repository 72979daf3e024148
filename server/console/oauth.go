package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// OAuth lets the console sign users in through toolhost's embedded
// authorization server, as one of its OAuth 2.1 clients (authorization
// code, PKCE S256, the resource indicator).
type OAuth struct {
	// Client returns the console's client id for a redirect URI,
	// registering it in process when needed (oauth.Provider.ConsoleClient).
	Client func(ctx context.Context, redirectURI string) (string, error)
	// Server is the authorization server's routes: the browser is sent to
	// its /oauth/authorize on the request's own origin, and the console
	// calls its /oauth/token and /oauth/revoke in process.
	Server http.Handler
	// Resource is the resource indicator (RFC 8707) tokens are asked for:
	// the MCP URL, whose tokens REST takes too.
	Resource string
	// Scope is the scope parameter of the authorization request.
	Scope string
	// Tokens verifies the session's access token at every request, as
	// REST verifies a bearer (a revoked grant is refused at once).
	Tokens interface {
		VerifyToken(ctx context.Context, token string) (identity.Identity, error)
	}
	// Key finds a grant's API key by id (the keys page shows its limits).
	Key func(ctx context.Context, id string) (*keys.Key, error)
}

// oauthCookie carries an authorization request in flight: its state, PKCE
// verifier, client and redirect URI, sealed, for this browser only.
const (
	oauthCookie   = "toolhost_console_oauth"
	oauthCallback = Prefix + "/oauth/callback"
	oauthFlowTTL  = 10 * time.Minute
)

// flow is what oauthCookie seals.
type flow struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Client   string `json:"c"`
	Redirect string `json:"r"`
	Expires  int64  `json:"exp"`
}

// oauthStart begins an OAuth sign-in: the sign-in form's CSRF token (bound
// to the pre-sign-in nonce) is checked, the console's client found for
// this origin's callback, and the browser sent to /oauth/authorize with a
// fresh state and PKCE challenge, both sealed in a cookie of its own.
func (c *Console) oauthStart(w http.ResponseWriter, r *http.Request) {
	if c.o.OAuth == nil {
		c.refuse(w, http.StatusNotFound, "oauth_unavailable", "OAuth sign-in is off on this server; sign in with an API key")
		return
	}
	if !c.preSignInForm(w, r) {
		return
	}
	scheme := "http"
	if c.o.Secure(r) {
		scheme = "https"
	}
	redirect := (&url.URL{Scheme: scheme, Host: r.Host, Path: oauthCallback}).String()
	client, err := c.o.OAuth.Client(r.Context(), redirect)
	if err != nil {
		c.o.Logger.Warn("console: oauth client", "redirect_uri", redirect, "err", err)
		c.refuse(w, http.StatusBadRequest, "oauth_unavailable", "OAuth sign-in cannot return to this address (it needs https, or http on a loopback address); sign in with an API key")
		return
	}
	state, err1 := randomID()
	v1, err2 := randomID()
	v2, err4 := randomID()
	// The verifier: 64 characters of RFC 7636's alphabet.
	f := flow{State: state, Verifier: v1 + v2, Client: client, Redirect: redirect, Expires: c.o.Now().Add(oauthFlowTTL).Unix()}
	v, err3 := c.seal.sealAs(oauthCookie, f)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		c.refuse(w, http.StatusInternalServerError, "internal_error", "the sign-in could not be started")
		return
	}
	// Lax: the browser comes back by a top-level navigation from the
	// authorization server, which may live on another site (public_url).
	http.SetCookie(w, &http.Cookie{Name: oauthCookie, Value: v, Path: Prefix + "/oauth", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: c.o.Secure(r), MaxAge: int(oauthFlowTTL.Seconds())})
	sum := sha256.Sum256([]byte(f.Verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {state},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {c.o.OAuth.Resource}, "scope": {c.o.OAuth.Scope}}
	http.Redirect(w, r, "/oauth/authorize?"+q.Encode(), http.StatusSeeOther)
}

// errorCode is what an authorization server's error= may be shown as.
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// oauthCallback ends an OAuth sign-in: the state must be this browser's
// (the sealed cookie, spent here whatever happens), the code is exchanged
// in process with the PKCE verifier, and the access token verified as
// REST verifies it; only then is a session opened. Every failure is a
// page naming a code, and signs nobody in.
func (c *Console) oauthCallback(w http.ResponseWriter, r *http.Request) {
	if c.o.OAuth == nil {
		c.refuse(w, http.StatusNotFound, "oauth_unavailable", "OAuth sign-in is off on this server; sign in with an API key")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: oauthCookie, Value: "", Path: Prefix + "/oauth", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: c.o.Secure(r)})
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		code := "oauth_error"
		if errorCode.MatchString(e) {
			code = e
		}
		msg := "The authorization server refused the sign-in"
		if d := clip(q.Get("error_description"), 300); d != "" {
			msg += ": " + d
		}
		status := http.StatusBadRequest
		if code == "access_denied" {
			status = http.StatusForbidden
		}
		c.refuse(w, status, code, msg+". Nobody was signed in.")
		return
	}
	var f flow
	ck, err := r.Cookie(oauthCookie)
	if err != nil || c.seal.openAs(oauthCookie, ck.Value, &f) != nil || !c.o.Now().Before(time.Unix(f.Expires, 0)) {
		c.refuse(w, http.StatusBadRequest, "oauth_state_missing", "this browser has no OAuth sign-in under way (or it expired); start again from the sign-in page")
		return
	}
	if st := q.Get("state"); st == "" || subtle.ConstantTimeCompare([]byte(st), []byte(f.State)) != 1 {
		c.refuse(w, http.StatusBadRequest, "oauth_state_mismatch", "the answer does not belong to the sign-in this browser started; start again from the sign-in page")
		return
	}
	code := q.Get("code")
	if code == "" || len(code) > 4096 {
		c.refuse(w, http.StatusBadRequest, "oauth_code_missing", "the authorization server's answer carries no usable code; start again from the sign-in page")
		return
	}
	tok, oerr, err := c.exchange(r.Context(), f, code)
	switch {
	case err != nil:
		c.o.Logger.Warn("console: oauth exchange", "err", err)
		c.refuse(w, http.StatusServiceUnavailable, "oauth_unavailable", "the authorization server cannot be reached right now; try again shortly")
		return
	case oerr != "":
		c.refuse(w, http.StatusBadRequest, "oauth_exchange_failed", "the code was refused ("+oerr+"); it may have been used already or expired. Start again from the sign-in page")
		return
	}
	c.openOAuthSession(w, r, f, tok)
}

// tokenAnswer is the token endpoint's answer, success or error (RFC 6749 §5).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// exchange trades the code for tokens at /oauth/token, in process: no
// network hop, no dependence on the public URL resolving from inside.
func (c *Console) exchange(ctx context.Context, f flow, code string) (tokenAnswer, string, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {f.Redirect},
		"client_id": {f.Client}, "code_verifier": {f.Verifier}, "resource": {c.o.OAuth.Resource}}
	var t tokenAnswer
	status, err := c.oauthPost(ctx, "/oauth/token", form, &t)
	if err != nil {
		return t, "", err
	}
	if status != http.StatusOK || t.AccessToken == "" {
		if !errorCode.MatchString(t.Error) {
			t.Error = "invalid_response"
		}
		return t, t.Error, nil
	}
	return t, "", nil
}

func (c *Console) oauthPost(ctx context.Context, path string, form url.Values, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, fmt.Errorf("console %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := &recorder{h: http.Header{}, status: http.StatusOK}
	c.o.OAuth.Server.ServeHTTP(rec, req)
	if out != nil && rec.body.Len() > 0 {
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return rec.status, fmt.Errorf("console %s: %w", path, err)
		}
	}
	return rec.status, nil
}

// openOAuthSession verifies the new access token as REST will and opens a
// session holding it, which ends when the token does (or sooner, at the
// console's lifetime). The refresh token is kept sealed only to revoke
// the grant at sign-out: a session is never refreshed.
func (c *Console) openOAuthSession(w http.ResponseWriter, r *http.Request, f flow, tok tokenAnswer) {
	id, err := c.o.OAuth.Tokens.VerifyToken(r.Context(), tok.AccessToken)
	if err != nil {
		c.o.Logger.Warn("console: oauth token", "err", err)
		c.refuse(w, http.StatusBadRequest, "oauth_token_invalid", "the access token the server issued cannot be used here; start again from the sign-in page")
		return
	}
	now := c.o.Now()
	exp := now.Add(c.o.Lifetime)
	if tok.ExpiresIn > 0 && now.Add(time.Duration(tok.ExpiresIn)*time.Second).Before(exp) {
		exp = now.Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	s := session{Secret: tok.AccessToken, Kind: kindOAuth, Client: f.Client, Refresh: tok.RefreshToken}
	if c.openSession(w, r, s, now, exp) {
		c.o.Logger.Info("console: signed in through oauth", "account", id.AccountID, "key_id", id.KeyID)
	}
}

// oauthViewer re-validates an OAuth session's access token, as REST does
// at every request.
func (c *Console) oauthViewer(ctx context.Context, ss session) (*request, error) {
	if c.o.OAuth == nil {
		return nil, errBadSession
	}
	id, err := c.o.OAuth.Tokens.VerifyToken(ctx, ss.Secret)
	if err != nil {
		return nil, fmt.Errorf("console session token: %w", err)
	}
	k := &keys.Key{ID: id.KeyID, AccountID: id.AccountID, Scopes: id.Scopes}
	if c.o.OAuth.Key != nil {
		if full, err := c.o.OAuth.Key(ctx, id.KeyID); err == nil {
			k = full
			k.Scopes = id.Scopes // the grant's, at most the key's
		}
	}
	return &request{
		Viewer: Viewer{AccountID: id.AccountID, KeyID: id.KeyID, Scopes: id.Scopes, Admin: id.Has(keys.ScopeAdmin)},
		secret: ss.Secret, key: k, sess: ss, csrf: c.seal.csrf(ss.ID),
	}, nil
}

// revokeOAuth revokes a signing-out session's grant (through its refresh
// token: the grant and every token of it) so it ends on every replica.
func (c *Console) revokeOAuth(ctx context.Context, ss session) {
	if c.o.OAuth == nil || ss.Kind != kindOAuth {
		return
	}
	token := ss.Refresh
	if token == "" {
		token = ss.Secret
	}
	st, err := c.oauthPost(ctx, "/oauth/revoke", url.Values{"token": {token}, "client_id": {ss.Client}}, nil)
	if err != nil || st != http.StatusOK {
		c.o.Logger.Warn("console: revoke oauth grant at sign-out", "status", st, "err", err)
	}
}

// clip shortens s to n runes, dropping invalid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
