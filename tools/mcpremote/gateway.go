package mcpremote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/toolhost/toolhost/internal/egress"
	"github.com/toolhost/toolhost/tools"
)

// Options configure a Gateway.
type Options struct {
	Store  Store
	Sealer *Sealer
	// Dial connects to a server (egress.DialContext: the SSRF policy).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TTL is how long a listing stays current without list_changed
	// (5 min).
	TTL time.Duration
	// ProbeTimeout bounds connecting, listing and pinging for the catalog
	// (3 s).
	ProbeTimeout time.Duration
	// MaxConcurrent caps the calls in flight to one server (8); more wait
	// for a free slot within their deadline.
	MaxConcurrent int
	// MaxResultBytes caps one response body or SSE event from a server
	// (4 MiB).
	MaxResultBytes int64
	// Changed is told, once per change, when a listing of one of an
	// account's servers differs from the tools known before it (the last
	// listing, else the stored snapshot), for the MCP face's tools/list.
	// An unchanged listing, however it came (list_changed, a refresh, the
	// TTL, a new session), tells nothing.
	Changed func(account string)
	// RelistInterval is the least time between two re-listings of a
	// server on its notifications/tools/list_changed (1 s): a server that
	// sends them without end costs one listing per interval.
	RelistInterval time.Duration
	Logger         *slog.Logger
	// Now is the clock that ages listings and expires the remote
	// servers' tokens (default time.Now).
	Now func() time.Time
	// Wait waits d before a retry of a remote call, or until ctx ends
	// (default: a timer); Jitter picks the random part of a backoff in
	// [0, max) (default: uniform). Tests make both deterministic.
	Wait    func(ctx context.Context, d time.Duration) error
	Jitter  func(upTo time.Duration) time.Duration
	Version string
	// Tracer makes a client span per attempt of a call (telemetry.go);
	// Propagator sends the attempt's trace context to the server, in the
	// call's _meta and the HTTP headers. nil: no spans, no context sent.
	Tracer     trace.TracerProvider
	Propagator propagation.TextMapPropagator
}

// Gateway holds the client sessions and answers tools.RemoteTools.
type Gateway struct {
	opts      Options
	transport *http.Transport

	mu    sync.Mutex
	links map[string]*link // by server id

	// closing ends the gateway's background work.
	closing     context.Context
	closeFlight context.CancelFunc
	// relists are the re-listings on list_changed in flight; closed stops
	// new ones, and Close waits for them.
	relists sync.WaitGroup
	closed  bool

	// refreshes share one refresh of a grant among its callers, by
	// server id (grant.go).
	refreshes singleflight.Group
	// onExpired, for tests, is told of every caller that found its
	// access token expired, before it joins the grant's refresh.
	onExpired func()
}

