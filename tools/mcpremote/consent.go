package mcpremote

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// PendingAuthorization is an authorization-code flow waiting for its
// callback, as the store keeps it: any process sharing the store can
// finish it. State is the SHA-256 of the state the authorization URL
// carries (the store never holds the state itself); Sealed is the flow
// (PKCE verifier, client, endpoints) sealed for the server.
type PendingAuthorization struct {
	State               []byte
	AccountID, ServerID string
	Sealed              []byte
	ExpiresAt           time.Time
}

// StateKey is how a callback's state is looked up: its SHA-256, so a
// state of any length or bytes is one fixed-size key.
func StateKey(state string) []byte {
	sum := sha256.Sum256([]byte(state))
	return sum[:]
}

// consentFlow is what the callback needs to finish an authorization,
// sealed in the store while it waits.
type consentFlow struct {
	Verifier     string   `json:"verifier"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	AuthURL      string   `json:"auth_url"`
	TokenURL     string   `json:"token_url"`
	AuthStyle    int      `json:"auth_style"`
	Scopes       []string `json:"scopes,omitempty"`
	RedirectURL  string   `json:"redirect_url"`
	Resource     string   `json:"resource"`
	Issuer       string   `json:"issuer"`
	// IssRequired: the authorization server advertises RFC 9207's iss.
	IssRequired bool `json:"iss_required,omitempty"`
}

func flowAAD(account, id string) []byte {
	return []byte("toolhost/mcp-authorization\x00" + account + "\x00" + id)
}

func (f consentFlow) config() *oauth2.Config {
	return &oauth2.Config{ClientID: f.ClientID, ClientSecret: f.ClientSecret, RedirectURL: f.RedirectURL, Scopes: f.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: f.AuthURL, TokenURL: f.TokenURL, AuthStyle: oauth2.AuthStyle(f.AuthStyle)}}
}

// checkIssuer is RFC 9207 as the go-sdk applies it: an advertised iss is
// required and must match; an unadvertised one is refused.
func (f consentFlow) checkIssuer(iss string) error {
	switch {
	case f.IssRequired && iss != f.Issuer:
		return fmt.Errorf("the authorization response's issuer %q is not %q", iss, f.Issuer)
	case !f.IssRequired && iss != "":
		return errors.New("the authorization server does not advertise the iss parameter, but the response has one")
	}
	return nil
}

// discover asks the server for its challenge and finds what the flow
// needs: the resource and its authorization server, a client, the scopes.
// It follows the go-sdk's AuthorizationCodeHandler step by step (with
// its exported pieces), which cannot hand its PKCE verifier to another
// process.
func (g *Gateway) discover(ctx context.Context, srv Server, sec Secrets, redirectURL string, hc *http.Client, guard *authGuard) (consentFlow, error) {
	challenges, err := g.challenge(ctx, srv, sec)
	if err != nil {
		return consentFlow{}, err
	}
	prm, err := resourceMetadata(ctx, challenges, srv.URL, hc)
	if err == nil {
		err = guard.failure()
	}
	if err != nil {
		return consentFlow{}, err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], hc)
	if err == nil {
		err = guard.failure()
	}
	if err != nil {
		return consentFlow{}, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		// The 2025-03-26 fallback: endpoints at fixed paths.
		base := prm.AuthorizationServers[0]
		asm = &oauthex.AuthServerMeta{Issuer: base, AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", RegistrationEndpoint: base + "/register"}
	}
	f := consentFlow{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, RedirectURL: redirectURL,
		Resource: prm.Resource, Issuer: asm.Issuer, IssRequired: asm.AuthorizationResponseIssParameterSupported}
	if err := register(ctx, &f, asm, srv, sec, hc); err != nil {
		return consentFlow{}, err
	}
	if err := guard.failure(); err != nil {
		return consentFlow{}, err
	}
	f.Scopes = scopesOf(challenges)
	if len(f.Scopes) == 0 {
		f.Scopes = prm.ScopesSupported
	}
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(f.Scopes, "offline_access") {
		f.Scopes = append(f.Scopes, "offline_access")
	}
	return f, nil
}

// challenge opens a session with the server without a token, as the
// go-sdk's client does (initialize, then initialized), and returns the
// challenges of the first answer that asks for authorization: a 401, or
// a 403 insufficient_scope. ErrNoChallenge when the session opens.
func (g *Gateway) challenge(ctx context.Context, srv Server, sec Secrets) ([]oauthex.Challenge, error) {
	at := &authTransport{base: g.transport, headers: headerSet(sec.Headers), maxBody: g.opts.MaxResultBytes}
	ct := &challengeCatcher{base: at}
	client := sdk.NewClient(&sdk.Implementation{Name: "toolhost", Version: g.opts.Version}, nil)
	sess, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: ct}, MaxRetries: -1}, nil)
	if err == nil {
		_ = sess.Close()
	}
	ct.mu.Lock()
	h, caught := ct.header, ct.caught
	ct.mu.Unlock()
	switch {
	case caught:
		cs, perr := oauthex.ParseWWWAuthenticate(h)
		if perr != nil {
			return nil, fmt.Errorf("the MCP server's WWW-Authenticate: %w", perr)
		}
		return cs, nil
	case err == nil:
		return nil, ErrNoChallenge
	}
	return nil, fmt.Errorf("reach the MCP server: %w", err)
}

// errChallenged ends the session attempt of challenge at its first
// challenge.
var errChallenged = errors.New("the MCP server asks for authorization")

// challengeCatcher keeps the WWW-Authenticate of the first answer that
// asks for authorization and fails that request.
type challengeCatcher struct {
	base   http.RoundTripper
	mu     sync.Mutex
	header []string
	caught bool
}

func (c *challengeCatcher) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	h := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden && insufficientScope(h) {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		c.mu.Lock()
		if !c.caught {
			c.header, c.caught = h, true
		}
		c.mu.Unlock()
		return nil, errChallenged
	}
	return resp, nil
}

func insufficientScope(h []string) bool {
	cs, err := oauthex.ParseWWWAuthenticate(h)
	return err == nil && errorOf(cs) == "insufficient_scope"
}

// resourceMetadata finds the protected resource metadata where the MCP
// specification says to look (the challenge's resource_metadata, then
// the well-known paths); without any, the server's origin is its own
// authorization server (2025-03-26).
func resourceMetadata(ctx context.Context, cs []oauthex.Challenge, serverURL string, hc *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	type try struct{ url, resource string }
	var tries []try
	for _, c := range cs {
		if u := c.Params["resource_metadata"]; u != "" {
			tries = append(tries, try{u, serverURL})
			break
		}
	}
	ru, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("the MCP server's URL: %w", err)
	}
	mu := *ru
	mu.RawQuery, mu.Fragment = "", ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	tries = append(tries, try{mu.String(), serverURL})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	tries = append(tries, try{mu.String(), root.String()})
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.url, t.resource, hc)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("the protected resource metadata names no authorization server")
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: serverURL}, nil
}

// register sets the flow's client: the server's pre-registered client_id
// (and secret), else one registered dynamically.
func register(ctx context.Context, f *consentFlow, asm *oauthex.AuthServerMeta, srv Server, sec Secrets, hc *http.Client) error {
	if srv.Auth.ClientID != "" {
		f.ClientID, f.ClientSecret = srv.Auth.ClientID, sec.ClientSecret
		f.AuthStyle = int(oauth2.AuthStyleAutoDetect)
		for _, m := range []string{"client_secret_post", "client_secret_basic"} {
			if slices.Contains(asm.TokenEndpointAuthMethodsSupported, m) {
				f.AuthStyle = int(authStyle(m))
				break
			}
		}
		return nil
	}
	if asm.RegistrationEndpoint == "" {
		return errors.New("the authorization server has no dynamic client registration and the MCP server has no client_id")
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		ClientName: "toolhost", RedirectURIs: []string{f.RedirectURL},
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, hc)
	if err != nil {
		return fmt.Errorf("register a client: %w", err)
	}
	f.ClientID, f.ClientSecret, f.AuthStyle = reg.ClientID, reg.ClientSecret, int(authStyle(reg.TokenEndpointAuthMethod))
	return nil
}

func authStyle(method string) oauth2.AuthStyle {
	if method == "client_secret_post" || method == "none" {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

func scopesOf(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

func errorOf(cs []oauthex.Challenge) string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") {
			return c.Params["error"]
		}
	}
	return ""
}
