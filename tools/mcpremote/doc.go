// Package mcpremote is an account's own remote MCP servers, and their tools
// served as toolhost tools.
//
// Registration: the remote MCP servers an account registers with
// toolhost: the entity (name, URL, auth, per-tool overrides), its
// validation, the storage contract with an in-memory store, the last
// tools/list snapshot of each server, and the sealing of its secrets.
//
// Invariants:
//   - A server belongs to one account; every lookup is by (account, id), so
//     another account's server is simply not found. Its name is unique
//     within the account and is the namespace of its tools (NAME__tool).
//   - Secrets (header values, the bearer token, the OAuth client secret,
//     the tokens of a user's consent)
//     never sit in a Server in clear: the stores keep only Sealed, the
//     AES-GCM ciphertext made by a Sealer under the server key, and only
//     Sealer.Open turns it back into Secrets for the client that dials.
//   - The stores keep what they are given; validation (Input.Apply) and the
//     SSRF policy of the URL are the callers'.
//
// Gateway: it holds one go-sdk client session per registered server
// (a server belongs to one account, so this is one per server per
// account), reused by every call and opened again when the server drops
// it; it lists the server's tools, keeps the last listing as the server's
// snapshot in the store, and answers tools.RemoteTools for the Executor.
//
// Names: a remote tool t of the server named s is the toolhost tool
// s__t, with t lower-cased and '-' and '.' written '_'. A remote name with
// any other character, a result longer than 64 characters, and two remote
// tools that come out as one name are reported in the runtime catalog's
// conflicts and not callable.
//
// Catalog source: live when the server answered just now (a tools/list
// within the TTL, else a ping), cached when it does not answer and a
// snapshot exists (its age is reported), unavailable when it does not
// answer and there is none: "cannot confirm", not "no tools". A listing
// the store refuses to save stays the newest the gateway shows (live,
// else cached with its own time, with Status.SaveErr) and its save is
// tried again at each use of the link, with the listing's time; the
// stores keep the newer of two snapshots, so a snapshot's time is always
// that of its tools. Listings are
// refreshed on notifications/tools/list_changed, after the TTL, and on
// demand (Refresh). Every listing is compared with the tools known before
// it (the link's last listing, else the snapshot), and Options.Changed is
// told once when they differ, never for the same tools: the MCP face then
// sends its sessions one list_changed. A server's list_changed
// notifications are coalesced (at most one re-listing waits) and spaced
// (RelistInterval), so a server that sends them without end costs one
// listing per interval. StoredListing, for the hosted /v1 catalog and the MCP
// face's tools/list, asks no server: the live listing in memory, else the
// snapshot; a link busy connecting is not waited for. RemoteListing, for
// the runtime catalog, asks each server now.
//
// Calls: arguments were validated by the pipeline against the schema the
// server listed; here they are sent as they are. Each server has a
// timeout and a concurrency cap; a response body (or SSE event) over
// MaxResultBytes is cut off and the call fails, and so is one nested past
// the 1000 levels a go-sdk client reads, or whose structuredContent would
// be once relayed (depth.go: upstream_result_too_deep, never sent
// again). Retries follow the
// tool-call seed (retry.go): a call that never reached the server (refused
// connection, expired session) is sent again once on a new session; a
// call lost after it was sent is retried once only when the tool has no
// side effects, and otherwise fails as outcome_unknown (journaled
// uncertain); a read refused with 429 or 503 is sent again after a
// backoff that fits the call's deadline. Every attempt is reported to the
// journal (tools.Invocation.Attempted) with its invocation id, which the
// request carries in _meta. Results are untrusted data; the remote
// isError and structuredContent are kept.
//
// Governance (catalog.go): a tool's side-effect level and slots come from
// the account's override, else its annotations, else the server's
// Defaults, else the platform's; its input schema is the one listed, or
// a shallow projection of it when no client should take it whole
// (projection.go).
//
// Consent (oauth_authorization_code): Authorize meets the server's 401
// and does what the go-sdk's AuthorizationCodeHandler does (discovery,
// registration, state, PKCE, consent.go) but keeps the pending flow in
// the Store (PendingAuthorization: the state's hash, the verifier and
// client sealed), and returns the URL for the user; Complete, on any
// process sharing the store, takes that row by the callback's state
// (bound to the account and server, good once, until AuthorizeTimeout)
// and exchanges the code. The tokens obtained are sealed into the server.
// An expired access token (on the gateway's clock, Now) is refreshed once,
// however many calls on however many links and replicas find it expired
// at the same moment (grant.go): the gateway's callers of a grant share
// one refresh, which runs in the store's lock of the server's secrets
// (Store.UpdateMCPSecrets), reads the stored grant again first (another
// replica may have refreshed it: its token is used) and stores the rotated
// tokens before the lock is released. A refresh token is never sent twice,
// which an authorization server that detects reuse answers by revoking the
// grant. Until a user authorized, or after a refused refresh, the server
// fails with ErrNotAuthorized. Client-credentials tokens expire on the
// same clock (tokens.go).
// Every request and refresh names the server as the RFC 8707 resource, and
// an RFC 9068 token whose aud names another is refused
// (ErrTokenForAnotherResource).
//
// Authorization servers are untrusted too (authclient.go): every answer
// toolhost reads from one (metadata, registration, tokens, also for
// client credentials) is read whole within a timeout and at most
// MaxAuthResponseBytes, else ErrAuthResponseTooLarge or
// ErrAuthServerTimeout, and within one consent flow the first refusal
// ends the flow. Nothing is stored from a refused answer.
//
// Every connection goes through the dialer the caller gives (the SSRF
// policy of internal/egress, the one fetch_page dials under), and secrets
// are opened from their sealed form only to set the request headers; they
// are never logged.
package mcpremote
