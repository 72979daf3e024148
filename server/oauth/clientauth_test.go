package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server/oauth"
)

// confidential registers a client that authenticates with a secret
// (method client_secret_basic or client_secret_post) and returns its id
// and secret.
func confidential(t *testing.T, base, method string) (id, secret string) {
	t.Helper()
	body := `{"client_name":"confidential","redirect_uris":["` + clientRedir + `"],"token_endpoint_auth_method":"` + method + `"}`
	resp, err := http.Post(base+"/oauth/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusCreated || a.ClientSecret == "" {
		t.Fatalf("register %s = %d %+v %v", method, resp.StatusCode, a, err)
	}
	return a.ClientID, a.ClientSecret
}

// tokenCall is one request to the token endpoint: the form, and the
// client credentials in the Authorization header when basicID is set.
type tokenCall struct {
	form               url.Values
	basicID, basicPass string
}

type tokenReply struct {
	status          int
	wwwAuthenticate string
	Error           string `json:"error"`
	Description     string `json:"error_description"`
	RefreshToken    string `json:"refresh_token"`
}

func postToken(t *testing.T, base string, c tokenCall) tokenReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/oauth/token", strings.NewReader(c.form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.basicID != "" {
		req.SetBasicAuth(url.QueryEscape(c.basicID), url.QueryEscape(c.basicPass))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r tokenReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("token answer: %v", err)
	}
	r.status, r.wwwAuthenticate = resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	return r
}

