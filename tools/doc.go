// Package tools holds the Tool interface and the Executor: the one pipeline
// that every tool call runs through, whether it arrives over MCP, from the
// hosted /v1 loop or from the command line.
//
// The pipeline, in order: parse the raw argument bytes strictly (duplicate
// keys, non-finite numbers and trailing data are rejected and the raw bytes are
// kept), validate against the tool's JSON Schema (dialect 2020-12), normalize
// (schema defaults, canonical numbers, the tool's own normalization against a
// recorded reference clock), authorize, execute under a deadline, and encode the
// result for a model (structured content plus a text rendering, a size cap that
// says truncated, outside text fenced as untrusted data). A result cut to the
// cap is never passed off as whole: its text ends with a note naming the
// execution and the read_result call that reads the rest, its structured
// content is cut only to a value its output schema accepts, and the whole
// result is kept in the journal for read_result (resultcut.go, readresult.go).
//
// The fence (fence.go) is the one boundary between toolhost's words and
// outside text: a random token in its opening and closing markers that the
// text is checked not to hold, the text itself unchanged, so Unfence gives
// it back. The encoder fences untrusted results with Options.Fencer, and
// every message that quotes outside words fences them with Fence; a cut of
// a fenced text (an error message's bound, the journal's) cuts inside the
// fence and never drops its closing marker.
//
// Authorization answers allow, deny or confirm (§6.6), in one place for
// every face: the authorize step (pipeline.go, approve.go). A call confirms
// when its tool's approval policy asks: never, always, or side_effect (an
// irreversible tool asks, sandbox and read-only tools do not), the
// policy being the remote tool's account override or its server's default,
// else Options.Policies (the config file), else side_effect — made stricter,
// never looser, by the session's require_approval (approval.Resolve). A
// call that confirms runs only under an approval bound to its invocation
// digest (Digest: account, tool name and version, canonical normalized
// arguments — the idempotency digest):
//
//   - (a) an approved, unexpired, unconsumed approval of the account and
//     digest is consumed, atomically (of two identical calls one runs), and
//     the call runs; its prepared event carries the confirmation (approval
//     id, who decided, when, through what);
//   - (b) else, when the face can ask its user (Proposal.Confirm), a pending
//     approval is stored, the call waits in awaiting_approval (its record
//     written and visible), and the face asks: accept consumes it and runs,
//     decline or a failed ask ends approval_declined (authorization_rejected),
//     a caller gone meanwhile ends cancelled_before_commit; a face whose
//     user answers in a later request (its Confirmer returns ErrAskLater)
//     ends the call approval_required, and the later call carries the
//     answer (Proposal.Answer), which runs it only for a pending approval
//     of its own account, session and digest, decided and consumed then
//     (answer.go), else approval_invalid;
//   - (c) else a pending approval is stored and the call ends with the tool
//     error approval_required (authorization_rejected), whose details carry
//     approval_id, tool, arguments (normalized) and expires_at. Whoever may
//     decide for the account approves it by id (Executor.DecideApproval:
//     REST now); the caller's next identical call then runs under it (a).
//     Changed arguments are another digest and need their own approval.
//
// An approval expires Options.ApprovalTTL after it was asked for (15
// minutes by default), on the executor's clock, decided or not.
//
// A tool failure is never a Go error to the caller: it is an Outcome with
// IsError set and a code and message a model can act on. Execute returns an
// error only when the runtime itself failed (for example its journal could not
// be written), which the caller must treat as an internal error.
package tools
