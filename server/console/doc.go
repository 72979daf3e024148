// Package console serves the operator console at /console: server-rendered
// pages (html/template, assets embedded with go:embed, no script) over the
// same checks the REST API applies.
//
// Sign-in exchanges an API key for a session cookie. The cookie is the key
// itself sealed with AES-256-GCM under a key derived from the server's
// secret (TOOLHOST_SECRET_KEY, so every replica opens it), with a session
// id and an expiry: nothing is stored, and every request authenticates the
// key again through the key service, so revoking the key ends every session
// opened with it on every replica at its next request. Signing out forgets
// the cookie in the browser and the session id on this replica until it
// expires.
//
// With Options.OAuth, a user may instead sign in through the embedded
// authorization server (oauth.go), as its OAuth client: authorization
// code with PKCE S256 and the resource indicator, the state and verifier
// sealed in a cookie of the browser that started, the code exchanged in
// process. The session then seals the access token, verified at every
// request as REST verifies a bearer (a revoked grant ends it at once on
// every replica), and ends when the token does; the pages call REST with
// it as the bearer.
//
// Tenancy: a page reads and acts through the REST handlers themselves,
// called in process with the session's key as the bearer (approvals, keys,
// usage, job cancellation), or through the very functions those handlers
// run (admin.ExecutionQuery, admin.Execution, admin.Event) with the account
// the key belongs to. An admin key may name another account (the account
// selector), as GET /admin/keys?account= does: the approvals page hands
// it to /approvals?account= and the jobs page's Cancel to
// DELETE /tool-executions/{id}/job?account=, which check it again (an
// extra page gets it as Viewer.Account); any other key only ever reads
// its own.
//
// The journal's pages go by keyset (journal.ListPage): a page asks for
// the records after its cursor's position, without a count, so the
// thousandth page of a large journal costs what the first does. A cursor
// is bound to the query (filters, order, account) that made it; one
// changed or carried to another query is refused.
//
// Every form carries a CSRF token bound to the session id (to a nonce
// cookie before sign-in), and every unsafe request also passes
// net/http's CrossOriginProtection (Sec-Fetch-Site, then Origin against
// Host). Every answer carries a strict Content-Security-Policy
// (default-src 'none', the stylesheet from 'self', no script at all) and
// refuses framing.
//
// Extra pages plug in through Options.Pages, with their forms (Page.Post,
// behind the same session, cross-origin and CSRF checks) and a fragment of
// the overview (Page.Overview): the job queue's page (JobsPage) joins the
// console that way.
package console
