package mcpremote

import (
	"context"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// x/oauth2 stamps a token it fetches with an Expiry on time.Now and
// reuses it while that Expiry is ahead of time.Now. A remote server's
// token expires on the gateway's clock instead (Options.Now), the one
// that also ages its listings and that a test sets: clockTokens keeps
// the token and decides when it is due, and each token fetched has its
// expiry moved onto that clock.

// expiryLead is how long before its expiry a token is replaced
// (x/oauth2's expiryDelta).
const expiryLead = 10 * time.Second

// clockTokens is a token source that reuses its token until expiryLead
// before its expiry on now, then fetches another.
type clockTokens struct {
	now func() time.Time
	// fetch gets a new token; current is the token held (nil at first),
	// whose refresh token a refresh uses.
	fetch func(current *oauth2.Token) (*oauth2.Token, error)

	mu  sync.Mutex
	tok *oauth2.Token
}

func (s *clockTokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tok; t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || s.now().Add(expiryLead).Before(t.Expiry)) {
		return t, nil
	}
	t, err := s.fetch(s.tok)
	if err != nil {
		return nil, err
	}
	t.Expiry = onClock(s.now, t.Expiry)
	s.tok = t
	return t, nil
}

// onClock moves an expiry x/oauth2 stamped on the wall clock onto now.
func onClock(now func() time.Time, expiry time.Time) time.Time {
	if expiry.IsZero() {
		return expiry
	}
	return now().Add(time.Until(expiry))
}

// clientCredentialsTokens fetches a new token from cc when one is due.
func (g *Gateway) clientCredentialsTokens(ctx context.Context, cc *clientcredentials.Config) oauth2.TokenSource {
	return &clockTokens{now: g.opts.Now, fetch: func(*oauth2.Token) (*oauth2.Token, error) { return cc.Token(ctx) }}
}
