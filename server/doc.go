// Package server wires the HTTP face of toolhost: the route table (/mcp
// behind a cross-origin check, the routes the binary hands in, /healthz, a
// JSON 404), the middleware every request passes (request id, a deadline
// for reading the body), authentication with API keys, OAuth tokens and
// scopes (Auth, which stores the caller's identity.Identity), the per-client connection limits of the listener (Limits) and
// the graceful life cycle of Serve. Protocol work lives in the
// sub-packages: server/mcp for MCP, server/v1 for the hosted /v1 formats,
// server/admin for the REST API.
package server
