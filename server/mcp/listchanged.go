package mcp

import (
	"context"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// methodToolsListChanged is the notification the go-sdk sends a server's
// sessions when its tools change.
const methodToolsListChanged = "notifications/tools/list_changed"

// listChanges makes one sync of an account's tools one
// notifications/tools/list_changed for each session, sent once the sync
// has made all its changes, however slow the machine.
//
// The go-sdk sends list_changed itself: every AddTool and RemoveTools
// (re)arms a 10 ms timer, and the timer notifies every session. A sync
// makes one call per tool, so a pause of more than 10 ms between two of
// them (a loaded machine) would tell the sessions twice, the first time
// before the sync is done. The SDK offers no batch and no way to keep its
// notifications and still advertise tools.listChanged, so they are left
// to it (it knows which sessions get them, and how: on the session's
// stream, or on a subscriptions/listen stream with its id) and filtered
// on their way out (middleware, a sending middleware of the account's
// server):
//
//   - while a sync changes the tools, a notification waits for it to end,
//     so a session never hears of half a sync;
//   - each sync that changes something is a generation; a session is told
//     of a generation once, and the SDK's notifications beyond the first
//     of that generation are dropped. After a sync's last change the SDK
//     always has a timer armed, so every generation reaches every session
//     of the moment: from a timer fired in the middle of the sync (let
//     go at its end), else from that last timer.
//
// Two syncs that follow each other within the SDK's delay are one
// notification, as the SDK's debounce makes them anyway.
type listChanges struct {
	mu sync.Mutex
	// applying is open while a sync changes the tools and closed when it
	// is done; nil between syncs.
	applying chan struct{}
	// gen is the generation of the last sync that changed the tools
	// (from 1, so that a session no sync has told yet is told).
	gen uint64
	// told is the generation each session was last told of.
	told map[*sdk.ServerSession]uint64
}

func newListChanges() *listChanges {
	return &listChanges{gen: 1, told: map[*sdk.ServerSession]uint64{}}
}

// begin starts a sync's changes: a new generation, whose notifications
// wait for end. live are the server's sessions; those gone are forgotten.
func (lc *listChanges) begin(live []*sdk.ServerSession) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.gen++
	lc.applying = make(chan struct{})
	for ss := range lc.told {
		if !slices.Contains(live, ss) {
			delete(lc.told, ss)
		}
	}
}

// end lets the notifications of the sync's changes go.
func (lc *listChanges) end() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	close(lc.applying)
	lc.applying = nil
}

// middleware is the sending middleware that holds and deduplicates the
// SDK's tools/list_changed (above); everything else passes.
func (lc *listChanges) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if method != methodToolsListChanged || !ok {
			return next(ctx, method, req)
		}
		if !lc.tell(ctx, ss) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// tell waits until no sync is changing the tools and reports whether ss
// is still to be told of the last generation, marking it told. The SDK
// sends from its timer's goroutine, never from within AddTool, so the
// wait is never on the sync doing the sending; were that to change, the
// notification's own deadline (ctx) would end the wait and send it.
func (lc *listChanges) tell(ctx context.Context, ss *sdk.ServerSession) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for lc.applying != nil {
		ch := lc.applying
		lc.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			lc.mu.Lock()
			lc.told[ss] = lc.gen
			return true
		}
		lc.mu.Lock()
	}
	if lc.told[ss] == lc.gen {
		return false
	}
	lc.told[ss] = lc.gen
	return true
}
