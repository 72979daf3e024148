package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/catalog"
)

// receiptSchema is the structured content of a deferred call's receipt
// (tools.Receipt and the members the executor adds to it).
const receiptSchema = `{
  "type": "object",
  "title": "receipt",
  "description": "the call runs in the background: its result will be in the resource result_uri",
  "properties": {
    "execution_id": {"type": "string"},
    "runtime_job_id": {"type": "string"},
    "status": {"type": "string", "enum": ["queued", "running"]},
    "result_uri": {"type": "string"},
    "delivery_mode": {"type": "string", "const": "async_job"},
    "result_visibility": {"type": "string", "const": "deferred_receipt"},
    "how_to_fetch": {"type": "string"}
  },
  "required": ["execution_id", "runtime_job_id", "status", "result_uri", "delivery_mode"]
}`

// outputSchema is the output schema tools/list gives a tool: its own, or
// for a tool that may run as a background job, its own or a receipt —
// clients validate structured content against it, and a deferred call's
// is the receipt.
func outputSchema(spec catalog.Spec, lang catalog.Lang) json.RawMessage {
	out := spec.OutputIn(lang)
	if !spec.Deferrable() {
		return out
	}
	return json.RawMessage(fmt.Sprintf(`{"type":"object","anyOf":[%s,%s]}`, out, receiptSchema))
}
