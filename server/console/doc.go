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
// Tenancy: a page reads and acts through the REST handlers themselves,
// called in process with the session's key as the bearer (approvals, keys,
// usage), or through the very functions those handlers run
// (admin.ExecutionQuery, admin.Execution, admin.Event) with the account the
// key belongs to. An admin key may name another account (the account
// selector), as GET /admin/keys?account= does; any other key only ever
// reads its own.
//
// Every form carries a CSRF token bound to the session id (to a nonce
// cookie before sign-in), and every unsafe request also passes
// net/http's CrossOriginProtection (Sec-Fetch-Site, then Origin against
// Host). Every answer carries a strict Content-Security-Policy
// (default-src 'none', the stylesheet from 'self', no script at all) and
// refuses framing.
//
// Extra pages plug in through Options.Pages: the job queue's page and its
// figures on the overview join the console that way once jobs exist.
package console
