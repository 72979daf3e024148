package journal

import (
	"context"
	"encoding/json"
	"time"
)

// FullResult is the whole result of one call whose result reached its
// caller cut: the executor cut it to its result cap (or the record keeps
// less of it than all), so the rest is kept here, beside the record, for
// the caller to read in pages (the read_result builtin, the MCP resource
// toolhost://executions/{id}/result). It lives as long as its record:
// nothing in the journal is ever deleted.
//
// A copy over the executor's stored-result cap is itself kept cut: Text
// (or Structured) then holds the first bytes only and TextBytes (or
// StructuredBytes) says how many the tool produced.
type FullResult struct {
	AccountID   string
	ExecutionID string
	// Text is the whole text rendering as the tool produced it, before
	// any fence; empty when the tool gave only structured content, whose
	// JSON is then the text.
	Text []byte
	// Structured is the whole structured content (JSON), nil when none.
	Structured json.RawMessage
	// TextBytes and StructuredBytes are the sizes the tool produced.
	TextBytes, StructuredBytes int64
	// Untrusted says the text came from outside (a web page, a remote
	// MCP server): whoever shows a page of it fences it.
	Untrusted bool
	CreatedAt time.Time
}

// TextComplete and StructuredComplete say whether the stored copy holds
// all of what the tool produced.
func (r *FullResult) TextComplete() bool { return int64(len(r.Text)) >= r.TextBytes }

func (r *FullResult) StructuredComplete() bool {
	return int64(len(r.Structured)) >= r.StructuredBytes
}

// PutResult keeps the whole result of a cut call. It writes to the store
// at once, not through the spool: the copy can be megabytes, and a caller
// reads it only after the call has returned. The record itself may reach
// the store later (spooled); the two are joined by execution id.
func (j *Journal) PutResult(ctx context.Context, r FullResult) error {
	return j.store.PutResult(ctx, r)
}
