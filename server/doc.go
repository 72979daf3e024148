// Package server wires the HTTP face of toolhost: the route table, the
// middleware chain (request id, body limit, Origin check, and later
// authentication and limits), health and the graceful life cycle of the
// listener. Protocol work lives in the sub-packages: server/mcp for MCP.
package server
