package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// AuthorizeTimeout is how long an authorization URL waits for the user.
const AuthorizeTimeout = 10 * time.Minute

// Errors of the authorization-code flow.
var (
	// ErrNotAuthorized: an oauth_authorization_code server nobody has
	// authorized yet (or whose grant was refused on refresh).
	ErrNotAuthorized = errors.New("this MCP server needs a user's authorization: POST /mcp-servers/{id}/authorize and open the authorization_url")
	// ErrUnknownState: a callback whose state no pending authorization
	// issued (forged, used twice or expired).
	ErrUnknownState = errors.New("no pending authorization has this state; it expired or was used already")
	// ErrNotAuthCode: Authorize on a server of another auth type.
	ErrNotAuthCode = errors.New("this MCP server's auth type is not oauth_authorization_code")
	// ErrNoChallenge: the server answered without asking for a token.
	ErrNoChallenge = errors.New("the MCP server answered without asking for authorization")
)

// pending is one authorization waiting for its callback, bound to the
// account and server that started it. The SDK's handler made the state
// and the PKCE verifier; the verifier never leaves it.
type pending struct {
	account, server string
	code            chan *auth.AuthorizationResult
	done            chan error
	// guard is the flow's client to the authorization server: its first
	// refused response is the flow's error.
	guard *authGuard
	// cancel ends the flow's goroutine.
	cancel context.CancelFunc
}

// authorizations are the pending authorizations by state, at most one per
// server: a new one ends the previous (its URL then leads nowhere), so
// repeated requests cannot pile up waiting flows.
type authorizations struct {
	mu sync.Mutex
	m  map[string]*pending
}

func (a *authorizations) put(state string, p *pending) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]*pending{}
	}
	for st, old := range a.m {
		if old.account == p.account && old.server == p.server {
			delete(a.m, st)
			old.cancel()
		}
	}
	a.m[state] = p
}

func (a *authorizations) take(state string) *pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.m[state]
	delete(a.m, state)
	return p
}

func (a *authorizations) drop(state string) {
	a.mu.Lock()
	delete(a.m, state)
	a.mu.Unlock()
}

