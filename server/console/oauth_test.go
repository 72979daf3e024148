package console_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/server/console"
	"github.com/toolhost/toolhost/server/oauth"
)

// testClock is the clock the console and the authorization server share.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newOAuthFixture(t *testing.T) (*fixture, *testClock) {
	t.Helper()
	clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f := newFixtureFull(t, console.Options{Now: clk.Now}, false,
		&oauth.Options{Now: clk.Now, AccessTokenTTL: 10 * time.Minute}, nil)
	return f, clk
}

var (
	consentID = regexp.MustCompile(`name="id" value="([^"]+)"`)
	errorCode = regexp.MustCompile(`<code id="error-code">([^<]*)</code>`)
)

// oauthFlow is a browser part-way through an OAuth sign-in: at the
// callback, with the code the server gave it and the state it carried.
type oauthFlow struct {
	b        *browser
	callback *url.URL
}

// startOAuth plays the user from the sign-in page to the console's
// callback URL, approving (or denying) on the consent page with account's key.
func (f *fixture) startOAuth(t *testing.T, account, action string) *oauthFlow {
	t.Helper()
	b := f.browser(t)
	_, page := b.get("/console/sign-in")
	if !strings.Contains(page, "Sign in with toolhost OAuth") {
		t.Fatal("no OAuth button on the sign-in page")
	}
	resp := b.post("/console/oauth/start", url.Values{"csrf": {csrfOf(t, page)}, "redirect_uri": {"https://evil.example/cb"},
		"next": {"https://evil.example/"}}, nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/oauth/authorize?") {
		t.Fatalf("start: %d %q", resp.StatusCode, loc)
	}
	au, _ := url.Parse(loc)
	q := au.Query()
	if q.Get("redirect_uri") != f.srv.URL+"/console/oauth/callback" || q.Get("code_challenge_method") != "S256" ||
		q.Get("resource") != f.srv.URL+"/mcp" || q.Get("state") == "" {
		t.Fatalf("authorize request: %v", q)
	}
	resp, _ = b.get(loc)
	resp, page = b.get(strings.TrimPrefix(resp.Header.Get("Location"), f.srv.URL))
	m := consentID.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("consent page: %d", resp.StatusCode)
	}
	resp = b.post("/oauth/consent", url.Values{"id": {m[1]}, "csrf": {csrfOf(t, page)}, "api_key": {f.secret[account]}, "action": {action}}, nil)
	if action == "approve" {
		resp, _ = b.get(strings.TrimPrefix(resp.Header.Get("Location"), f.srv.URL))
	}
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || cb.Path != "/console/oauth/callback" {
		t.Fatalf("back at %q (%v)", resp.Header.Get("Location"), err)
	}
	return &oauthFlow{b: b, callback: cb}
}

// finish follows the callback; it returns the answer and the page.
func (fl *oauthFlow) finish(t *testing.T, query string) (*http.Response, string) {
	t.Helper()
	if query == "" {
		query = fl.callback.RawQuery
	}
	return fl.b.get("/console/oauth/callback?" + query)
}

