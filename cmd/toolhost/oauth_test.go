package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// oauthReplica starts a server (not --dev) with an auth.oauth section.
func oauthReplica(t *testing.T, bin string, oauthCfg map[string]any, args ...string) (*replica, string) {
	t.Helper()
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]any{"auth": map[string]any{"oauth": oauthCfg}})
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, bin, append([]string{"--data", dir, "--config", cfg}, args...)...)
	return r, bootstrapSecret(t, r)
}

var (
	hiddenID   = regexp.MustCompile(`name="id" value="([^"]+)"`)
	hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// noRedirect is a browser stand-in: it keeps cookies and shows every
// redirect to the test instead of following it.
func noRedirect() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// consent plays the user: it opens the authorization URL, follows the
// server's redirects to the consent page, submits the form with apiKey and
// returns the final redirect to the client (code and state, or an error).
func consent(t *testing.T, authURL, apiKey string) *url.URL {
	t.Helper()
	c := noRedirect()
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasSuffix(loc.Path, "/oauth/consent") {
		if loc != nil {
			return loc // an error redirected to the client
		}
		t.Fatalf("authorize = %d, want a redirect to the consent page", resp.StatusCode)
	}
	resp, err = c.Get(loc.String())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id, csrf := hiddenID.FindSubmatch(page), hiddenCSRF.FindSubmatch(page)
	if resp.StatusCode != 200 || id == nil || csrf == nil {
		t.Fatalf("consent page = %d:\n%s", resp.StatusCode, page)
	}
	resp, err = c.PostForm(loc.Scheme+"://"+loc.Host+"/oauth/consent", url.Values{
		"id": {string(id[1])}, "csrf": {string(csrf[1])}, "api_key": {apiKey}, "action": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	next, _ := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || next == nil {
		t.Fatalf("consent submit = %d", resp.StatusCode)
	}
	resp, err = c.Get(next.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := resp.Location()
	if back == nil {
		t.Fatalf("callback = %d without a redirect", resp.StatusCode)
	}
	return back
}

func TestOAuthGoSDKClientAuthorizesRefreshesAndIsRevoked(t *testing.T) {
	bin := buildBinary(t)
	r, admin := oauthReplica(t, bin, map[string]any{"access_token_ttl": "2s"})
	base := "http://" + r.addr
	userKey := createKey(t, r, admin, "acme", map[string]any{"calls_per_minute": 2})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const redirect = "http://127.0.0.1:9/callback" // never contacted: the fetcher reads the redirect
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "go-sdk e2e", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			back := consent(t, args.URL, userKey)
			q := back.Query()
			if q.Get("error") != "" {
				return nil, fmt.Errorf("authorization refused: %s %s", q.Get("error"), q.Get("error_description"))
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "oauth-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("connect with OAuth: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list = %v, %v", tools, err)
	}
	call := func() *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 6}})
		if err != nil {
			t.Fatalf("tools/call: %v", err)
		}
		return res
	}
	if res := call(); res.IsError {
		t.Fatalf("roll_dice failed: %+v", res.Content)
	}
	ts, err := handler.TokenSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := ts.Token()
	if err != nil || first.RefreshToken == "" {
		t.Fatalf("token = %+v, %v; want a refresh token", first, err)
	}

	// The access token expires: refused with invalid_token ...
	time.Sleep(2500 * time.Millisecond)
	resp := rawMCP(t, base, first.AccessToken)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("expired token = %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// ... and the client refreshes: a new access token and a rotated
	// refresh token.
	if res := call(); res.IsError {
		t.Fatalf("roll_dice after expiry failed: %+v", res.Content)
	}
	second, err := ts.Token()
	if err != nil || second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
		t.Fatalf("after refresh: %+v, %v", second, err)
	}

	// The calls count against the limits of the key the user signed in
	// with: its two calls per minute are used up.
	if code, _ := errorCode(call()); code != "rate_limited" {
		t.Fatalf("third call in a minute on a 2/min key: code %q, want rate_limited", code)
	}
	// The calls are in the journal under the account and key of the grant,
	// and the token reads that account's journal (and only it).
	current, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	keyList := apiJSON(t, "GET", base+"/admin/keys?account=acme", admin, nil, 200)
	keyID := keyList["data"].([]any)[0].(map[string]any)["id"].(string)
	recs := apiJSON(t, "GET", base+"/tool-executions?session_id="+url.QueryEscape(cs.ID()), current.AccessToken, nil, 200)
	rows, _ := recs["data"].([]any)
	if len(rows) < 2 {
		t.Fatalf("journal of the OAuth session = %v", recs)
	}
	for _, row := range rows {
		rec := row.(map[string]any)
		if rec["account_id"] != "acme" || rec["key_id"] != keyID || rec["face"] != "mcp" || rec["caller_slot"] != nil {
			t.Fatalf("journal record = %v, want account acme, key %s", rec, keyID)
		}
	}
	if other := apiJSON(t, "GET", base+"/tool-executions?session_id="+url.QueryEscape(cs.ID()), admin, nil, 200); len(other["data"].([]any)) != 0 {
		t.Fatalf("the admin account sees acme's records: %v", other)
	}

	// The grant is listed and, once revoked, refused at once.
	list := apiJSON(t, "GET", base+"/admin/grants?account=acme", admin, nil, 200)
	data, _ := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("grants = %v", list)
	}
	g := data[0].(map[string]any)
	if g["client_name"] != "go-sdk e2e" || fmt.Sprint(g["scopes"]) != "[mcp]" || g["resource"] != base+"/mcp" {
		t.Fatalf("grant = %v", g)
	}
	apiJSON(t, "DELETE", base+"/admin/grants/"+g["id"].(string), admin, nil, 200)
	resp = rawMCP(t, base, second.AccessToken)
	if resp.StatusCode != 401 {
		t.Fatalf("token of a revoked grant = %d", resp.StatusCode)
	}
	// The API key itself works exactly as before.
	resp = rawMCP(t, base, userKey)
	if resp.StatusCode != 200 {
		t.Fatalf("API key after the grant was revoked = %d", resp.StatusCode)
	}
}

