package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// expiryDelta is how long before its expiry an access token counts as
// expired (x/oauth2's own margin): it is not sent to arrive stale.
const expiryDelta = 10 * time.Second

// A grant's refresh token may be used once: an authorization server that
// rotates refresh tokens and detects their reuse revokes the whole grant
// when one comes twice. So a grant is refreshed once however many calls
// find its access token expired at the same moment, whichever links
// (one is made again after every Forget, from a server read maybe
// before the last refresh) and replicas they run on:
//
//   - within the gateway, the callers of one grant share one refresh
//     (Gateway.refreshes, a singleflight by server);
//   - that refresh runs in the store's lock of the server's secrets
//     (Store.UpdateMCPSecrets), which reads the stored grant
//     again first: when another replica (or an earlier link) refreshed
//     it already, its token is used and nothing is sent to the
//     authorization server; else the refresh is sent and the rotated
//     tokens are stored before the lock is released.

// grantTokens is the token source of an authorized server's link: the
// access token it holds while that is valid by the gateway's clock,
// else the stored grant's, refreshed when that has expired too.
type grantTokens struct {
	g           *Gateway
	account, id string

	mu  sync.Mutex
	tok *oauth2.Token
	// refused is a refreshed token bound elsewhere: it is never sent,
	// and the server needs a new authorization.
	refused error
}

func (g *Gateway) grantTokens(srv Server, gr *Grant) *grantTokens {
	return &grantTokens{g: g, account: srv.AccountID, id: srv.ID, tok: grantToken(gr)}
}

// grantToken is the access token of gr.
func grantToken(gr *Grant) *oauth2.Token {
	return &oauth2.Token{AccessToken: gr.AccessToken, RefreshToken: gr.RefreshToken, TokenType: gr.TokenType, Expiry: gr.Expiry}
}

// valid reports whether tok may be sent now.
func (g *Gateway) valid(tok *oauth2.Token) bool {
	return tok != nil && tok.AccessToken != "" && (tok.Expiry.IsZero() || g.opts.Now().Add(expiryDelta).Before(tok.Expiry))
}

// Token implements oauth2.TokenSource.
func (s *grantTokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	tok, refused := s.tok, s.refused
	s.mu.Unlock()
	if refused != nil {
		return nil, refused
	}
	if s.g.valid(tok) {
		return tok, nil
	}
	if s.g.onExpired != nil {
		s.g.onExpired()
	}
	v, err, _ := s.g.refreshes.Do(s.id, func() (any, error) { return s.g.refreshGrant(s.account, s.id) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrTokenForAnotherResource) {
			s.refused = err
		}
		return nil, err
	}
	s.tok = v.(*oauth2.Token)
	return s.tok, nil
}

// refreshGrant returns the stored access token of the server, refreshed
// first when it has expired, in the store's lock of its secrets. It runs
// for every caller that shares it, under the gateway's context: a
// caller that stops waiting (tokenWithin) does not end it. A refused
// token is not stored.
func (g *Gateway) refreshGrant(account, id string) (*oauth2.Token, error) {
	// The lock may wait for another replica's refresh, then this one's.
	ctx, cancel := context.WithTimeout(g.closing, 2*g.authTimeout()+g.opts.ProbeTimeout)
	defer cancel()
	var tok *oauth2.Token
	err := g.opts.Store.UpdateMCPSecrets(ctx, account, id, func(sealed []byte) ([]byte, error) {
		sec, err := g.opts.Sealer.Open(account, id, sealed)
		if err != nil {
			return nil, err
		}
		gr := sec.Grant
		if gr == nil || gr.AccessToken == "" {
			return nil, ErrNotAuthorized
		}
		if stored := grantToken(gr); g.valid(stored) {
			tok = stored // refreshed meanwhile: by another link or replica
			return nil, nil
		}
		got, err := g.refresh(ctx, gr)
		if err != nil {
			return nil, err
		}
		tok = got
		gr.AccessToken, gr.TokenType, gr.Expiry = got.AccessToken, got.TokenType, got.Expiry
		if got.RefreshToken != "" {
			gr.RefreshToken = got.RefreshToken
		}
		return g.opts.Sealer.Seal(account, id, sec)
	})
	switch {
	case err == nil:
		return tok, nil
	case tok != nil && tok.AccessToken != "":
		// Refreshed, but the rotated tokens could not be stored: the
		// access token works until it expires; the next refresh sends
		// the stored refresh token, which the server may refuse.
		g.opts.Logger.Warn("storing the refreshed token of an MCP server failed", "server_id", id, "err", err)
		return tok, nil
	}
	return nil, err
}

// refresh sends gr's refresh token to its token endpoint, naming its
// resource; a token bound to another resource is refused.
func (g *Gateway) refresh(ctx context.Context, gr *Grant) (*oauth2.Token, error) {
	if gr.RefreshToken == "" {
		return nil, fmt.Errorf("%w (the access token expired and the grant has no refresh token)", ErrNotAuthorized)
	}
	c := &oauth2.Config{ClientID: gr.ClientID, ClientSecret: gr.ClientSecret, Scopes: gr.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: gr.AuthURL, TokenURL: gr.TokenURL, AuthStyle: oauth2.AuthStyle(gr.AuthStyle)}}
	hc, guard := newAuthClient(g.transport, g.authTimeout(), false)
	guard.resource = gr.Resource
	tok, err := c.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), &oauth2.Token{RefreshToken: gr.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("%w (the refresh was refused: %s)", ErrNotAuthorized, re.ErrorCode)
		}
		return nil, err
	}
	if err := checkAudience(tok.AccessToken, gr.Resource); err != nil {
		return nil, err
	}
	tok.Expiry = g.expiry(tok)
	return tok, nil
}

// expiry is when tok expires by the gateway's clock (x/oauth2 counts
// from time.Now).
func (g *Gateway) expiry(tok *oauth2.Token) time.Time {
	if tok.ExpiresIn > 0 {
		return g.opts.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}
