package console_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/console"
	"github.com/toolhost/toolhost/tools/approval"
)

func TestSignInSetsAStrictShortLivedSessionCookie(t *testing.T) {
	f := newFixture(t, console.Options{})
	b := f.browser(t)
	_, page := b.get("/console/sign-in")
	resp := b.post("/console/sign-in", url.Values{"api_key": {f.secret["acme"]}, "csrf": {csrfOf(t, page)}}, nil)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "toolhost_console" {
			ck = c
		}
	}
	if ck == nil {
		t.Fatalf("no session cookie: %v", resp.Header["Set-Cookie"])
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" || ck.MaxAge != int(console.DefaultLifetime.Seconds()) {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/console, Max-Age one hour", ck)
	}
	if ck.Secure {
		t.Error("Secure over plain HTTP on loopback: the browser would drop it")
	}
	if strings.Contains(ck.Value, f.secret["acme"]) {
		t.Error("the cookie holds the key in clear")
	}
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	f := newFixture(t, console.Options{})
	h := f.srv.Config.Handler
	get := httptest.NewRequest(http.MethodGet, "https://toolhost.test/console/sign-in", nil)
	get.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, get)
	for _, c := range rec.Result().Cookies() {
		if !c.Secure {
			t.Errorf("cookie %s over TLS is not Secure", c.Name)
		}
	}
}

func TestEveryPageCarriesAStrictCSPAndRefusesFraming(t *testing.T) {
	f := newFixture(t, console.Options{})
	b := f.signIn(t, "admin")
	for _, path := range []string{"/console/sign-in", "/console/overview", "/console/executions", "/console/approvals", "/console/keys", "/console/executions/nope",
		"/console/tool-definitions", "/console/sessions?id=nope", "/console/playground"} {
		resp, _ := b.get(path)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: CSP %q allows script or inline style", path, csp)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: X-Frame-Options %q", path, resp.Header.Get("X-Frame-Options"))
		}
	}
}

