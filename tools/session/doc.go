// Package session is the session entity of the tools API: an id owned by
// one account, created explicitly (POST /sessions) or by the first call
// that names it (an MCP session, X-Session-Id, metadata.session_id), with
// its metadata and its base tool permissions (the seed's
// metadata_json.tool_permissions).
//
// Invariants:
//   - A session belongs to exactly one account; every lookup is by
//     (account, id), so another account's session is simply not found.
//   - Permissions are stored whole; the merge rules of PATCH live in
//     Permissions.Merge, not in the stores.
//
// The package declares the Store it needs; package store implements it for
// SQLite and PostgreSQL, MemStore keeps it in memory.
package session