// New returns a gateway; Close ends its sessions.
func New(opts Options) *Gateway {
	if opts.TTL <= 0 {
		opts.TTL = 5 * time.Minute
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 3 * time.Second
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 8
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = 4 << 20
	}
	if opts.RelistInterval <= 0 {
		opts.RelistInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Wait == nil {
		opts.Wait = wait
	}
	if opts.Jitter == nil {
		opts.Jitter = jitter
	}
	if opts.Tracer == nil {
		opts.Tracer = tracenoop.NewTracerProvider()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if opts.Dial != nil {
		tr.DialContext = opts.Dial
	}
	tr.MaxIdleConnsPerHost = 16
	closing, cancel := context.WithCancel(context.Background())
	return &Gateway{opts: opts, transport: tr, links: map[string]*link{}, closing: closing, closeFlight: cancel}
}

// Close ends every session.
func (g *Gateway) Close() {
	g.closeFlight()
	g.mu.Lock()
	links := g.links
	g.links = map[string]*link{}
	g.closed = true
	g.mu.Unlock()
	g.relists.Wait()
	for _, l := range links {
		l.mu.Lock()
		l.drop()
		l.mu.Unlock()
	}
	g.transport.CloseIdleConnections()
}

// Forget ends the session of a server that was deleted or changed.
func (g *Gateway) Forget(id string) {
	g.mu.Lock()
	l := g.links[id]
	delete(g.links, id)
	g.mu.Unlock()
	if l != nil {
		l.mu.Lock()
		l.drop()
		l.mu.Unlock()
	}
}

// link is the gateway's state of one server.
type link struct {
	g   *Gateway
	sem chan struct{}

	mu       sync.Mutex
	srv      Server
	sess     *sdk.ClientSession
	tools    []*sdk.Tool // the last live listing
	listedAt time.Time
	stale    bool
	// unsaved is the JSON of the last listing while it is not the
	// stored snapshot (saveErr says why): its save is tried again at
	// each use of the link, with the listing's own time, and until then
	// the listing in memory is newer than the snapshot.
	unsaved []byte
	saveErr error
	// known is the JSON of the tools the account's listings show for
	// this server, as of the last listing (knownSet): what a new listing
	// is compared with. Before the first, the stored snapshot is.
	known    []byte
	knownSet bool
	// changed is a change of the tools not yet told (Options.Changed),
	// told once the lock is released.
	changed bool
	// relist is the re-listing on list_changed: at most one waits.
	relist relistState
	// built caches byName for the listing of builtAt and builtSource.
	built       map[string]*tools.Remote
	builtAt     time.Time
	builtSource string

	progress sync.Map // progress token → tools invocation progress func
	// tokens of an oauth_authorization_code server outlive its sessions:
	// a refresh token may be used once.
	tokens oauth2.TokenSource
}

// linkFor returns the server's link; a server changed since (its
// UpdatedAt) gets a fresh one.
func (g *Gateway) linkFor(srv Server) *link {
	g.mu.Lock()
	l, ok := g.links[srv.ID]
	if ok && !l.srvEqual(srv) {
		delete(g.links, srv.ID)
		go func(old *link) {
			old.mu.Lock()
			old.drop()
			old.mu.Unlock()
		}(l)
		ok = false
	}
	if !ok {
		l = &link{g: g, srv: srv, sem: make(chan struct{}, g.opts.MaxConcurrent)}
		g.links[srv.ID] = l
	}
	g.mu.Unlock()
	return l
}

func (l *link) srvEqual(s Server) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.srv.UpdatedAt.Equal(s.UpdatedAt)
}

// drop closes the session (l.mu held).
func (l *link) drop() {
	if l.sess != nil {
		s := l.sess
		l.sess = nil
		go func() { _ = s.Close() }()
	}
}

// connect opens a session (l.mu held).
func (l *link) connect(ctx context.Context) error {
	g := l.g
	sec, err := g.opts.Sealer.Open(l.srv.AccountID, l.srv.ID, l.srv.Sealed)
	if err != nil {
		return err
	}
	if g.opts.Sealer.Stale(l.srv.Sealed) {
		l.reseal(ctx)
	}
	if l.srv.Auth.Type == AuthAuthorizationCode && l.tokens == nil {
		if sec.Grant == nil || sec.Grant.AccessToken == "" {
			return ErrNotAuthorized
		}
		l.tokens = g.grantTokens(l.srv, sec.Grant)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "toolhost", Title: "toolhost gateway", Version: g.opts.Version}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { l.listChanged() },
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			if req == nil || req.Params == nil {
				return
			}
			if f, ok := l.progress.Load(fmt.Sprint(req.Params.ProgressToken)); ok {
				f.(func(float64, float64, string))(req.Params.Progress, req.Params.Total, req.Params.Message)
			}
		},
	})
	hc := g.httpClient(l.srv, sec, l.tokens, g.opts.MaxResultBytes)
	tr := &sdk.StreamableClientTransport{
		Endpoint:   l.srv.URL,
		HTTPClient: hc,
		MaxRetries: 2,
		// Above the body cap, so a call's answer trips the body cap (which
		// ends the call at once); the event cap guards the standalone stream.
		MaxEventSize: int(g.opts.MaxResultBytes) + 64<<10,
	}
	// Connect closes a session whose initialize failed, and that close
	// waits for the cancellation notice to a server that may never read
	// it (seconds): the caller's deadline is kept, and whatever Connect
	// returns late is closed by the goroutine that waits for it.
	type connected struct {
		sess *sdk.ClientSession
		err  error
	}
	ch := make(chan connected, 1)
	go func() {
		sess, err := client.Connect(ctx, tr, nil)
		ch <- connected{sess, err}
	}()
	select {
	case c := <-ch:
		if c.err != nil {
			return fmt.Errorf("connect to the MCP server %s: %w", l.srv.Name, c.err)
		}
		l.sess = c.sess
		return nil
	case <-ctx.Done():
		go func() {
			if c := <-ch; c.sess != nil {
				_ = c.sess.Close()
			}
		}()
		err := ctx.Err()
		if at, ok := hc.Transport.(*authTransport); ok && at.fetching.Load() {
			err = fmt.Errorf("%w (the token endpoint, within the deadline of connecting)", ErrAuthServerTimeout)
		}
		return fmt.Errorf("connect to the MCP server %s: %w", l.srv.Name, err)
	}
}

