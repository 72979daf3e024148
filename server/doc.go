// Package server wires the HTTP face of toolhost: the route table (/mcp
// behind a cross-origin check, the routes the binary hands in, /healthz, a
// JSON 404), the middleware every request passes (request id, a deadline
// for reading the body, and with Telemetry a server span in the caller's
// W3C trace and http.server.request.duration by route: telemetry.go),
// the one traceparent parser the faces read the trace id with (trace.go),
// authentication with API keys, OAuth tokens and
// scopes (Auth, which stores the caller's identity.Identity), the per-client connection limits of the listener (Limits) and
// the graceful life cycle of Serve. Protocol work lives in the
// sub-packages: server/mcp for MCP, server/v1 for the hosted /v1 formats,
// server/admin for the REST API.
package server
