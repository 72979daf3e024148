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
// A tool failure is never a Go error to the caller: it is an Outcome with
// IsError set and a code and message a model can act on. Execute returns an
// error only when the runtime itself failed (for example its journal could not
// be written), which the caller must treat as an internal error.
package tools