// rawMCP posts an initialize request with a bearer token.
func rawMCP(t *testing.T, base, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// oauthClient registers a public client and returns its oauth2 config.
func oauthClient(t *testing.T, base, redirect string, scopes ...string) *oauth2.Config {
	t.Helper()
	out := postJSON(t, base+"/oauth/register", map[string]any{
		"client_name": "manual", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"}, 201)
	return &oauth2.Config{ClientID: out["client_id"].(string), RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth/authorize", TokenURL: base + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
}

func postJSON(t *testing.T, u string, body any, want int) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(u, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		t.Fatalf("POST %s = %d %v, want %d", u, resp.StatusCode, out, want)
	}
	return out
}

// tokenError posts a token request and returns the RFC 6749 error code.
func tokenError(t *testing.T, base string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(base+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Error
}

func TestOAuthRefusals(t *testing.T) {
	bin := buildBinary(t)
	r, admin := oauthReplica(t, bin, map[string]any{})
	base := "http://" + r.addr
	mcpKey := createKey(t, r, admin, "acme", nil)
	const redirect = "http://127.0.0.1:9/cb"
	cfg := oauthClient(t, base, redirect, "mcp")
	ctx := context.Background()

	authorize := func(t *testing.T, opts ...oauth2.AuthCodeOption) (*url.URL, string) {
		verifier := oauth2.GenerateVerifier()
		back := consent(t, cfg.AuthCodeURL("st-1", append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, opts...)...), mcpKey)
		return back, verifier
	}
	errorOf := func(t *testing.T, authURL string) string {
		c := noRedirect()
		resp, err := c.Get(authURL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := resp.Location()
		if loc == nil {
			return fmt.Sprintf("status %d", resp.StatusCode)
		}
		if !strings.HasPrefix(loc.String(), redirect) {
			return "redirected to " + loc.String()
		}
		return loc.Query().Get("error")
	}

	t.Run("missing PKCE", func(t *testing.T) {
		if got := errorOf(t, cfg.AuthCodeURL("s")); got != "invalid_request" {
			t.Fatalf("error = %q, want invalid_request", got)
		}
	})
	t.Run("plain PKCE", func(t *testing.T) {
		u := cfg.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", strings.Repeat("a", 43)), oauth2.SetAuthURLParam("code_challenge_method", "plain"))
		if got := errorOf(t, u); got != "invalid_request" {
			t.Fatalf("error = %q, want invalid_request", got)
		}
	})
	t.Run("redirect URI mismatch is never redirected to", func(t *testing.T) {
		other := *cfg
		other.RedirectURL = "https://attacker.example/cb"
		got := errorOf(t, other.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if strings.HasPrefix(got, "redirected") || got == "" {
			t.Fatalf("mismatched redirect_uri: %s", got)
		}
		// Another path on the registered loopback host is a mismatch too;
		// only the port may vary (RFC 8252).
		other.RedirectURL = "http://127.0.0.1:9/other"
		if got := errorOf(t, other.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))); strings.HasPrefix(got, "redirected") {
			t.Fatalf("other path: %s", got)
		}
		other.RedirectURL = "http://127.0.0.1:4567/cb"
		if back, _ := authorizeWith(t, &other, mcpKey); back.Query().Get("code") == "" {
			t.Fatalf("loopback redirect on another port refused: %v", back)
		}
	})
	t.Run("unknown resource", func(t *testing.T) {
		resp, err := noRedirect().Get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("resource", "http://127.0.0.1:1/mcp")))
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != 400 || out.Error != "invalid_target" {
			t.Fatalf("unknown resource = %d %q", resp.StatusCode, out.Error)
		}
	})
	t.Run("replayed code revokes the grant", func(t *testing.T) {
		back, verifier := authorize(t)
		code := back.Query().Get("code")
		if code == "" || back.Query().Get("state") != "st-1" {
			t.Fatalf("redirect = %v", back)
		}
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		status, e := tokenError(t, base, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"client_id": {cfg.ClientID}, "redirect_uri": {redirect}})
		if status != 400 || e != "invalid_grant" {
			t.Fatalf("replayed code = %d %q", status, e)
		}
		if resp := rawMCP(t, base, tok.AccessToken); resp.StatusCode != 401 {
			t.Fatalf("token of a replayed code = %d", resp.StatusCode)
		}
	})
	t.Run("wrong PKCE verifier", func(t *testing.T) {
		back, _ := authorize(t)
		status, e := tokenError(t, base, url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
			"code_verifier": {oauth2.GenerateVerifier()}, "client_id": {cfg.ClientID}, "redirect_uri": {redirect}})
		if status != 400 || e != "invalid_grant" {
			t.Fatalf("wrong verifier = %d %q", status, e)
		}
	})
	t.Run("the user denies", func(t *testing.T) {
		c := noRedirect()
		resp, _ := c.Get(cfg.AuthCodeURL("st-deny", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		resp.Body.Close()
		loc, _ := resp.Location()
		resp, _ = c.Get(loc.String())
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp, err := c.PostForm(base+"/oauth/consent", url.Values{"id": {string(hiddenID.FindSubmatch(page)[1])},
			"csrf": {string(hiddenCSRF.FindSubmatch(page)[1])}, "action": {"deny"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back, _ := resp.Location()
		if back == nil || !strings.HasPrefix(back.String(), redirect) || back.Query().Get("error") != "access_denied" || back.Query().Get("state") != "st-deny" {
			t.Fatalf("deny = %d %v", resp.StatusCode, back)
		}
	})
	t.Run("CSRF token missing", func(t *testing.T) {
		c := noRedirect()
		resp, _ := c.Get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		resp.Body.Close()
		loc, _ := resp.Location()
		resp, _ = c.Get(loc.String())
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := hiddenID.FindSubmatch(page)
		for name, form := range map[string]url.Values{
			"missing": {"id": {string(id[1])}, "api_key": {mcpKey}, "action": {"approve"}},
			"forged":  {"id": {string(id[1])}, "csrf": {"x"}, "api_key": {mcpKey}, "action": {"approve"}},
		} {
			resp, err := c.PostForm(base+"/oauth/consent", form)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Fatalf("%s CSRF token = %d", name, resp.StatusCode)
			}
		}
	})
	t.Run("scope escalation on refresh", func(t *testing.T) {
		back, verifier := authorize(t)
		tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		status, e := tokenError(t, base, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken},
			"client_id": {cfg.ClientID}, "scope": {"mcp hosted"}})
		if status != 400 || e != "invalid_scope" {
			t.Fatalf("escalation = %d %q", status, e)
		}
		// Revocation (RFC 7009) of the refresh token ends the grant.
		resp, err := http.PostForm(base+"/oauth/revoke", url.Values{"token": {tok.RefreshToken}, "client_id": {cfg.ClientID}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("revoke = %d", resp.StatusCode)
		}
		if resp := rawMCP(t, base, tok.AccessToken); resp.StatusCode != 401 {
			t.Fatalf("access token after its refresh token was revoked = %d", resp.StatusCode)
		}
	})
	t.Run("reused refresh token", func(t *testing.T) {
		back, verifier := authorize(t)
		tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {cfg.ClientID}}
		if status, e := tokenError(t, base, form); status != 200 {
			t.Fatalf("first refresh = %d %q", status, e)
		}
		if status, e := tokenError(t, base, form); status != 400 || e != "invalid_grant" {
			t.Fatalf("second use of one refresh token = %d %q", status, e)
		}
	})
	t.Run("a token lacking the route's scope is 403 insufficient_scope", func(t *testing.T) {
		back, verifier := authorize(t)
		tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != 403 || !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="hosted"`) {
			t.Fatalf("/v1 with an mcp-only token = %d %q", resp.StatusCode, h)
		}
	})
	t.Run("a token with the hosted scope reaches /v1", func(t *testing.T) {
		both := oauthClient(t, base, redirect, "mcp", "hosted")
		back, verifier := authorizeWith(t, both, mcpKey)
		tok, err := both.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Past authentication: the empty request itself is what is refused.
		if resp.StatusCode != 400 || strings.Contains(string(body), "scope") {
			t.Fatalf("/v1 with a hosted token = %d %s", resp.StatusCode, body)
		}
	})
	t.Run("hostile registrations", func(t *testing.T) {
		for name, body := range map[string]string{
			"duplicate key":     `{"redirect_uris":["http://127.0.0.1/cb"],"redirect_uris":["https://evil.example/cb"]}`,
			"http non-loopback": `{"redirect_uris":["http://evil.example/cb"]}`,
			"javascript":        `{"redirect_uris":["javascript:alert(1)"]}`,
			"fragment":          `{"redirect_uris":["https://app.example/cb#x"]}`,
			"bidi name":         `{"redirect_uris":["https://app.example/cb"],"client_name":"safe\u202eexe.app"}`,
			"no redirect":       `{"client_name":"x"}`,
			"nested junk":       `{"redirect_uris":["https://app.example/cb"],"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
			"huge":              `{"redirect_uris":["https://app.example/` + strings.Repeat("a", 20000) + `"]}`,
		} {
			resp, err := http.Post(base+"/oauth/register", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var out struct{ Error string }
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if resp.StatusCode != 400 || (out.Error != "invalid_client_metadata" && out.Error != "invalid_redirect_uri") {
				t.Errorf("%s: %d %q", name, resp.StatusCode, out.Error)
			}
		}
	})
	t.Run("a burst of registrations is limited", func(t *testing.T) {
		// At most 10 a minute from one address (the default), whatever
		// the subtests above registered: of 15 at once, 5 or more are 429.
		refused := 0
		for range 15 {
			resp, err := http.Post(base+"/oauth/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`))
			if err != nil {
				t.Fatal(err)
			}
			var out struct{ Error string }
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			switch {
			case resp.StatusCode == 201:
			case resp.StatusCode == 429 && out.Error == "temporarily_unavailable" && resp.Header.Get("Retry-After") != "":
				refused++
			default:
				t.Fatalf("registration in a burst: %d %q Retry-After %q", resp.StatusCode, out.Error, resp.Header.Get("Retry-After"))
			}
		}
		if refused < 5 {
			t.Fatalf("%d of 15 registrations refused, want 5 or more", refused)
		}
		// The client registered before the burst still works.
		if back, _ := authorizeWith(t, cfg, mcpKey); back.Query().Get("code") == "" {
			t.Fatalf("the client registered before the burst: %v", back)
		}
	})
}

func authorizeWith(t *testing.T, cfg *oauth2.Config, key string, opts ...oauth2.AuthCodeOption) (*url.URL, string) {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	return consent(t, cfg.AuthCodeURL("st", append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, opts...)...), key), verifier
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestOAuthExternalIssuer runs toolhost A with toolhost B as its external
// authorization server: A validates B's JWTs (JWKS discovered from B's
// metadata), requires aud = A's resource and maps sub to A's account.
func TestOAuthExternalIssuer(t *testing.T) {
	bin := buildBinary(t)
	addrA := freeAddr(t)
	resourceA := "http://" + addrA + "/mcp"
	b, adminB := oauthReplica(t, bin, map[string]any{"extra_resources": []string{resourceA}})
	baseB := "http://" + b.addr
	a, adminA := oauthReplica(t, bin, map[string]any{"issuer": baseB}, "--addr", addrA)
	baseA := "http://" + a.addr

	prm := apiJSON(t, "GET", baseA+"/.well-known/oauth-protected-resource/mcp", "", nil, 200)
	if fmt.Sprint(prm["authorization_servers"]) != "["+baseB+"]" || prm["resource"] != resourceA {
		t.Fatalf("A's resource metadata = %v", prm)
	}
	// A runs no authorization server of its own.
	if resp, err := http.Get(baseA + "/.well-known/oauth-authorization-server"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("A's own AS metadata = %v %v", resp.StatusCode, err)
	}
	keyB := createKey(t, b, adminB, "acme", nil)
	createKey(t, a, adminA, "acme", nil)
	strangerB := createKey(t, b, adminB, "stranger", nil)
	cfg := oauthClient(t, baseB, "http://127.0.0.1:9/cb", "mcp")
	exchange := func(t *testing.T, key string, opts ...oauth2.AuthCodeOption) *oauth2.Token {
		back, verifier := authorizeWith(t, cfg, key, opts...)
		tok, err := cfg.Exchange(context.Background(), back.Query().Get("code"), append([]oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}, opts...)...)
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		return tok
	}
	forA := oauth2.SetAuthURLParam("resource", resourceA)

	tok := exchange(t, keyB, forA)
	cs := mcpSession(t, a.addr, tok.AccessToken)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 6}})
	if err != nil || res.IsError {
		t.Fatalf("call on A with B's token: %v %+v", err, res)
	}

	// A token B bound to itself (no resource: B's own /mcp) is for another
	// audience.
	own := exchange(t, keyB)
	resp := rawMCP(t, baseA, own.AccessToken)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("wrong audience on A = %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := rawMCP(t, baseB, own.AccessToken); resp.StatusCode != 200 {
		t.Fatalf("B's own token on B = %d", resp.StatusCode)
	}
	// An account A does not know has no key there to act under.
	if resp := rawMCP(t, baseA, exchange(t, strangerB, forA).AccessToken); resp.StatusCode != 401 {
		t.Fatalf("unknown account on A = %d", resp.StatusCode)
	}
	// A forged token (signed by nobody B knows) is refused.
	parts := strings.Split(tok.AccessToken, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	if resp := rawMCP(t, baseA, forged); resp.StatusCode != 401 {
		t.Fatalf("forged signature on A = %d", resp.StatusCode)
	}
}

