package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"toolhost/mcpremote"
)

// errTooLarge ends a response body over the cap.
var errTooLarge = errors.New("the MCP server's response is larger than toolhost accepts")

// tracker records, for one call, what the transport saw: whether the
// request never left (a failed dial), the status, a body cut off.
type tracker struct {
	mu       sync.Mutex
	notSent  bool
	status   int
	tooLarge bool
	// cancel ends the call at once when its answer is cut off (the SDK
	// would otherwise try to resume the stream until the deadline).
	cancel context.CancelFunc
}

func (t *tracker) set(f func(*tracker)) {
	t.mu.Lock()
	f(t)
	t.mu.Unlock()
}

func (t *tracker) get() tracker {
	t.mu.Lock()
	defer t.mu.Unlock()
	return tracker{notSent: t.notSent, status: t.status, tooLarge: t.tooLarge}
}

type trackerKey struct{}

func withTracker(ctx context.Context, t *tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

func trackerFrom(ctx context.Context) *tracker {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	return t
}

// authTransport adds a server's headers and credentials to each request
// and caps each response body.
type authTransport struct {
	base    http.RoundTripper
	headers map[string]string
	bearer  string
	tokens  oauth2.TokenSource
	maxBody int64
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range a.headers {
		req.Header.Set(k, v)
	}
	switch {
	case a.bearer != "":
		req.Header.Set("Authorization", "Bearer "+a.bearer)
	case a.tokens != nil:
		tok, err := a.tokens.Token()
		if err != nil {
			if t := trackerFrom(req.Context()); t != nil {
				t.set(func(t *tracker) { t.notSent = true })
			}
			return nil, fmt.Errorf("get an access token from the token endpoint: %w", err)
		}
		tok.SetAuthHeader(req)
	}
	resp, err := a.base.RoundTrip(req)
	t := trackerFrom(req.Context())
	if err != nil {
		var op *net.OpError
		if t != nil && errors.As(err, &op) && op.Op == "dial" {
			t.set(func(t *tracker) { t.notSent = true })
		}
		return nil, err
	}
	if t != nil {
		t.set(func(t *tracker) { t.status = resp.StatusCode })
	}
	if a.maxBody > 0 {
		resp.Body = &cappedBody{r: resp.Body, left: a.maxBody, t: t}
	}
	return resp, nil
}

// cappedBody fails a read past its limit.
type cappedBody struct {
	r    io.ReadCloser
	left int64
	t    *tracker
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.t != nil {
			c.t.set(func(t *tracker) { t.tooLarge = true })
			if c.t.cancel != nil {
				c.t.cancel()
			}
		}
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.r.Close() }

// httpClient is the client of one server: the gateway's transport (the
// SSRF dialer) with the server's secrets; tokens are an authorized
// oauth_authorization_code server's.
func (g *Gateway) httpClient(srv mcpremote.Server, sec mcpremote.Secrets, tokens oauth2.TokenSource, maxBody int64) *http.Client {
	at := &authTransport{base: g.transport, headers: sec.Headers, maxBody: maxBody}
	switch srv.Auth.Type {
	case mcpremote.AuthBearer:
		at.bearer = sec.BearerToken
	case mcpremote.AuthClientCredentials:
		cc := clientcredentials.Config{ClientID: srv.Auth.ClientID, ClientSecret: sec.ClientSecret,
			TokenURL: srv.Auth.TokenURL, Scopes: srv.Auth.Scopes}
		// The token endpoint is dialed under the same policy.
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: g.transport, Timeout: g.opts.ProbeTimeout * 3})
		at.tokens = cc.TokenSource(ctx)
	case mcpremote.AuthAuthorizationCode:
		at.tokens = tokens
	}
	return &http.Client{Transport: at}
}