// Authorize starts the authorization-code flow of an
// oauth_authorization_code server and returns the URL the user opens.
// The go-sdk's AuthorizationCodeHandler does the discovery (protected
// resource and authorization server metadata), the client registration
// (pre-registered, else dynamic), PKCE and the state; redirectURL is
// toolhost's callback, which hands the code to Complete. The flow waits
// for it AuthorizeTimeout at most.
func (g *Gateway) Authorize(ctx context.Context, srv Server, redirectURL string) (string, error) {
	if srv.Auth.Type != AuthAuthorizationCode {
		return "", ErrNotAuthCode
	}
	sec, err := g.opts.Sealer.Open(srv.AccountID, srv.ID, srv.Sealed)
	if err != nil {
		return "", err
	}
	fctx, cancel := context.WithTimeout(g.closing, AuthorizeTimeout)
	urls := make(chan string, 1)
	hc, guard := newAuthClient(g.transport, g.authTimeout(), true)
	p := &pending{account: srv.AccountID, server: srv.ID, code: make(chan *auth.AuthorizationResult, 1), done: make(chan error, 1), cancel: cancel, guard: guard}
	// state and resource are set by the fetcher, before the exchange
	// (one goroutine: the SDK's flow).
	var state, resource string
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirectURL,
		Client:              hc,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			// A refused metadata answer the SDK skipped over (it then
			// guesses the endpoints) still ends the flow.
			if err := guard.failure(); err != nil {
				return nil, err
			}
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, fmt.Errorf("the authorization URL: %w", err)
			}
			state, resource = u.Query().Get("state"), u.Query().Get("resource")
			g.auths.put(state, p)
			urls <- args.URL
			select {
			case r := <-p.code:
				return r, nil
			case <-ctx.Done():
				g.auths.drop(state)
				return nil, fmt.Errorf("nobody authorized within %s: %w", AuthorizeTimeout, ctx.Err())
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			if err := checkAudience(tok.AccessToken, resource); err != nil {
				// Final for the flow: the SDK would otherwise start it
				// again and wait for a second consent.
				return nil, guard.fail(err)
			}
			tok.Expiry = onClock(g.opts.Now, tok.Expiry)
			if err := g.saveGrant(ctx, srv.AccountID, srv.ID, c, tok, resource); err != nil {
				return nil, err
			}
			return g.refreshingTokens(ctx, c, tok), nil
		},
	}
	setRegistration(cfg, srv, sec, redirectURL)
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		cancel()
		return "", fmt.Errorf("set up the authorization: %w", err)
	}
	// The SDK's transport meets the server's 401 and runs the handler;
	// the session it opens proves the token works and is closed.
	go func() {
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "toolhost", Version: g.opts.Version}, nil)
		at := &authTransport{base: g.transport, headers: headerSet(sec.Headers), maxBody: g.opts.MaxResultBytes}
		sess, err := client.Connect(fctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: at}, OAuthHandler: h}, nil)
		if err == nil {
			_ = sess.Close()
		}
		// Before Complete returns: a link of the server opened after it
		// is never forgotten by this flow.
		g.Forget(srv.ID)
		if g.opts.Changed != nil {
			g.opts.Changed(srv.AccountID)
		}
		p.done <- err
	}()
	// Discovery and registration are a handful of small requests; a
	// server that drags them out past the budget ends the flow.
	budget := time.NewTimer(2 * g.authTimeout())
	defer budget.Stop()
	select {
	case u := <-urls:
		return u, nil
	case err := <-p.done:
		if err == nil {
			return "", ErrNoChallenge
		}
		return "", fmt.Errorf("start the authorization of %s: %w", srv.Name, authFailure(guard, err))
	case <-budget.C:
		cancel()
		return "", fmt.Errorf("start the authorization of %s: %w (no authorization URL within %s)", srv.Name, ErrAuthServerTimeout, 2*g.authTimeout())
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// setRegistration is how the flow gets a client: the server's
// pre-registered client_id (and secret), else dynamic registration.
func setRegistration(cfg *auth.AuthorizationCodeHandlerConfig, srv Server, sec Secrets, redirectURL string) {
	if srv.Auth.ClientID != "" {
		cc := &oauthex.ClientCredentials{ClientID: srv.Auth.ClientID}
		if sec.ClientSecret != "" {
			cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: sec.ClientSecret}
		}
		cfg.PreregisteredClient = cc
		return
	}
	cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		ClientName: "toolhost", RedirectURIs: []string{redirectURL},
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}}
}

// authTimeout bounds one response of an authorization server.
func (g *Gateway) authTimeout() time.Duration { return g.opts.ProbeTimeout * 3 }

// Complete hands a callback's code to the authorization that issued
// state and waits for the token exchange. It returns the account and
// server the state was bound to.
func (g *Gateway) Complete(ctx context.Context, state, code, iss string) (account, server string, err error) {
	if state == "" {
		return "", "", ErrUnknownState
	}
	p := g.auths.take(state)
	if p == nil {
		return "", "", ErrUnknownState
	}
	p.code <- &auth.AuthorizationResult{Code: code, State: state, Iss: iss}
	select {
	case err := <-p.done:
		if err != nil {
			return p.account, p.server, fmt.Errorf("finish the authorization: %w", authFailure(p.guard, err))
		}
		return p.account, p.server, nil
	case <-ctx.Done():
		return p.account, p.server, ctx.Err()
	}
}

// saveGrant seals what the token exchange obtained into the server.
func (g *Gateway) saveGrant(ctx context.Context, account, id string, c *oauth2.Config, tok *oauth2.Token, resource string) error {
	srv, err := g.opts.Store.GetMCPServer(ctx, account, id)
	if err != nil {
		return err
	}
	sec, err := g.opts.Sealer.Open(account, id, srv.Sealed)
	if err != nil {
		return err
	}
	sec.Grant = &Grant{ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthStyle: int(c.Endpoint.AuthStyle),
		AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL, Scopes: c.Scopes,
		AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType, Expiry: g.expiry(tok), Resource: resource}
	if srv.Sealed, err = g.opts.Sealer.Seal(account, id, sec); err != nil {
		return err
	}
	srv.Touch(g.opts.Now())
	if err := g.opts.Store.UpdateMCPServer(ctx, srv); err != nil {
		return fmt.Errorf("store the authorization: %w", err)
	}
	return nil
}
