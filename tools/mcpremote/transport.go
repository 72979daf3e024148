package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// errTooLarge ends a response body over the cap.
var errTooLarge = errors.New("the MCP server's response is larger than toolhost accepts")

// tracker records, for one call, what the transport saw: whether the
// request never left (a failed dial), the status, a body cut off for its
// size or its nesting.
type tracker struct {
	mu      sync.Mutex
	notSent bool
	status  int
	// retryAfter is the Retry-After header of the answer, as it came.
	retryAfter string
	tooLarge   bool
	tooDeep    bool
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
	return tracker{notSent: t.notSent, status: t.status, retryAfter: t.retryAfter, tooLarge: t.tooLarge, tooDeep: t.tooDeep}
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
	base http.RoundTripper
	// headers are the server's headers and its bearer token, their keys
	// canonical: set once per link, not per request.
	headers http.Header
	tokens  oauth2.TokenSource
	maxBody int64
	// prop writes the request's trace context into its headers (nil:
	// none).
	prop propagation.TextMapPropagator
	// fetching is set while a token is being fetched from the token
	// endpoint (past a caller who stopped waiting, until it ends).
	fetching atomic.Bool
}

// drainGrace is how long a response body may go on being read after its
// caller is done: the SDK hands the call's answer over before it reads
// the end of the event stream, and cancelling the request before that end
// would close the keep-alive connection (the next call would dial).
const drainGrace = 250 * time.Millisecond

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	t := trackerFrom(ctx)
	// A POST (a call's answer comes on its event stream) runs under a
	// context of its own, cancelled when the caller's is done (at once
	// before the answer starts, drainGrace later while its body is still
	// being read) or when its body is done. A GET's stream has no end to
	// wait for: it goes with its caller.
	var d *detached
	rctx := ctx
	if req.Method == http.MethodPost {
		var rcancel context.CancelFunc
		rctx, rcancel = context.WithCancel(context.WithoutCancel(ctx))
		d = &detached{cancel: rcancel}
	}
	out := req.WithContext(rctx)
	out.Header = make(http.Header, len(req.Header)+len(a.headers)+1)
	for k, v := range req.Header {
		out.Header[k] = v
	}
	if a.prop != nil {
		a.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	}
	for k, v := range a.headers {
		out.Header[k] = v
	}
	if a.tokens != nil {
		tok, err := tokenWithin(ctx, a.tokens, &a.fetching)
		if err != nil {
			d.done()
			if t != nil {
				t.set(func(t *tracker) { t.notSent = true })
			}
			return nil, fmt.Errorf("get an access token from the token endpoint: %w", err)
		}
		tok.SetAuthHeader(out)
	}
	d.watch(ctx)
	resp, err := a.base.RoundTrip(out)
	if err != nil {
		d.done()
		var op *net.OpError
		if t != nil && errors.As(err, &op) && op.Op == "dial" {
			t.set(func(t *tracker) { t.notSent = true })
		}
		return nil, err
	}
	if t != nil {
		ra := resp.Header.Get("Retry-After")
		t.set(func(t *tracker) { t.status, t.retryAfter = resp.StatusCode, ra })
	}
	d.answered()
	if a.maxBody > 0 || d != nil {
		left := a.maxBody
		if left <= 0 {
			left = math.MaxInt64
		}
		resp.Body = &cappedBody{r: resp.Body, left: left, t: t, d: d, depth: newDepthScan(resp.Header.Get("Content-Type"))}
	}
	return resp, nil
}

// tokenWithin is ts.Token() bounded by ctx: x/oauth2 fetches under a
// context of its own (the authGuard bounds that fetch), so a caller whose
// deadline comes first stops waiting and is told the token endpoint was
// too slow; the fetch ends within the guard's timeout.
func tokenWithin(ctx context.Context, ts oauth2.TokenSource, fetching *atomic.Bool) (*oauth2.Token, error) {
	type result struct {
		tok *oauth2.Token
		err error
	}
	got := make(chan result, 1)
	fetching.Store(true)
	go func() {
		tok, err := ts.Token()
		fetching.Store(false)
		got <- result{tok, err}
	}()
	select {
	case r := <-got:
		return r.tok, r.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w (the token endpoint, within the call's deadline)", ErrAuthServerTimeout)
		}
		return nil, ctx.Err()
	}
}

