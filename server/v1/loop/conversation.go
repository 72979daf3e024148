package loop

import (
	"encoding/json"

	"github.com/toolhost/toolhost/internal/identity"
)

// Dialect names a wire format family. Raw fields tagged with a dialect are
// sent verbatim only to an upstream that speaks the same dialect.
type Dialect string

const (
	// DialectOpenAI is the OpenAI Chat Completions wire format.
	DialectOpenAI Dialect = "openai"
	// DialectAnthropic is the Anthropic Messages wire format.
	DialectAnthropic Dialect = "anthropic"
	// DialectResponses is the OpenAI Responses wire format.
	DialectResponses Dialect = "responses"
)

// Role of a message in the canonical conversation.
type Role string

const (
	RoleSystem    Role = "system"
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries one tool result (ToolCallID says which call).
	RoleTool Role = "tool"
)

// Message is one turn of the canonical conversation.
//
// The canonical fields (Role, Text, Parts, ToolCalls, ToolCallID, IsError)
// are always filled, so any upstream can translate the message. Raw is the
// message exactly as the caller (or the upstream) wrote it in Dialect; an
// upstream of the same dialect sends Raw untouched, so fields the loop does
// not understand (name, refusal, reasoning, cache control, images) survive.
type Message struct {
	Role Role
	// Text is the plain-text content (all text parts joined).
	Text string
	// Parts is the content as a list when the message had more than plain
	// text (images, files); each part keeps its raw form.
	Parts []Part
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall
	// ToolCallID is the call a RoleTool message answers.
	ToolCallID string
	// IsError marks a failed tool result (Anthropic is_error).
	IsError bool
	// ApprovalID marks the RoleTool result of a call decided by one of
	// Request.Approvals: the loop fills in Text and IsError.
	ApprovalID string
	// NativeItems are Responses items of the turn that have no canonical
	// form (reasoning items with their encrypted_content, the calls of
	// built-in tools the provider ran: web_search_call, ...), verbatim and
	// in the order they came. They precede the message's canonical content;
	// only a Responses upstream sends them, the others leave them out.
	NativeItems []json.RawMessage

	Dialect Dialect
	Raw     json.RawMessage
}

// Part is one content part of a message.
type Part struct {
	Type string // "text", "image_url", "image", ...
	Text string
	Raw  json.RawMessage
}

// ToolCall is one function call an assistant proposed.
type ToolCall struct {
	ID   string
	Name string
	// Args are the argument bytes exactly as the model produced them.
	Args json.RawMessage
	// ApprovalID marks the call of one of Request.Approvals: the loop
	// fills in Name and Args from the approval.
	ApprovalID string
}

// Function is a function definition offered to the model.
type Function struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	// Dialect and Raw: the caller's definition verbatim (strict flags,
	// cache control), sent untouched to an upstream of the same dialect.
	Dialect Dialect
	Raw     json.RawMessage
}

// ToolChoiceMode is how the model must use tools.
type ToolChoiceMode string

const (
	ToolChoiceDefault  ToolChoiceMode = "" // the caller said nothing
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceFunction forces the function Name.
	ToolChoiceFunction ToolChoiceMode = "function"
)

// ToolChoice is the canonical tool choice.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
	// Dialect and Raw: the caller's own spelling, sent untouched while the
	// loop has not changed the choice and the upstream speaks the dialect.
	Dialect Dialect
	Raw     json.RawMessage
}

// Request is one caller request in canonical form.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the caller's own functions, in the caller's order.
	Tools      []Function
	ToolChoice ToolChoice
	// Options are the remaining top-level request fields (temperature,
	// max_tokens, response_format, ...) of OptionsDialect, passed to the
	// upstream untouched when it speaks that dialect.
	Options        map[string]json.RawMessage
	OptionsDialect Dialect
	// Stream asks the upstream for a stream so text deltas can be relayed.
	Stream bool
	// Approvals are the caller's decisions on the approvals an earlier
	// response asked for (approvals.go), carried out before the first
	// upstream call; ApprovalVia is the face that carried them
	// (approval.Decision.Via).
	Approvals   []ApprovalAnswer
	ApprovalVia string
	// Native is what the caller's request says that only an upstream of
	// its dialect can take (nil when nothing).
	Native *Native
}

// Native are the parts of a caller's request in its own wire format that
// the canonical form does not carry: the members toolhost does not use
// (include, store, reasoning, prompt_cache_key, ...) and the tools the
// provider runs itself (web_search, file_search, ...). An upstream of
// Dialect sends them as they came, in place of the translated Options;
// the others ignore them.
type Native struct {
	Dialect Dialect
	Fields  map[string]json.RawMessage
	Tools   []json.RawMessage
}

// Hosted says which hosted tools a request enabled and how the loop may
// use them.
type Hosted struct {
	// Tools are the enabled hosted tool names, in publishing order.
	Tools []string
	// MaxToolRounds is how many rounds may run hosted tools before the final
	// call with tool choice none.
	MaxToolRounds int
	// Approval is the request's require_approval (approvals.go).
	Approval ApprovalPolicy
	// Fixed are arguments the caller set for a hosted tool, by tool name:
	// they replace the model's own in every call of it (fixedargs.go).
	Fixed map[string]map[string]json.RawMessage
	// MaxUses bounds the calls of a hosted tool over the whole run, by
	// tool name: a call beyond it fails with CodeMaxUses without running
	// (maxuses.go).
	MaxUses map[string]int
}

// Caller is who sent the request; it becomes the tools.Caller of every
// hosted call (slot "hosted").
type Caller struct {
	RequestID string // journal floor_id
	SessionID string
	// PageID is the caller's page the request names (metadata.page_id or
	// X-Toolhost-Page-Id), journal page_id; "" when none.
	PageID string
	// Slot is the caller slot the request declared (X-Toolhost-Slot).
	Slot    string
	TraceID string
	// Identity is who the request acts for (authentication decided).
	identity.Identity
	// IdempotencyKey of the whole request; each hosted call derives its own
	// key from it so a replayed request replays its calls.
	IdempotencyKey string
	// Metadata is the request's metadata object (copied into round logs).
	Metadata map[string]string
}
