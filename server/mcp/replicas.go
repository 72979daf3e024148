package mcp

import (
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// byProtocol is the streamable-HTTP endpoint.
//
// With Options.Stateless (the replica mode) it is the go-sdk's stateless
// handler, which serves both generations of clients without sessions, so
// any replica answers any request and a load balancer needs no affinity:
//
//   - revision 2026-07-28 and later carry everything in each request
//     (no initialize, no Mcp-Session-Id, server/discover, per-request
//     _meta); closing a request's HTTP connection cancels its call;
//   - older revisions get an ephemeral session per request (their
//     initialize is answered and forgotten), and so nothing that needs a
//     session: no server-initiated request (elicitation: a call needing
//     the user's approval ends approval_required instead), no standalone
//     GET stream (405) and no notification outside a request's own
//     response (list_changed).
//
// Otherwise it keeps sessions (Mcp-Session-Id): every request of a session
// must reach the replica that holds it (affinity on that header), and a
// 2026-07-28 client falls back to initialize and a session.
func (s *Server) byProtocol(getServer func(*http.Request) *sdk.Server) http.Handler {
	return sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		Stateless:                    s.opts.Stateless,
		JSONResponse:                 s.opts.JSONResponse,
		SessionTimeout:               s.opts.SessionTimeout,
		MaxRequestBodyBytes:          s.opts.Limits.MaxBodyBytes,
		Logger:                       s.opts.Logger,
		PropagateRequestCancellation: true,
	})
}
