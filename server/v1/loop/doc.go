// Package loop runs hosted tools for one /v1 request: it calls an upstream
// model, executes the hosted tools the model asks for through the same
// tools.Executor as the MCP face, feeds the results back and repeats until
// the model answers, following the numbered rules of the hosted-tools seed.
//
// The loop knows nothing about the wire format the caller spoke nor about
// the upstream's protocol. A wire format (server/v1: Chat Completions,
// Messages, Responses) translates its request into a canonical Request,
// receives format-neutral Events while the loop runs (for streaming), and
// renders the Result. An Upstream (server/v1/upstream/openai for
// OpenAI-compatible Chat Completions, server/v1/upstream/anthropic for Messages,
// server/v1/upstream/responses for the Responses API, all on the shared
// transport of server/v1/upstream) translates the canonical conversation
// into its protocol; this package never imports them. Where the caller's
// format and the upstream protocol are the same dialect, whatever the loop
// does not read travels verbatim (Message.Raw, Request.Options,
// Usage.Detail; for the Responses dialect Request.Native and
// Message.NativeItems); where they differ, the upstream client translates
// the canonical fields.
//
// Invariants:
//   - hosted tool definitions are appended after the caller's functions;
//   - a name the model calls is hosted (a definition the loop added), the
//     caller's (one of Request.Tools) or invented (neither, in a run with
//     hosted tools); an invented call is run like a hosted one and fails
//     at lookup in the executor (tools.Proposal.Visible: unknown_tool,
//     listing the hosted and caller names, no near-name matching), so the
//     model sees the refusal and the journal records it;
//   - a round whose calls are all hosted or invented runs them (at most
//     MaxParallel at a time: an errgroup with that limit) and appends the
//     results in the model's order;
//   - a round with any caller function ends the loop; its hosted calls are
//     skipped, its invented calls go back to the caller with the caller's
//     calls in the model's order, as they would without hosted tools (in a
//     stream they are held back until the round is known to end);
//   - after a hosted round a forced tool choice becomes auto;
//   - after MaxToolRounds hosted rounds one last call with tool choice none
//     is made; hosted calls it still asks for are skipped, invented ones go
//     back to the caller;
//   - the run's Budgets (budget.go: model calls, tool calls, result bytes
//     fed to the model, wall clock, cost) end the loop the same way once
//     one is spent, Result.StoppedBy naming it; calls over the tool-call
//     budget in a round are skipped (the first ones in the model's order
//     run), results over the byte budget are withheld from the model (a
//     note instead), and at the wall clock running calls are cancelled;
//     a call skipped for a budget is reported but never proposed, started
//     or rendered as content;
//   - a hosted call the pipeline ends approval_required (its policy,
//     made stricter by the request's Hosted.Approval, asks and no approval
//     was given) pauses the run after its round: the round's other calls
//     ran, no further upstream call is made, Result.Awaiting lists the
//     calls waiting; Request.Approvals, the caller's answers, are checked
//     (all before any is decided), decided and carried out before the
//     first upstream call: an approved call runs exactly the approval's
//     invocation under it (Result.Resumed), a declined one is told to the
//     model; their events go out right after the first upstream id
//     (approvals.go);
//   - a hosted call runs with the request's Hosted.Fixed arguments of its
//     tool in place of the model's (a caller's domain filter holds whatever
//     the model writes; fixedargs.go); the Call keeps the model's own;
//   - a tool failure is a result for the model (status failed; its text
//     starts with the machine code), never an error of the request; an error of the runtime itself cancels the
//     round's other calls and fails the request.
//
// How the three wire formats render a run:
//   - Chat Completions (server/v1/chat.go): EventTextDelta and
//     EventCallerCallDelta become chunks; EventHostedCallStarted/Finished
//     become the extension's tool notices; Result gives the totals.
//   - Messages: EventHostedCallsProposed gives a round's mcp_tool_use blocks
//     (all before the results), EventHostedCallsDone its mcp_tool_result
//     blocks in the model's order; Call.IsError is is_error.
//   - Responses: Result.Definitions is mcp_list_tools (annotations from
//     Runner.Catalog()); each Call of EventHostedCallsDone is an mcp_call
//     item; Result.First is the first round's id.
//
// Skipped calls (Status skipped) are only in Result.Calls and the round's
// EventRoundEnd; formats that hide them simply do not render them.
package loop