func (f *fixture) signInOAuth(t *testing.T, account string) *browser {
	t.Helper()
	fl := f.startOAuth(t, account, "approve")
	resp, _ := fl.finish(t, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/overview" {
		t.Fatalf("callback: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return fl.b
}

func signedIn(t *testing.T, b *browser) bool {
	t.Helper()
	resp, _ := b.get("/console/overview")
	return resp.StatusCode == http.StatusOK
}

func TestOAuthSignInActsThroughRESTWithTheGrant(t *testing.T) {
	f, _ := newOAuthFixture(t)
	for _, tc := range []struct {
		account      string
		keysStatus   int
		grantsStatus int
	}{
		{"admin", http.StatusOK, http.StatusOK},
		{"acme", http.StatusOK, http.StatusForbidden}, // REST's /admin/grants answers 403 to a grant without admin
	} {
		t.Run(tc.account, func(t *testing.T) {
			b := f.signInOAuth(t, tc.account)
			_, page := b.get("/console/overview")
			if !strings.Contains(page, "<h1>Overview</h1>") {
				t.Fatalf("overview: %s", page)
			}
			if resp, _ := b.get("/console/keys"); resp.StatusCode != tc.keysStatus {
				t.Fatalf("keys page: %d", resp.StatusCode)
			}
			if resp, _ := b.get("/console/grants"); resp.StatusCode != tc.grantsStatus {
				t.Fatalf("grants page: %d", resp.StatusCode)
			}
			// Another account's data: refused as REST refuses it.
			if resp, _ := b.get("/console/approvals?account=globex"); tc.account != "admin" && resp.StatusCode != http.StatusForbidden {
				t.Fatalf("another account's approvals: %d", resp.StatusCode)
			}
		})
	}
}

// grantsOf lists an account's grants over REST with the admin key.
func (f *fixture) grantsOf(t *testing.T, account string) []string {
	t.Helper()
	var list struct {
		Data []struct {
			ID        string   `json:"id"`
			ClientID  string   `json:"client_id"`
			Scopes    []string `json:"scopes"`
			RevokedAt *string  `json:"revoked_at"`
		} `json:"data"`
	}
	f.rest(t, "admin", http.MethodGet, "/admin/grants?account="+account, nil, &list)
	var ids []string
	for _, g := range list.Data {
		if g.RevokedAt == nil && strings.HasPrefix(g.ClientID, "console_") {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

func TestOAuthSessionEndsWhenItsGrantIsRevoked(t *testing.T) {
	f, _ := newOAuthFixture(t)
	for _, how := range []string{"rest", "console", "sign-out"} {
		t.Run(how, func(t *testing.T) {
			b := f.signInOAuth(t, "acme")
			admin := f.signInOAuth(t, "admin")
			ids := f.grantsOf(t, "acme")
			if len(ids) != 1 || !signedIn(t, b) {
				t.Fatalf("grants %v", ids)
			}
			switch how {
			case "rest":
				if st := f.rest(t, "admin", http.MethodDelete, "/admin/grants/"+ids[0], nil, nil); st != http.StatusNoContent && st != http.StatusOK {
					t.Fatalf("DELETE grant: %d", st)
				}
			case "console":
				_, page := admin.get("/console/grants?account=acme")
				if resp := admin.post("/console/grants/"+ids[0]+"/revoke", url.Values{"csrf": {csrfOf(t, page)}, "account": {"acme"}}, nil); resp.StatusCode != http.StatusOK {
					t.Fatalf("console revoke: %d", resp.StatusCode)
				}
			case "sign-out":
				_, page := b.get("/console/overview")
				if resp := b.post("/console/sign-out", url.Values{"csrf": {csrfOf(t, page)}}, nil); resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("sign-out: %d", resp.StatusCode)
				}
			}
			if signedIn(t, b) {
				t.Fatal("the session outlived its grant")
			}
			if left := f.grantsOf(t, "acme"); len(left) != 0 {
				t.Fatalf("grants left: %v", left)
			}
			if !signedIn(t, admin) {
				t.Fatal("the admin's own session ended too")
			}
			// Clean up the admin's grant for the next case.
			for _, id := range f.grantsOf(t, "admin") {
				f.rest(t, "admin", http.MethodDelete, "/admin/grants/"+id, nil, nil)
			}
		})
	}
}

func TestOAuthSessionEndsWithItsAccessToken(t *testing.T) {
	f, clk := newOAuthFixture(t)
	b := f.signInOAuth(t, "acme")
	clk.Add(9 * time.Minute)
	if !signedIn(t, b) {
		t.Fatal("signed out before the token expired")
	}
	clk.Add(2 * time.Minute) // past the 10-minute access token, inside the console's hour
	if signedIn(t, b) {
		t.Fatal("the session outlived its access token")
	}
}

// TestOAuthCallbackRefusesHostileAnswers: every bad callback is a page
// with a code, never a 500, never a session, and escapes what it shows.
func TestOAuthCallbackRefusesHostileAnswers(t *testing.T) {
	f, _ := newOAuthFixture(t)
	huge := strings.Repeat("ä", 50_000)
	for _, tc := range []struct {
		name   string
		query  func(t *testing.T, fl *oauthFlow) string
		status int
		code   string
	}{
		{"forged state", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Set("state", "forged")
			return q.Encode()
		}, http.StatusBadRequest, "oauth_state_mismatch"},
		{"missing state", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Del("state")
			return q.Encode()
		}, http.StatusBadRequest, "oauth_state_mismatch"},
		{"huge Unicode state", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Set("state", huge+"\u202e")
			return q.Encode()
		}, http.StatusBadRequest, "oauth_state_mismatch"},
		{"state from another browser", func(t *testing.T, fl *oauthFlow) string {
			other := f.startOAuth(t, "globex", "approve")
			return other.callback.RawQuery // this browser's cookie, the other's state and code
		}, http.StatusBadRequest, "oauth_state_mismatch"},
		{"no code", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Del("code")
			return q.Encode()
		}, http.StatusBadRequest, "oauth_code_missing"},
		{"huge code", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Set("code", huge)
			return q.Encode()
		}, http.StatusBadRequest, "oauth_code_missing"},
		{"forged code", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Set("code", "Zm9yZ2Vk")
			return q.Encode()
		}, http.StatusBadRequest, "oauth_exchange_failed"},
		{"replayed code", func(t *testing.T, fl *oauthFlow) string {
			spent := f.startOAuth(t, "globex", "approve")
			if resp, _ := spent.finish(t, ""); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("first use: %d", resp.StatusCode)
			}
			q := fl.callback.Query()
			q.Set("code", spent.callback.Query().Get("code"))
			return q.Encode()
		}, http.StatusBadRequest, "oauth_exchange_failed"},
		{"server error with markup", func(_ *testing.T, fl *oauthFlow) string {
			return url.Values{"error": {"server_error"}, "error_description": {`<script>alert(1)</script><img src=x onerror=alert(2)>` + huge},
				"state": {fl.callback.Query().Get("state")}}.Encode()
		}, http.StatusBadRequest, "server_error"},
		{"error code with markup", func(_ *testing.T, fl *oauthFlow) string {
			return url.Values{"error": {`<b>bold</b>`}}.Encode()
		}, http.StatusBadRequest, "oauth_error"},
		{"open redirect attempt", func(_ *testing.T, fl *oauthFlow) string {
			q := fl.callback.Query()
			q.Set("state", "x")
			q.Set("next", "https://evil.example/")
			q.Set("return_to", "//evil.example")
			return q.Encode()
		}, http.StatusBadRequest, "oauth_state_mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := f.startOAuth(t, "acme", "approve")
			resp, page := fl.finish(t, tc.query(t, fl))
			m := errorCode.FindStringSubmatch(page)
			if resp.StatusCode != tc.status || m == nil || m[1] != tc.code {
				t.Fatalf("got %d %v, want %d %s", resp.StatusCode, m, tc.status, tc.code)
			}
			if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") || strings.Contains(page, "<b>bold") {
				t.Fatal("markup from the query reached the page")
			}
			if signedIn(t, fl.b) {
				t.Fatal("a refused callback signed the browser in")
			}
			// The flow is spent: its own good answer is refused now too.
			if resp, _ := fl.finish(t, ""); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("the flow's own answer after a refusal: %d", resp.StatusCode)
			}
		})
	}
}