// reseal writes the stored secrets again under the current key
// (rotation), in the store's lock of them: l.srv may be older than a
// refresh of its grant, whose rotated tokens must not be written over.
func (l *link) reseal(ctx context.Context) {
	g := l.g
	var sealed []byte
	err := g.opts.Store.UpdateMCPSecrets(ctx, l.srv.AccountID, l.srv.ID, func(stored []byte) ([]byte, error) {
		if !g.opts.Sealer.Stale(stored) {
			return nil, nil
		}
		sec, err := g.opts.Sealer.Open(l.srv.AccountID, l.srv.ID, stored)
		if err != nil {
			return nil, err
		}
		sealed, err = g.opts.Sealer.Seal(l.srv.AccountID, l.srv.ID, sec)
		return sealed, err
	})
	if err != nil {
		g.opts.Logger.Warn("re-sealing the secrets of an MCP server under the current key failed", "server_id", l.srv.ID, "err", err)
		return
	}
	if sealed != nil {
		l.srv.Sealed = sealed
	}
}

// relistState coalesces and spaces a server's re-listings on list_changed.
type relistState struct {
	mu      sync.Mutex
	pending bool
	last    time.Time
}

// list lists the server's tools on the session and saves the snapshot
// (l.mu held); a listing that differs from the tools known before it is
// marked to be told (notify).
func (l *link) list(ctx context.Context) error {
	var ts []*sdk.Tool
	for t, err := range l.sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", l.srv.Name, err)
		}
		if len(ts) >= MaxTools {
			return fmt.Errorf("the MCP server %s lists more than %d tools", l.srv.Name, MaxTools)
		}
		ts = append(ts, t)
	}
	b, err := json.Marshal(ts)
	if err != nil {
		return fmt.Errorf("encode the tools of %s: %w", l.srv.Name, err)
	}
	l.compare(ctx, b)
	l.tools, l.listedAt, l.stale = ts, l.g.opts.Now(), false
	l.unsaved = b
	l.save(ctx)
	return nil
}

// save stores the last listing as the server's snapshot, if it is not
// yet (l.mu held). A failed save is kept, not just logged: the listing
// in memory is then newer than the snapshot, which status says
// (Status.SaveErr) and prefers, and the next use of the link tries
// again with the listing's own time, so the stored snapshot's time is
// always that of its tools, even when they did not change.
func (l *link) save(ctx context.Context) {
	if l.unsaved == nil {
		return
	}
	err := l.g.opts.Store.SaveMCPSnapshot(ctx, l.srv.AccountID, l.srv.ID, Snapshot{Tools: l.unsaved, ListedAt: l.listedAt})
	if err != nil && !errors.Is(err, ErrNotFound) {
		if l.saveErr == nil {
			l.g.opts.Logger.Warn("saving the tools snapshot of an MCP server failed; it is tried again at the server's next use",
				"server_id", l.srv.ID, "listed_at", l.listedAt, "err", err)
		}
		l.saveErr = fmt.Errorf("save the tools snapshot of %s: %w", l.srv.Name, err)
		return
	}
	if l.saveErr != nil {
		l.g.opts.Logger.Info("the tools snapshot of an MCP server is saved again", "server_id", l.srv.ID, "listed_at", l.listedAt)
	}
	l.unsaved, l.saveErr = nil, nil
}

// compare marks a change when listed (the JSON of a new listing) is not
// the tools known before it: the last listing, else the snapshot, which
// is what the account's listings showed (l.mu held).
func (l *link) compare(ctx context.Context, listed []byte) {
	if !l.knownSet {
		l.known, l.knownSet = nil, true
		if snap, err := l.g.opts.Store.GetMCPSnapshot(ctx, l.srv.AccountID, l.srv.ID); err == nil {
			l.known = snap.Tools
		}
	}
	if !sameTools(l.known, listed) {
		l.changed = true
	}
	l.known = listed
}