// detached is the request context of one POST and when it ends; nil
// for other requests (every method is a no-op).
type detached struct {
	cancel context.CancelFunc
	stop   func() bool

	mu       sync.Mutex
	started  bool // the response headers came
	finished bool
	grace    *time.Timer
}

// watch ends the request when the caller's context is done.
func (d *detached) watch(caller context.Context) {
	if d != nil {
		d.stop = context.AfterFunc(caller, d.callerDone)
	}
}

func (d *detached) answered() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.started = true
	d.mu.Unlock()
}

// callerDone runs when the caller's context is done.
func (d *detached) callerDone() {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.finished:
	case d.started:
		d.grace = time.AfterFunc(drainGrace, d.cancel)
	default:
		d.cancel()
	}
}

// done ends the request context: the body was read to its end or
// closed, or the request failed.
func (d *detached) done() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.finished = true
	if d.grace != nil {
		d.grace.Stop()
	}
	d.mu.Unlock()
	if d.stop != nil {
		d.stop()
	}
	d.cancel()
}

// cappedBody fails a read past its limit, or past maxMessageDepth of
// nesting, and ends the request's context with the body.
type cappedBody struct {
	r     io.ReadCloser
	left  int64
	t     *tracker
	d     *detached
	depth depthScan
	// deep is set once the nesting went too deep: every later read fails.
	deep bool
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.deep {
		return 0, errTooDeep
	}
	if c.left <= 0 {
		c.cut(func(t *tracker) { t.tooLarge = true })
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.depth.scan(p[:n]) {
		// Before the SDK sees it: it would fail the session on it.
		c.deep = true
		c.cut(func(t *tracker) { t.tooDeep = true })
		return 0, errTooDeep
	}
	if err == io.EOF {
		// The connection is back in the pool by now.
		c.d.done()
	}
	return n, err
}

// cut records why the body was cut off and ends the call at once (the
// SDK would otherwise try to resume the stream until the deadline).
func (c *cappedBody) cut(why func(*tracker)) {
	if c.t != nil {
		c.t.set(why)
		if c.t.cancel != nil {
			c.t.cancel()
		}
	}
}

func (c *cappedBody) Close() error {
	err := c.r.Close()
	c.d.done()
	return err
}

// httpClient is the client of one server: the gateway's transport (the
// SSRF dialer) with the server's secrets; tokens are an authorized
// oauth_authorization_code server's.
func (g *Gateway) httpClient(srv Server, sec Secrets, tokens oauth2.TokenSource, maxBody int64) *http.Client {
	at := &authTransport{base: g.transport, headers: headerSet(sec.Headers), maxBody: maxBody, prop: g.opts.Propagator}
	switch srv.Auth.Type {
	case AuthBearer:
		if sec.BearerToken != "" {
			at.headers.Set("Authorization", "Bearer "+sec.BearerToken)
		}
	case AuthClientCredentials:
		cc := clientcredentials.Config{ClientID: srv.Auth.ClientID, ClientSecret: sec.ClientSecret,
			TokenURL: srv.Auth.TokenURL, Scopes: srv.Auth.Scopes}
		// The token endpoint is dialed under the same policy.
		hc, _ := newAuthClient(g.transport, g.authTimeout(), false)
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
		at.tokens = g.clientCredentialsTokens(ctx, &cc)
	case AuthAuthorizationCode:
		at.tokens = tokens
	}
	return &http.Client{Transport: at}
}

// headerSet is a server's headers with canonical keys.
func headerSet(headers map[string]string) http.Header {
	h := make(http.Header, len(headers)+1)
	for k, v := range headers {
		h.Set(k, v)
	}
	return h
}
