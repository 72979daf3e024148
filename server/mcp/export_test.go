package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// OnSyncWait makes s call f whenever a sync of an account waits for the
// one running: the event a test of their order waits for. Set it before s
// serves anything.
func OnSyncWait(s *Server, f func(account string)) { s.syncWaits = f }

// OnSyncChange makes s call f after each change a sync makes to an
// account's server. Set it before s serves anything.
func OnSyncChange(s *Server, f func(account string)) { s.syncChanged = f }

// ServerFor is the go-sdk server of the account, for a test that connects
// to it over an in-memory transport.
func ServerFor(ctx context.Context, s *Server, account string) *sdk.Server {
	return s.serverFor(ctx, account)
}