// TestOAuthClientIDMetadataDocument: the go-sdk client uses an https URL
// as its client_id (MCP 2025-11-25) instead of registering; the server
// fetches the document, checks it names itself, and shows its name.
func TestOAuthClientIDMetadataDocument(t *testing.T) {
	bin := buildBinary(t)
	const redirect = "http://127.0.0.1:9/callback"
	var docURL string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := docURL
		if r.URL.Path == "/liar.json" {
			id = "https://elsewhere.example/client.json"
		}
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_name": "CIMD client",
			"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}})
	}))
	defer docs.Close()
	docURL = docs.URL + "/client.json"
	// The server under test trusts the document server's certificate.
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile)

	r, admin := oauthReplica(t, bin, map[string]any{"client_metadata_private_hosts": true})
	base := "http://" + r.addr
	meta := apiJSON(t, "GET", base+"/.well-known/oauth-authorization-server", "", nil, 200)
	if meta["client_id_metadata_document_supported"] != true {
		t.Fatalf("metadata = %v", meta)
	}
	userKey := createKey(t, r, admin, "acme", nil)
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
		RedirectURL:                    redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			q := consent(t, args.URL, userKey).Query()
			if q.Get("error") != "" {
				return nil, fmt.Errorf("authorization refused: %s %s", q.Get("error"), q.Get("error_description"))
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cimd-e2e", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("connect with a client metadata document: %v", err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "roll_dice", Arguments: map[string]any{"sides": 6}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	list := apiJSON(t, "GET", base+"/admin/grants?account=acme", admin, nil, 200)
	g := list["data"].([]any)[0].(map[string]any)
	if g["client_id"] != docURL || g["client_name"] != "CIMD client" {
		t.Fatalf("grant = %v", g)
	}

	// A document that names another client_id is refused before any page.
	authURL := base + "/oauth/authorize?" + url.Values{"client_id": {docs.URL + "/liar.json"}, "redirect_uri": {redirect},
		"response_type": {"code"}, "scope": {"mcp"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
		"code_challenge_method": {"S256"}}.Encode()
	resp, err := noRedirect().Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc, _ := resp.Location(); loc != nil && strings.Contains(loc.Path, "consent") || resp.StatusCode == 200 {
		t.Fatalf("a lying document = %d %v", resp.StatusCode, loc)
	}
}

// Without client_metadata_private_hosts, a document on a loopback address
// is never fetched (the fetch is an SSRF surface).
func TestOAuthClientMetadataDocumentsOnPrivateAddressesAreRefused(t *testing.T) {
	bin := buildBinary(t)
	fetched := make(chan struct{}, 1)
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched <- struct{}{}
	}))
	defer docs.Close()
	r, _ := oauthReplica(t, bin, map[string]any{})
	authURL := "http://" + r.addr + "/oauth/authorize?" + url.Values{"client_id": {docs.URL + "/client.json"},
		"redirect_uri": {"http://127.0.0.1:9/cb"}, "response_type": {"code"}, "scope": {"mcp"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}.Encode()
	resp, err := noRedirect().Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("a document on loopback = %d", resp.StatusCode)
	}
	select {
	case <-fetched:
		t.Fatal("the server fetched a document from a loopback address")
	default:
	}
}