// TestUnsafeRequestsWithoutTokenOrFromAnotherSiteAreRefused: every post
// needs the session's CSRF token and a same-origin request; a token from
// another session does not do.
func TestUnsafeRequestsWithoutTokenOrFromAnotherSiteAreRefused(t *testing.T) {
	f := newFixture(t, console.Options{})
	_, apr := f.call(t, "acme", "/notes/a")
	b := f.signIn(t, "acme")
	_, page := b.get("/console/approvals")
	token := csrfOf(t, page)
	_, other := f.signIn(t, "acme").get("/console/approvals")
	for _, tc := range []struct {
		name   string
		form   url.Values
		header map[string]string
		status int
	}{
		{"no token", url.Values{"action": {"approve"}}, nil, http.StatusForbidden},
		{"another session's token", url.Values{"action": {"approve"}, "csrf": {csrfOf(t, other)}}, nil, http.StatusForbidden},
		{"cross-site fetch", url.Values{"action": {"approve"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign origin", url.Values{"action": {"approve"}, "csrf": {token}}, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp := b.post("/console/approvals/"+apr, tc.form, tc.header); resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if a, _ := f.approvals.GetApproval(context.Background(), "acme", apr); a.Status != approval.Pending {
				t.Fatalf("the approval is %s after a refused post", a.Status)
			}
		})
	}
	if resp := f.browser(t).post("/console/approvals/"+apr, url.Values{"action": {"approve"}, "csrf": {token}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a post without a session: %d, want 401", resp.StatusCode)
	}
	signIn := f.browser(t).post("/console/sign-in", url.Values{"api_key": {f.secret["acme"]}, "csrf": {token}}, nil)
	if signIn.StatusCode != http.StatusForbidden {
		t.Errorf("a sign-in without its form's nonce: %d, want 403", signIn.StatusCode)
	}
	if resp := b.post("/console/approvals/"+apr, url.Values{"action": {"approve"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "same-origin"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("the same-origin post with its token: %d", resp.StatusCode)
	}
	if a, _ := f.approvals.GetApproval(context.Background(), "acme", apr); a.Status != approval.Approved {
		t.Fatalf("the approval is %s, want approved", a.Status)
	}
}

// TestAnAccountSeesAndActsOnItsOwnDataOnly: another account's execution is
// a 404, naming another account a 403, and forged posts for another
// account's approval or key change nothing; an admin key may look at any
// account.
func TestAnAccountSeesAndActsOnItsOwnDataOnly(t *testing.T) {
	f := newFixture(t, console.Options{})
	ctx := context.Background()
	acmeExec, _ := f.call(t, "acme", "/notes/acme-secret")
	globexExec, globexApr := f.call(t, "globex", "/notes/globex-secret")
	acme := f.signIn(t, "acme")
	if _, page := acme.get("/console/executions"); !strings.Contains(page, acmeExec) || strings.Contains(page, globexExec) {
		t.Errorf("acme's executions page: own %v, globex's %v", strings.Contains(page, acmeExec), strings.Contains(page, globexExec))
	}
	if resp, page := acme.get("/console/executions/" + globexExec); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "globex-secret") {
		t.Errorf("globex's execution for acme: %d", resp.StatusCode)
	}
	for _, path := range []string{"/console/executions?account=globex", "/console/overview?account=globex", "/console/keys?account=globex", "/console/executions/" + globexExec + "?account=globex"} {
		if resp, page := acme.get(path); resp.StatusCode != http.StatusForbidden || strings.Contains(page, "globex-secret") {
			t.Errorf("%s for acme: %d", path, resp.StatusCode)
		}
	}
	if _, page := acme.get("/console/approvals"); strings.Contains(page, globexApr) {
		t.Error("acme's approvals page lists globex's")
	}
	_, page := acme.get("/console/keys")
	token := csrfOf(t, page)
	acme.post("/console/approvals/"+globexApr, url.Values{"action": {"approve"}, "csrf": {token}}, nil)
	if a, _ := f.approvals.GetApproval(ctx, "globex", globexApr); a.Status != approval.Pending {
		t.Errorf("a forged approval of globex's call: %s", a.Status)
	}
	if resp := acme.post("/console/keys/"+f.keyID["globex"]+"/revoke", url.Values{"csrf": {token}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("acme revoking globex's key: %d, want 403", resp.StatusCode)
	}
	if _, err := f.keys.Authenticate(ctx, f.secret["globex"]); err != nil {
		t.Errorf("globex's key after acme's forged revoke: %v", err)
	}
	if resp := acme.post("/console/keys", url.Values{"csrf": {token}, "account": {"globex"}, "name": {"x"}, "scopes": {"mcp"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("acme creating a key for globex: %d, want 403", resp.StatusCode)
	}
	adm := f.signIn(t, "admin")
	if resp, page := adm.get("/console/executions/" + globexExec + "?account=globex"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "globex-secret") {
		t.Errorf("globex's execution for the admin: %d", resp.StatusCode)
	}
}

func TestRevokingTheKeyOrSigningOutEndsTheSession(t *testing.T) {
	f := newFixture(t, console.Options{})
	b := f.signIn(t, "acme")
	_, page := b.get("/console/overview")
	if resp := b.post("/console/sign-out", url.Values{"csrf": {csrfOf(t, page)}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	if resp, _ := b.get("/console/overview"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want the sign-in redirect", resp.StatusCode)
	}

	b = f.signIn(t, "acme")
	saved := b.c.Jar.Cookies(mustURL(t, f.srv.URL+"/console/"))
	if err := f.keys.Revoke(context.Background(), f.keyID["acme"]); err != nil {
		t.Fatal(err)
	}
	if resp, _ := b.get("/console/overview"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after revoking the key: %d, want the sign-in redirect", resp.StatusCode)
	}
	// The cookie itself, replayed, opens nothing either.
	replay := f.browser(t)
	replay.c.Jar.SetCookies(mustURL(t, f.srv.URL+"/console/"), saved)
	if resp, _ := replay.get("/console/overview"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the revoked key's cookie replayed: %d", resp.StatusCode)
	}
}

func TestForgedSessionCookieIsRefused(t *testing.T) {
	f := newFixture(t, console.Options{})
	b := f.browser(t)
	b.c.Jar.SetCookies(mustURL(t, f.srv.URL+"/console/"), []*http.Cookie{{Name: "toolhost_console", Value: "AAAA" + strings.Repeat("x", 80), Path: "/console"}})
	if resp, _ := b.get("/console/overview"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("forged cookie: %d", resp.StatusCode)
	}
}

// TestHostileTextIsShownAsText: arguments holding markup reach the pages
// escaped (html/template), never as elements.
func TestHostileTextIsShownAsText(t *testing.T) {
	f := newFixture(t, console.Options{TraceURL: "https://trace.example/t/{trace_id}"})
	hostile := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	exec, _ := f.call(t, "acme", hostile)
	b := f.signIn(t, "acme")
	for _, path := range []string{"/console/executions/" + exec, "/console/approvals"} {
		resp, page := b.get(path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") {
			t.Errorf("%s renders the arguments as markup", path)
		}
		if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s does not show the arguments as text", path)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
