package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server/oauth"
)

var (
	hiddenID   = regexp.MustCompile(`name="id" value="([^"]+)"`)
	hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// authServer is the embedded authorization server on a loopback port
// with one public client and one API key to consent with.
type authServer struct {
	base, clientID, apiKey string
	p                      *oauth.Provider
}

const (
	otherResource = "https://replica.example/mcp"
	clientRedir   = "http://127.0.0.1:9/cb"
)

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	db := openStore(t)
	ks := keys.New(keys.Options{Store: db})
	_, secret, err := ks.CreateKey(context.Background(), "acme", "laptop", []string{"mcp"}, keys.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var p *oauth.Provider
	base := provider(t, oauth.Options{Store: db, Keys: ks, KeyStore: db, ExtraResources: []string{otherResource}}, &p)
	a := register(t, http.DefaultClient, base, "resource test")
	if a.status != http.StatusCreated {
		t.Fatalf("register = %+v", a)
	}
	return &authServer{base: base, clientID: a.ClientID, apiKey: secret, p: p}
}

// code plays the user: authorize (with resource, unless ""), consent,
// and return the code and its PKCE verifier.
func (s *authServer) code(t *testing.T, resource string) (code, verifier string) {
	t.Helper()
	return s.authorize(t, resource).approve(t)
}

// pendingAuthorization is an authorization the user was asked to consent
// to: the consent page is shown, nothing is approved yet.
type pendingAuthorization struct {
	s                  *authServer
	c                  *http.Client
	id, csrf, verifier string
}

// authorize starts an authorization (with resource, unless "") and reads
// the consent page.
func (s *authServer) authorize(t *testing.T, resource string) *pendingAuthorization {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	cfg := &oauth2.Config{ClientID: s.clientID, RedirectURL: clientRedir, Scopes: []string{"mcp"},
		Endpoint: oauth2.Endpoint{AuthURL: s.base + "/oauth/authorize"}}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, _ := get(t, c, cfg.AuthCodeURL("st", opts...))
	page, body := get(t, c, resp.Header.Get("Location"))
	id, csrf := hiddenID.FindSubmatch(body), hiddenCSRF.FindSubmatch(body)
	if page.StatusCode != 200 || id == nil || csrf == nil {
		t.Fatalf("consent page = %d", page.StatusCode)
	}
	return &pendingAuthorization{s: s, c: c, id: string(id[1]), csrf: string(csrf[1]), verifier: verifier}
}

// approve consents with the API key and returns the code and its PKCE
// verifier.
func (a *pendingAuthorization) approve(t *testing.T) (code, verifier string) {
	t.Helper()
	resp, err := a.c.PostForm(a.s.base+"/oauth/consent", url.Values{"id": {a.id}, "csrf": {a.csrf}, "api_key": {a.s.apiKey}, "action": {"approve"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, _ = get(t, a.c, resp.Header.Get("Location"))
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Query().Get("code") == "" {
		t.Fatalf("no code: %v %v", back, err)
	}
	return back.Query().Get("code"), a.verifier
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

type tokenAnswer struct {
	status       int
	Error        string `json:"error"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

func (s *authServer) token(t *testing.T, form url.Values) tokenAnswer {
	t.Helper()
	form.Set("client_id", s.clientID)
	resp, err := http.PostForm(s.base+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a tokenAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	a.status = resp.StatusCode
	return a
}

// audience reads the aud claim of a JWT (its signature is the resource
// server's business; VerifyToken checks it below).
func audience(t *testing.T, jwt string) []string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Aud any `json:"aud"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	switch v := c.Aud.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, a := range v {
			out = append(out, a.(string))
		}
		return out
	}
	return nil
}

// TestCodeAndRefreshStayBoundToTheirResource: an authorization code is
// exchanged for a token of the resource it was issued for and no other
// (naming another is invalid_target; naming none is not "any"), and
// refreshing keeps that resource.
func TestCodeAndRefreshStayBoundToTheirResource(t *testing.T) {
	s := newAuthServer(t)
	ours := s.base + "/mcp"
	tests := []struct {
		name                string
		authorized, asked   string // the resource at /authorize, at /oauth/token ("" = none)
		refreshAsk          string // the resource of the refresh ("-" = no refresh)
		wantErr, refreshErr string
		wantAud             string
	}{
		// A refused exchange spends the code, except for a resource this
		// server knows nothing of, refused before the code is looked at:
		// the code is then good for its own resource.
		{"ours explicitly, exchanged for the other", ours, otherResource, "-", "invalid_target", "", ""},
		{"ours implicitly, exchanged for the other", "", otherResource, "-", "invalid_target", "", ""},
		{"the other, exchanged for ours", otherResource, ours, "-", "invalid_target", "", ""},
		{"the other, exchanged for an unknown one", otherResource, "https://unknown.example/mcp", "-", "invalid_target", "", otherResource},
		{"the other, exchanged naming none, refreshed for ours", otherResource, "", ours, "", "invalid_target", otherResource},
		{"the other, exchanged for itself, refreshed naming none", otherResource, otherResource, "", "", "", otherResource},
		{"ours explicitly, exchanged naming none, refreshed for the other", ours, "", otherResource, "", "invalid_target", ours},
		{"ours implicitly, exchanged for ours, refreshed for ours", "", ours, ours, "", "", ours},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, verifier := s.code(t, tt.authorized)
			form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {clientRedir}}
			if tt.asked != "" {
				form.Set("resource", tt.asked)
			}
			got := s.token(t, form)
			if tt.wantErr != "" {
				if got.status != 400 || got.Error != tt.wantErr || got.AccessToken != "" {
					t.Fatalf("exchange = %d %q (token issued: %v), want 400 %s", got.status, got.Error, got.AccessToken != "", tt.wantErr)
				}
				form.Del("resource")
				again := s.token(t, form)
				if tt.wantAud == "" && again.AccessToken != "" {
					t.Fatal("a code refused for another resource was exchanged afterwards")
				}
				if tt.wantAud != "" && (again.status != 200 || !slices.Equal(audience(t, again.AccessToken), []string{tt.wantAud})) {
					t.Fatalf("the code afterwards, naming no resource = %d %q", again.status, again.Error)
				}
				return
			}
			if got.status != 200 || !slices.Equal(audience(t, got.AccessToken), []string{tt.wantAud}) {
				t.Fatalf("exchange = %d %q, aud %v; want %s", got.status, got.Error, audience(t, got.AccessToken), tt.wantAud)
			}
			// Our resource server takes only tokens bound to it.
			_, verr := s.p.VerifyToken(context.Background(), got.AccessToken)
			if (verr == nil) != (tt.wantAud == ours) {
				t.Fatalf("VerifyToken of a token for %s: %v", tt.wantAud, verr)
			}
			if tt.refreshAsk == "-" {
				return
			}
			rform := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {got.RefreshToken}}
			if tt.refreshAsk != "" {
				rform.Set("resource", tt.refreshAsk)
			}
			ref := s.token(t, rform)
			if tt.refreshErr != "" {
				if ref.status != 400 || ref.Error != tt.refreshErr || ref.AccessToken != "" {
					t.Fatalf("refresh = %d %q, want 400 %s", ref.status, ref.Error, tt.refreshErr)
				}
				return
			}
			if ref.status != 200 || !slices.Equal(audience(t, ref.AccessToken), []string{tt.wantAud}) {
				t.Fatalf("refresh = %d %q, aud %v; want %s", ref.status, ref.Error, audience(t, ref.AccessToken), tt.wantAud)
			}
		})
	}
}
