// Package v1 is the hosted face's wire formats: it reads a /v1 request in
// the caller's format (Chat Completions, Responses, Messages and its
// count_tokens), checks the hosted-tool declaration and the extension field
// against the seed's 400 rules, runs the loop (package loop) and renders the
// result or the stream of loop events back in the caller's format.
//
// What belongs here and not in loop: every wire-format detail (field names,
// SSE chunk shapes, error bodies), the extension field named by the
// configured label, whole-request idempotency (Idempotency-Key) and the
// round-log endpoint. The loop sees only canonical requests and emits
// format-neutral events; the upstream clients (server/v1/upstream/openai and
// server/v1/upstream/anthropic) also decode the caller's messages of their
// dialect.
//
// Each format is a face (face.go): it parses a body into a request, which
// renders a finished run or streams its events; one serve function runs
// parse → route → loop → render/stream for all three, and the streams share
// one SSE writer (sse.go). Every body, chunk and event is a struct whose
// fields are in the alphabetical order of their JSON names; the fields an
// upstream sent that we do not interpret and the extension field (named by
// the label) travel as Extra through wire.Marshal, which writes keys in
// sorted order — so the bytes are those the golden files pin.
//
// Approvals (approvals.go, responses_approvals.go): a declaration's
// require_approval becomes the run's loop.ApprovalPolicy, which only
// tightens the tools' own policies. A paused run is rendered in each
// format's shapes (mcp_approval_request items; the extension field's
// approval_requests, with Messages' pause_turn), and a continuation's
// answers (mcp_approval_response items; the extension field's approvals)
// become loop.Request.Approvals with the decided calls placed in the
// conversation for the loop to fill in.
//
// Responses tool types (responses_tooltypes.go, responses_websearch.go):
// namespace, custom, apply_patch and shell tools become functions for the
// upstream under names the request maps back (callerNames), so their calls
// return as the items the caller declared them as; the web search tools are served by the
// hosted web_search and fetch_page, their domain filters fixed over the
// model's arguments (loop.Hosted.Fixed), their calls rendered as
// web_search_call items and the results they found cited as url_citation
// annotations; code_interpreter is served by run_code, its calls rendered
// as code_interpreter_call items.
//
// Messages server tools (messages_servertools.go): on a route whose
// upstream is Anthropic's API they pass through; elsewhere web_search,
// fetch_page and run_code serve them, within their declared max_uses
// (loop.Hosted.MaxUses) and domain filters, their calls rendered as
// server_tool_use and the tools' result blocks.
package v1
