package mcpremote

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

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

// Authorize starts the authorization-code flow of an
// oauth_authorization_code server and returns the URL the user opens.
// It does the discovery (the server's challenge, its protected resource
// and authorization server metadata), the client registration
// (pre-registered, else dynamic), PKCE and the state, and keeps the
// pending flow in the store for AuthorizeTimeout, its verifier and client
// sealed: redirectURL is toolhost's callback, which hands the code to
// Complete on whichever process sharing the store it reaches.
func (g *Gateway) Authorize(ctx context.Context, srv Server, redirectURL string) (string, error) {
	if srv.Auth.Type != AuthAuthorizationCode {
		return "", ErrNotAuthCode
	}
	sec, err := g.opts.Sealer.Open(srv.AccountID, srv.ID, srv.Sealed)
	if err != nil {
		return "", err
	}
	hc, guard := newAuthClient(g.transport, g.authTimeout(), true)
	// Discovery and registration are a handful of small requests; a
	// server that drags them out past the budget ends the flow.
	budget := 2 * g.authTimeout()
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	flow, err := g.discover(dctx, srv, sec, redirectURL, hc, guard)
	switch {
	case errors.Is(err, ErrNoChallenge):
		return "", err
	case err != nil && ctx.Err() == nil && dctx.Err() != nil:
		return "", fmt.Errorf("start the authorization of %s: %w (no authorization URL within %s)", srv.Name, ErrAuthServerTimeout, budget)
	case err != nil:
		return "", fmt.Errorf("start the authorization of %s: %w", srv.Name, authFailure(guard, err))
	}
	state := rand.Text()
	flow.Verifier = oauth2.GenerateVerifier()
	sealed, err := g.opts.Sealer.sealJSON(flowAAD(srv.AccountID, srv.ID), flow)
	if err != nil {
		return "", err
	}
	p := PendingAuthorization{State: StateKey(state), AccountID: srv.AccountID, ServerID: srv.ID,
		Sealed: sealed, ExpiresAt: g.opts.Now().Add(AuthorizeTimeout)}
	if err := g.opts.Store.PutMCPAuthorization(ctx, p); err != nil {
		return "", fmt.Errorf("keep the pending authorization: %w", err)
	}
	return flow.config().AuthCodeURL(state, oauth2.S256ChallengeOption(flow.Verifier),
		oauth2.SetAuthURLParam("resource", flow.Resource)), nil
}

// authTimeout bounds one response of an authorization server.
func (g *Gateway) authTimeout() time.Duration { return g.opts.ProbeTimeout * 3 }

// Complete takes the pending authorization that issued state from the
// store (once: a second callback with the same state, or one after
// AuthorizeTimeout, gets ErrUnknownState), exchanges the code with its
// PKCE verifier and seals the grant into the server. It returns the
// account and server the state was bound to.
func (g *Gateway) Complete(ctx context.Context, state, code, iss string) (account, server string, err error) {
	if state == "" {
		return "", "", ErrUnknownState
	}
	p, err := g.opts.Store.TakeMCPAuthorization(ctx, StateKey(state), g.opts.Now())
	if err != nil {
		return "", "", err
	}
	var flow consentFlow
	if err := g.opts.Sealer.openJSON(flowAAD(p.AccountID, p.ServerID), p.Sealed, &flow); err != nil {
		return p.AccountID, p.ServerID, fmt.Errorf("open the pending authorization: %w", err)
	}
	if err := flow.checkIssuer(iss); err != nil {
		return p.AccountID, p.ServerID, fmt.Errorf("finish the authorization: %w", err)
	}
	hc, guard := newAuthClient(g.transport, g.authTimeout(), true)
	cfg := flow.config()
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), code,
		oauth2.VerifierOption(flow.Verifier), oauth2.SetAuthURLParam("resource", flow.Resource))
	if err != nil {
		return p.AccountID, p.ServerID, fmt.Errorf("finish the authorization: token exchange: %w", authFailure(guard, err))
	}
	if err := checkAudience(tok.AccessToken, flow.Resource); err != nil {
		return p.AccountID, p.ServerID, fmt.Errorf("finish the authorization: %w", err)
	}
	tok.Expiry = onClock(g.opts.Now, tok.Expiry)
	if err := g.saveGrant(ctx, p.AccountID, p.ServerID, cfg, tok, flow.Resource); err != nil {
		return p.AccountID, p.ServerID, err
	}
	g.Forget(p.ServerID)
	if g.opts.Changed != nil {
		g.opts.Changed(p.AccountID)
	}
	return p.AccountID, p.ServerID, nil
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