// sameTools reports whether two listings' JSON are the same tools; no
// listing (nil) and a listing of none are the same: no tools shown.
func sameTools(a, b []byte) bool {
	empty := func(x []byte) bool {
		s := string(bytes.TrimSpace(x))
		return s == "" || s == "null" || s == "[]"
	}
	if empty(a) || empty(b) {
		return empty(a) && empty(b)
	}
	return bytes.Equal(a, b)
}

// notify tells Options.Changed of a change the last listings made, once;
// called without l.mu, after the listing.
func (l *link) notify() {
	l.mu.Lock()
	changed := l.changed
	l.changed = false
	account := l.srv.AccountID
	l.mu.Unlock()
	if changed && l.g.opts.Changed != nil {
		l.g.opts.Changed(account)
	}
}

// ensure makes the link live: a session and a current listing. With
// probe, a session that looks fine is pinged. On failure the session is
// dropped and opened once more (an expired session), then the error is
// returned. A listing that changed the tools is told before it returns.
func (l *link) ensure(ctx context.Context, probe bool) error {
	defer l.notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		var err error
		switch {
		case l.stale || l.g.opts.Now().Sub(l.listedAt) > l.g.opts.TTL:
			err = l.list(ctx) // which saves
		case probe:
			if err = l.sess.Ping(ctx, nil); err == nil {
				l.save(ctx) // a listing whose save failed, with none due
			}
		default:
			l.save(ctx)
		}
		if err == nil {
			return nil
		}
		l.drop()
	}
	if err := l.connect(ctx); err != nil {
		if ctx.Err() == nil {
			l.save(ctx) // the server is down; the store may be back
		}
		return err
	}
	if err := l.list(ctx); err != nil {
		l.drop()
		return err
	}
	return nil
}

// session returns the live session, opening one when there is none.
func (l *link) session(ctx context.Context) (*sdk.ClientSession, error) {
	defer l.notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil {
		if err := l.connect(ctx); err != nil {
			return nil, err
		}
		if l.tools == nil {
			if err := l.list(ctx); err != nil {
				l.drop()
				return nil, err
			}
		}
	}
	return l.sess, nil
}

// reset drops the session if it is still s.
func (l *link) reset(s *sdk.ClientSession) {
	l.mu.Lock()
	if l.sess == s {
		l.drop()
	}
	l.mu.Unlock()
}

// listChanged re-lists after notifications/tools/list_changed. However
// many a server sends, at most one re-listing waits, and re-listings
// are RelistInterval apart: a server that says "changed" without end
// (or in answer to every listing) costs one listing per interval, and
// only a listing that changed the tools is told (ensure).
func (l *link) listChanged() {
	g := l.g
	l.relist.mu.Lock()
	if l.relist.pending {
		l.relist.mu.Unlock()
		return
	}
	l.relist.pending = true
	wait := g.opts.RelistInterval - time.Since(l.relist.last)
	l.relist.mu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.relists.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.relists.Done()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-g.closing.Done():
				t.Stop()
				return
			}
		}
		// A notification from now on may be about a change this listing
		// misses: it schedules the next one.
		l.relist.mu.Lock()
		l.relist.pending, l.relist.last = false, time.Now()
		l.relist.mu.Unlock()
		g.mu.Lock()
		current := g.links[l.srv.ID] == l
		g.mu.Unlock()
		if !current {
			return // forgotten or replaced: its session is going
		}
		l.mu.Lock()
		l.stale = true
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(g.closing, g.opts.ProbeTimeout*3)
		defer cancel()
		if err := l.ensure(ctx, false); err != nil {
			g.opts.Logger.Warn("re-listing the tools of an MCP server after list_changed failed", "server_id", l.srv.ID, "err", egress.Describe(err))
		}
	}()
}

// Refresh lists a server's tools now (POST /mcp-servers/:id/refresh).
func (g *Gateway) Refresh(ctx context.Context, srv Server) (Status, error) {
	l := g.linkFor(srv)
	l.mu.Lock()
	l.stale = true
	l.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, g.opts.ProbeTimeout*3)
	defer cancel()
	err := l.ensure(pctx, true)
	return g.status(ctx, srv, l, err), err
}
