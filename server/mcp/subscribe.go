package mcp

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/journal"
)

// A client subscribes to one of its executions, toolhost://executions/{id}
// (resources/subscribe, or subscriptions/listen on 2026-07-28), and is
// sent notifications/resources/updated each time the execution's status
// changes after the subscription — queued, running, then how it ended —
// the last one once it has finished: then the resource holds the result.
// A background job's receipt names the resource to subscribe to.
//
// The journal is read every WatchInterval, so a job that another replica
// runs is seen too; one watch per execution and account server serves all
// of its subscribed sessions, and ends when the execution finishes, when
// the last session unsubscribes, or after MaxWatch.

// Defaults of the subscription watches.
const (
	DefaultWatchInterval = 500 * time.Millisecond
	DefaultMaxWatches    = 1000
	// MaxWatch is the longest a watch follows one execution.
	MaxWatch = 24 * time.Hour
)

// errTooManyWatches is the subscription refused over Options.MaxWatches.
var errTooManyWatches = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "too many resource subscriptions on this server; unsubscribe from executions that have finished"}

// watches are the executions the sessions of one go-sdk server
// subscribed to.
type watches struct {
	s   *Server
	srv *sdk.Server // set once the server is built

	mu    sync.Mutex
	byURI map[string]*watch
}

type watch struct {
	refs   int
	cancel context.CancelFunc
}

func newWatches(s *Server) *watches {
	return &watches{s: s, byURI: map[string]*watch{}}
}

// subscribe is the server's SubscribeHandler: only an execution of the
// caller's own account may be subscribed to; the go-sdk records the
// subscription once this returns nil.
func (w *watches) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	id, ok := executionID(uri)
	if !ok {
		return sdk.ResourceNotFoundError(clip.Echo(uri))
	}
	extra := req.GetExtra()
	if extra == nil {
		// subscriptions/listen subscribes on the caller's behalf without
		// the request's extra: listening put it in the context.
		extra, _ = ctx.Value(listenExtraKey{}).(*sdk.RequestExtra)
	}
	account := w.s.account(ctx, extra)
	rec, err := w.s.exec.Journal().Store().Get(ctx, account, id)
	if err != nil {
		return w.s.journalError(ctx, uri, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.byURI[uri]; wt != nil {
		wt.refs++
		return nil
	}
	if len(w.byURI) >= w.s.opts.MaxWatches {
		return errTooManyWatches
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MaxWatch)
	wt := &watch{refs: 1, cancel: cancel}
	w.byURI[uri] = wt
	go w.follow(wctx, wt, account, uri, rec)
	return nil
}

// unsubscribe is the server's UnsubscribeHandler.
func (w *watches) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.byURI[req.Params.URI]; wt != nil {
		if wt.refs--; wt.refs <= 0 {
			wt.cancel()
			delete(w.byURI, req.Params.URI)
		}
	}
	return nil
}

// follow reads the execution every WatchInterval and tells the
// subscribers of each change of its status, until it has finished.
func (w *watches) follow(ctx context.Context, wt *watch, account, uri string, last journal.Record) {
	defer w.end(wt, uri)
	id, _ := executionID(uri)
	t := time.NewTicker(w.s.opts.WatchInterval)
	defer t.Stop()
	for last.Lifecycle != journal.Finished {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rec, err := w.s.exec.Journal().Store().Get(ctx, account, id)
		if err != nil {
			if errors.Is(err, journal.ErrNotFound) {
				return // pruned: nothing will change any more
			}
			continue // asked again at the next tick
		}
		if rec.Status == last.Status && rec.Lifecycle == last.Lifecycle {
			continue
		}
		last = rec
		if err := w.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			w.s.opts.Logger.WarnContext(ctx, "resource update notification failed", "uri", uri, "err", err)
		}
	}
}

// end forgets a watch that has stopped, unless unsubscribe did already
// (a later subscription may have started another for the same URI).
func (w *watches) end(wt *watch, uri string) {
	wt.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byURI[uri] == wt {
		delete(w.byURI, uri)
	}
}

// listenExtraKey carries a subscriptions/listen request's extra (its
// caller) to the subscriptions the go-sdk makes for it.
type listenExtraKey struct{}

// keepListenCaller is the receiving middleware that puts a
// subscriptions/listen request's extra in its context, so the resource
// subscriptions it opens act for its caller, not for no one.
func keepListenCaller(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if r, ok := req.(*sdk.SubscriptionsListenRequest); ok && r.GetExtra() != nil {
			ctx = context.WithValue(ctx, listenExtraKey{}, r.GetExtra())
		}
		return next(ctx, method, req)
	}
}
