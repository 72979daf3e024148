package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
)

// signInPage shows the sign-in form, its CSRF token bound to a fresh
// nonce cookie (so a cross-site page cannot sign a browser in to the
// attacker's account).
func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	c.signInForm(w, r, http.StatusOK, "")
}

func (c *Console) signInForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	nonce, err := randomID()
	if err != nil {
		c.refuse(w, http.StatusInternalServerError, "internal_error", "the sign-in form could not be prepared")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: preCookie, Value: nonce, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.o.Secure(r), MaxAge: 600})
	c.render(w, status, "signin", nil, view{Title: "Sign in", Error: msg, CSRF: c.seal.csrf("pre:" + nonce), Data: c.o.OAuth != nil})
}

// signIn exchanges an API key for a session cookie.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if !c.preSignInForm(w, r) {
		return
	}
	secret := strings.TrimSpace(r.PostForm.Get("api_key"))
	k, err := c.o.Keys.Authenticate(r.Context(), secret)
	switch {
	case secret == "":
		c.signInForm(w, r, http.StatusUnauthorized, "Enter an API key.")
		return
	case errors.Is(err, keys.ErrRevoked):
		c.signInForm(w, r, http.StatusUnauthorized, "That API key has been revoked.")
		return
	case errors.Is(err, keys.ErrInvalidKey):
		c.signInForm(w, r, http.StatusUnauthorized, "That API key is not valid.")
		return
	case err != nil:
		c.o.Logger.Warn("console: sign-in", "err", err)
		c.signInForm(w, r, http.StatusServiceUnavailable, "API keys cannot be checked right now; try again shortly.")
		return
	}
	now := c.o.Now()
	if c.openSession(w, r, session{Secret: secret}, now, now.Add(c.o.Lifetime)) {
		c.o.Logger.Info("console: signed in", "account", k.AccountID, "key_id", k.ID)
	}
}

// openSession gives the browser session s (a new id, expiring at exp):
// the sealed session cookie in place of the sign-in cookie, and a redirect
// to the overview. false: it could not, and the browser was told so.
func (c *Console) openSession(w http.ResponseWriter, r *http.Request, s session, now, exp time.Time) bool {
	id, err := randomID()
	if err != nil {
		c.refuse(w, http.StatusInternalServerError, "internal_error", "the session could not be opened")
		return false
	}
	s.ID, s.Expires = id, exp.Unix()
	v, err := c.seal.seal(s)
	if err != nil {
		c.refuse(w, http.StatusInternalServerError, "internal_error", "the session could not be opened")
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: preCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.o.Secure(r)})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: Prefix, Expires: exp,
		MaxAge: int(exp.Sub(now).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.o.Secure(r)})
	http.Redirect(w, r, Prefix+"/overview", http.StatusSeeOther)
	return true
}

// signOut ends the session: the browser forgets the cookie and this
// replica its id.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request, rq *request) {
	c.seal.revoke(rq.sess, c.o.Now())
	c.revokeOAuth(r.Context(), rq.sess)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.o.Secure(r)})
	http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
}

// preSignInForm checks a post of the sign-in page's forms (the key's and
// OAuth's): same origin, at most 16 KiB, and the CSRF token bound to the
// browser's pre-sign-in nonce. It has answered when it returns false.
func (c *Console) preSignInForm(w http.ResponseWriter, r *http.Request) bool {
	if err := c.cop.Check(r); err != nil {
		c.refuse(w, http.StatusForbidden, "cross_site_request", "cross-site requests to the console are refused")
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	ck, err := r.Cookie(preCookie)
	if err != nil || r.ParseForm() != nil || !c.seal.checkCSRF("pre:"+ck.Value, r.PostForm.Get("csrf")) {
		c.refuse(w, http.StatusForbidden, "csrf_token_invalid", "the sign-in form's CSRF token is missing or wrong; reload the page and try again")
		return false
	}
	return true
}