// form is a token request form from key/value pairs.
func form(kv ...string) url.Values {
	f := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

// A client that fails to authenticate at the token endpoint — unknown,
// registration expired and purged, wrong or missing secret, no client_id
// at all — is answered 401 invalid_client (RFC 6749 §5.2), with
// WWW-Authenticate when it sent its credentials in the Authorization
// header, before its code or refresh token is looked at: the code is not
// spent, and its client exchanges it afterwards. An authenticated client
// with a bad, reused or another client's code or refresh token still gets
// 400 invalid_grant. The MCP SDKs register again on invalid_client and
// only drop their tokens on invalid_grant, so an expired registration
// must be invalid_client.
func TestTokenEndpointAnswersInvalidClientBeforeLookingAtTheGrant(t *testing.T) {
	for name, db := range grantStores(t) {
		t.Run(name, func(t *testing.T) {
			clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
			// Short lifetimes, so that a client's registration expires
			// within the test: its tokens last 2 hours, then it is idle.
			ks := keys.New(keys.Options{Store: db, Now: clk.now})
			t.Cleanup(ks.Close)
			_, apiKey, err := ks.CreateKey(t.Context(), "acme", "laptop", []string{"mcp"}, keys.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var p *oauth.Provider
			base := provider(t, oauth.Options{Store: db, Keys: ks, KeyStore: db, Now: clk.now,
				AccessTokenTTL: time.Hour, RefreshTokenTTL: 2 * time.Hour, IdleClientTTL: time.Hour}, &p)
			client := func(name string) *authServer {
				t.Helper()
				a := register(t, http.DefaultClient, base, name)
				if a.status != http.StatusCreated {
					t.Fatalf("register = %+v", a)
				}
				oauth.WaitForPurge(p)
				return &authServer{base: base, clientID: a.ClientID, apiKey: apiKey, p: p}
			}
			s, gone := client("stays"), client("expires")
			live := s.exchange(t)
			rotated := s.exchange(t)
			if r := s.refresh(t, rotated.RefreshToken); r.status != http.StatusOK {
				t.Fatalf("refresh = %d %q", r.status, r.Error)
			}
			// gone authorizes once and is not used again: once its refresh
			// token has expired and it has been idle for an hour, the purge
			// deletes it. s refreshes meanwhile and stays.
			stale := gone.exchange(t)
			clk.add(90 * time.Minute)
			if live = s.refresh(t, live.RefreshToken); live.status != http.StatusOK {
				t.Fatalf("refresh = %d %q", live.status, live.Error)
			}
			oauth.WaitForPurge(p)
			clk.add(91 * time.Minute)
			client("starts a purge")
			if _, err := db.Client(t.Context(), gone.clientID); err == nil {
				t.Fatal("the idle client was not purged")
			}
			if _, err := db.Client(t.Context(), s.clientID); err != nil {
				t.Fatalf("the client in use was purged: %v", err)
			}
			basicID, basicSecret := confidential(t, base, "client_secret_basic")
			postID, postSecret := confidential(t, base, "client_secret_post")
			code, verifier := s.code(t, "") // the public client's, unspent
			codeForm := func(clientID string) url.Values {
				return form("grant_type", "authorization_code", "code", code, "code_verifier", verifier, "redirect_uri", clientRedir, "client_id", clientID)
			}
			refreshForm := func(clientID, token string) url.Values {
				return form("grant_type", "refresh_token", "refresh_token", token, "client_id", clientID)
			}
			tests := []struct {
				name         string
				call         tokenCall
				status       int
				err          string
				wwwAuthBasic bool
			}{
				{"unknown client_id, a real code", tokenCall{form: codeForm("client_never_registered")}, 401, "invalid_client", false},
				{"unknown client_id, a bogus code", tokenCall{form: form("grant_type", "authorization_code", "code", "x", "code_verifier", verifier,
					"redirect_uri", clientRedir, "client_id", "client_never_registered")}, 401, "invalid_client", false},
				{"unknown client_id, a refresh token", tokenCall{form: refreshForm("client_never_registered", live.RefreshToken)}, 401, "invalid_client", false},
				{"expired and purged client, its refresh token", tokenCall{form: refreshForm(gone.clientID, stale.RefreshToken)}, 401, "invalid_client", false},
				{"expired and purged client, a real code", tokenCall{form: codeForm(gone.clientID)}, 401, "invalid_client", false},
				{"no client_id", tokenCall{form: form("grant_type", "refresh_token", "refresh_token", live.RefreshToken)}, 401, "invalid_client", false},
				{"an empty client_id", tokenCall{form: refreshForm("", live.RefreshToken)}, 401, "invalid_client", false},
				{"a huge client_id", tokenCall{form: refreshForm(strings.Repeat("c", 60<<10), live.RefreshToken)}, 401, "invalid_client", false},
				{"a client_id of control and bidi characters", tokenCall{form: refreshForm("client_\u202e\x00", live.RefreshToken)}, 401, "invalid_client", false},
				{"wrong secret in the header", tokenCall{form: form("grant_type", "refresh_token", "refresh_token", "x"), basicID: basicID, basicPass: "wrong"},
					401, "invalid_client", true},
				{"unknown client in the header", tokenCall{form: form("grant_type", "refresh_token", "refresh_token", "x"), basicID: "client_nobody", basicPass: "x"},
					401, "invalid_client", true},
				{"a secret client without its secret", tokenCall{form: refreshForm(basicID, "x")}, 401, "invalid_client", false},
				{"wrong secret in the form", tokenCall{form: func() url.Values {
					f := refreshForm(postID, "x")
					f.Set("client_secret", postSecret+"x")
					return f
				}()}, 401, "invalid_client", false},
				// Authenticated: the grant itself is what is refused.
				{"right secret in the header, bogus refresh token", tokenCall{form: form("grant_type", "refresh_token", "refresh_token", "x"),
					basicID: basicID, basicPass: basicSecret}, 400, "invalid_grant", false},
				{"right secret in the form, bogus code", tokenCall{form: func() url.Values {
					f := form("grant_type", "authorization_code", "code", "x", "code_verifier", verifier, "redirect_uri", clientRedir, "client_id", postID)
					f.Set("client_secret", postSecret)
					return f
				}()}, 400, "invalid_grant", false},
				{"known public client, bogus refresh token", tokenCall{form: refreshForm(s.clientID, "x")}, 400, "invalid_grant", false},
				{"known public client, rotated refresh token", tokenCall{form: refreshForm(s.clientID, rotated.RefreshToken)}, 400, "invalid_grant", false},
				{"another client's refresh token", tokenCall{form: func() url.Values {
					f := refreshForm(postID, live.RefreshToken)
					f.Set("client_secret", postSecret)
					return f
				}()}, 400, "invalid_grant", false},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := postToken(t, base, tt.call)
					if r.status != tt.status || r.Error != tt.err {
						t.Fatalf("= %d %q (%s), want %d %q", r.status, r.Error, r.Description, tt.status, tt.err)
					}
					if got := strings.HasPrefix(r.wwwAuthenticate, "Basic "); got != tt.wwwAuthBasic {
						t.Errorf("WWW-Authenticate %q, want a Basic challenge: %v", r.wwwAuthenticate, tt.wwwAuthBasic)
					}
				})
			}
			// The code the failed exchanges named is still its client's.
			if r := postToken(t, base, tokenCall{form: codeForm(s.clientID)}); r.status != http.StatusOK || r.RefreshToken == "" {
				t.Fatalf("the code after failed client authentications = %d %q (%s): it was spent", r.status, r.Error, r.Description)
			}
			// And the live grant survived the other clients' attempts.
			if r := s.refresh(t, live.RefreshToken); r.status != http.StatusOK {
				t.Fatalf("the live refresh token after the attempts = %d %q", r.status, r.Error)
			}
			// The confidential client with its secret gets through.
			cs := &authServer{base: base, clientID: basicID, apiKey: apiKey, p: p}
			c, v := cs.code(t, "")
			ok := postToken(t, base, tokenCall{form: form("grant_type", "authorization_code", "code", c, "code_verifier", v, "redirect_uri", clientRedir),
				basicID: basicID, basicPass: basicSecret})
			if ok.status != http.StatusOK || ok.RefreshToken == "" {
				t.Fatalf("the basic client's exchange = %d %q (%s)", ok.status, ok.Error, ok.Description)
			}
		})
	}
}