func TestOAuthDeniedConsentSignsNobodyIn(t *testing.T) {
	f, _ := newOAuthFixture(t)
	fl := f.startOAuth(t, "acme", "deny")
	resp, page := fl.finish(t, "")
	if m := errorCode.FindStringSubmatch(page); resp.StatusCode != http.StatusForbidden || m == nil || m[1] != "access_denied" {
		t.Fatalf("denied: %d %v", resp.StatusCode, m)
	}
	if signedIn(t, fl.b) {
		t.Fatal("a denied consent signed the browser in")
	}
}

func TestOAuthCallbackNeverRedirectsElsewhere(t *testing.T) {
	f, _ := newOAuthFixture(t)
	for _, extra := range []string{"next=https://evil.example/", "return_to=%2F%2Fevil.example", "redirect_uri=https://evil.example/"} {
		t.Run(extra, func(t *testing.T) {
			fl := f.startOAuth(t, "acme", "approve")
			resp, _ := fl.finish(t, fl.callback.RawQuery+"&"+extra)
			if resp.Header.Get("Location") != "/console/overview" {
				t.Fatalf("redirected to %q", resp.Header.Get("Location"))
			}
		})
	}
}

func TestOAuthStartRefusesWithoutItsCSRFToken(t *testing.T) {
	f, _ := newOAuthFixture(t)
	for _, tc := range []struct {
		name   string
		form   url.Values
		header map[string]string
		code   int
	}{
		{"no token", url.Values{}, nil, http.StatusForbidden},
		{"forged token", url.Values{"csrf": {"forged"}}, nil, http.StatusForbidden},
		{"cross-site", url.Values{"csrf": {"forged"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := f.browser(t)
			b.get("/console/sign-in")
			if resp := b.post("/console/oauth/start", tc.form, tc.header); resp.StatusCode != tc.code || resp.Header.Get("Location") != "" {
				t.Fatalf("start: %d %q", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
}

func TestOAuthButtonOnlyWhenTheEmbeddedServerRuns(t *testing.T) {
	f := newFixture(t, console.Options{})
	b := f.browser(t)
	_, page := b.get("/console/sign-in")
	if strings.Contains(page, "oauth/start") {
		t.Fatal("an OAuth button without an authorization server")
	}
	resp, page := b.get("/console/oauth/callback?code=x&state=y")
	if m := errorCode.FindStringSubmatch(page); resp.StatusCode != http.StatusNotFound || m == nil || m[1] != "oauth_unavailable" {
		t.Fatalf("callback without OAuth: %d %v", resp.StatusCode, m)
	}
}

// TestOAuthStartStaysOnTheServersOrigin: a Host header naming another
// origin gets no client whose codes would go there.
func TestOAuthStartStaysOnTheServersOrigin(t *testing.T) {
	f, _ := newOAuthFixture(t)
	_, port, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	for _, host := range []string{"evil.example", "127.0.0.1:1", "evil.example:" + port, "ьеxample.com:" + port} {
		t.Run(host, func(t *testing.T) {
			b := f.browser(t)
			_, page := b.get("/console/sign-in")
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/console/oauth/start", strings.NewReader(url.Values{"csrf": {csrfOf(t, page)}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Host = host
			u, _ := url.Parse(f.srv.URL + "/console/")
			for _, ck := range b.c.Jar.Cookies(u) { // the jar goes by Host, which names another site here
				req.AddCookie(ck)
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusSeeOther || resp.Header.Get("Location") != "" {
				t.Fatalf("started toward %q: %q", host, resp.Header.Get("Location"))
			}
			m := errorCode.FindStringSubmatch(string(body))
			// Go's server refuses a malformed Host itself (400, plain text).
			if resp.StatusCode != http.StatusBadRequest || (m != nil && m[1] != "oauth_unavailable") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		})
	}
}
