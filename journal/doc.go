// Package journal is the execution journal: one Record per tool call, the
// ordered state events of that call, the whole result of a call whose result
// reached its caller cut (FullResult), the transition rules of the call state
// machine, idempotency claims, and the storage interface (Store) that package
// store implements for SQLite and PostgreSQL.
//
// Invariants:
//
//   - A call's state only moves along the edges in transitions (state.go);
//     Trail refuses any other move, so an illegal sequence never reaches the
//     store. Rejection states are terminal: a rejected call is never executed.
//   - A record of a call with side effects (sandbox, irreversible) is
//     durable before its tool runs (Journal.Open) and again when the call
//     ends (Journal.Finish). With a spool (spool.go, the way serve runs)
//     durable means appended to this process's write-ahead spool file; the
//     spool reaches the store in batches, a call's two writes merged into
//     one row write, and every read through Journal.Store first makes the
//     spools of this process and of live replicas reach it. A process that
//     dies leaves its spool for the next one to apply, idempotently
//     (Store.Apply). Without a spool, writes of concurrent calls share one
//     store transaction (group commit).
//   - With a spool, a read-only call (side effect level none) need not be
//     durable before its tool runs: its opened record is appended merged
//     with its outcome (one insert of the finished record, one write), or
//     on its own once the call has run
//     Options.ReadOnlyOpenDelay (readonly.go), or when a reader flushes
//     the spool. Its outcome is durable before the call returns, like any
//     other. A crash loses only the opened records of read-only calls
//     younger than that delay, which changed nothing outside; this holds
//     while the store is down too: an opened record due in the spool
//     never waits for room there, it goes in over Options.MaxPending (by
//     at most one write per read-only call running), so no goroutine
//     waits on its behalf. Idempotency claims (Journal.Claim) are written
//     to the store before the tool runs, whatever the level.
//   - With the store down and the spool full, a write that needs room (an
//     opened record with side effects, an outcome) waits for it: until
//     the store takes writes again, its context ends, or Close. Close
//     spools the opened records of the read-only calls still running,
//     waits for the spills that have begun (no goroutine of the journal
//     outlives Close), and ends those waits with ErrClosed: a call whose
//     outcome is refused so stays in the spool as opened (the next start
//     applies it and reconciles the call), a call whose opened record is
//     refused does not run its tool, and nothing spooled is lost.
//   - Nothing is ever deleted from the journal. Records left opened by a dead
//     process are reconciled at start-up (Journal.Reconcile): read-only calls
//     to status timeout with commit outcome discarded, calls with side effects
//     to uncertain, each with an event that says so.
//   - Every query is scoped by account; the REST layer passes the caller's.
//
// Mapping of the seed's vocabulary: session_id is the MCP session or the
// caller's conversation id, floor_id the turn (one /v1 request; on MCP the
// call's _meta toolhost/floor-id, else the tools/call itself), page_id
// the page of that floor the caller names (toolhost/page-id,
// X-Toolhost-Page-Id; none otherwise), run_id one loop run inside a
// floor, caller_slot the role the caller declared, face "mcp", "hosted",
// "cli" or "console", provider_type one of ProviderTypes.
package journal
