// Package approval holds the confirmation records of §6.6: a call whose
// approval policy asks for the user's confirmation runs only with an
// approval bound to its exact invocation digest (tenant ‖ tool name and
// version ‖ canonical normalized arguments, the digest idempotency uses).
//
// The package has the policy (Policy, Resolve), the record (Approval), the
// storage contract (Store) with an in-memory implementation (Memory), and
// the errors a face maps to its wire format. The decision to ask, and the
// consumption of an approval, are the tools pipeline's (tools/doc.go);
// package store keeps the records in SQLite and PostgreSQL, and
// approvaltest is the conformance suite every Store passes.
//
// Invariants every Store keeps:
//   - an approval is consumed at most once, atomically: of two concurrent
//     identical calls, one consumes it and runs;
//   - an approval is consumed only by a call of its own account and digest;
//   - only a pending, unexpired approval is decided; an approved one is
//     consumed only before it expires;
//   - every read is scoped by account.
package approval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Policy is a tool's approval policy.
type Policy string

const (
	// Never runs the tool without asking.
	Never Policy = "never"
	// Always asks before every call.
	Always Policy = "always"
	// BySideEffect asks before a call of an irreversible tool and runs
	// sandbox and read-only tools without asking. It is the default.
	BySideEffect Policy = "side_effect"
)

// Policies lists the valid policies.
var Policies = []Policy{Never, Always, BySideEffect}

// ParsePolicy checks a policy value.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("must be never, always or side_effect, not %q", clip(s))
}

// strictness orders policies by how much they ask: a session may make a
// tool's policy stricter, never looser (Resolve).
func (p Policy) strictness() int {
	switch p {
	case Always:
		return 2
	case Never:
		return 0
	}
	return 1
}

// Confirms reports whether a call of a tool with side-effect level side
// needs the user's confirmation under p.
func (p Policy) Confirms(side string) bool {
	switch p {
	case Always:
		return true
	case Never:
		return false
	}
	return side == "irreversible"
}

// Bases of a resolved policy (the runtime catalog's require_approval_basis).
const (
	BasisPlatform        = "platform_default" // side_effect, nobody set one
	BasisAccountOverride = "account_override" // the account's override of this tool
	BasisServerDefault   = "server_default"   // the remote MCP server's default
	BasisSession         = "session_override" // the session's tool-permissions
	BasisConfig          = "server_config"    // the config file's tools.require_approval
	BasisRequest         = "request"          // the /v1 request's require_approval
)

// Resolve is the effective policy of a tool: the account's (tool, with
// its basis; "" means none set, the platform's side_effect) made stricter
// by the session's when the session's asks more. A session cannot loosen
// what the account set: its permissions are written by keys that may not
// govern the account's tools.
func Resolve(account Policy, accountBasis string, session Policy) (Policy, string) {
	if account == "" {
		account, accountBasis = BySideEffect, BasisPlatform
	}
	if session != "" && session.strictness() > account.strictness() {
		return session, BasisSession
	}
	return account, accountBasis
}

// Tighten is p (with its basis) made stricter by by (with byBasis) when
// by asks more; "" by changes nothing. What a session does to a tool's
// policy (Resolve), a /v1 request's require_approval does to the result.
func Tighten(p Policy, basis string, by Policy, byBasis string) (Policy, string) {
	if by != "" && by.strictness() > p.strictness() {
		return by, byBasis
	}
	return p, basis
}

// Status is an approval's state.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Declined Status = "declined"
	Consumed Status = "consumed"
	// Expired is a pending or approved approval past its expiry. Stores
	// keep the status it had and report Expired from the clock (Effective).
	Expired Status = "expired"
)

// Statuses lists every status, the values of a list filter.
var Statuses = []Status{Pending, Approved, Declined, Consumed, Expired}

// Ways an approval is decided (Approval.DecidedVia).
const (
	ViaREST        = "rest"
	ViaTerminal    = "terminal"
	ViaElicitation = "mcp_elicitation"
	// The /v1 faces: an mcp_approval_response item of /v1/responses, the
	// extension field's approvals on /v1/chat/completions and /v1/messages.
	ViaV1Responses = "v1_responses"
	ViaV1Chat      = "v1_chat_completions"
	ViaV1Messages  = "v1_messages"
)

// Approval is one confirmation record.
type Approval struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	SessionID string `json:"session_id"`
	// Face is the face the call came through (mcp, v1, cli).
	Face        string `json:"face"`
	Tool        string `json:"tool_name"`
	ToolVersion string `json:"tool_version"`
	// SideEffectLevel is the tool's, when it asked.
	SideEffectLevel string `json:"side_effect_level"`
	// Digest is the invocation digest the approval is bound to.
	Digest string `json:"invocation_digest"`
	// Args are the canonical normalized arguments, to show the user.
	Args json.RawMessage `json:"arguments"`
	// ExecutionID is the call that asked.
	ExecutionID string    `json:"requested_by_execution_id"`
	Status      Status    `json:"status"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	DecidedBy   string    `json:"decided_by"`
	DecidedAt   time.Time `json:"decided_at"`
	DecidedVia  string    `json:"decided_via"`
	Reason      string    `json:"reason"`
	ConsumedBy  string    `json:"consumed_by"`
	ConsumedAt  time.Time `json:"consumed_at"`
}

// Effective is a's status at now: Expired for a pending or approved
// approval whose expiry has come.
func (a Approval) Effective(now time.Time) Status {
	if (a.Status == Pending || a.Status == Approved) && !now.Before(a.ExpiresAt) {
		return Expired
	}
	return a.Status
}

// Decision is a user's answer to one approval.
type Decision struct {
	Approve bool
	// By is the deciding identity (an API key id, "terminal", a user).
	By string
	// Via is how it was decided (ViaREST, ViaTerminal, ViaElicitation or
	// a face's own).
	Via    string
	Reason string
}

// MaxReasonBytes bounds a decision's reason.
const MaxReasonBytes = 1024

// Errors of a Store.
var (
	ErrNotFound = errors.New("approval: no such approval")
	// ErrNotPending: the approval was already decided, consumed or has
	// expired; Decide returns it wrapped in a *StateError.
	ErrNotPending = errors.New("approval: not pending")
	// ErrNoneApproved: Consume found no approved, unexpired, unconsumed
	// approval of the account and digest.
	ErrNoneApproved = errors.New("approval: no approval to consume")
)

// StateError says why an approval could not be decided.
type StateError struct{ Status Status }

func (e *StateError) Error() string { return fmt.Sprintf("the approval is %s, not pending", e.Status) }
func (e *StateError) Unwrap() error { return ErrNotPending }

// Query selects approvals of one account; empty fields do not filter.
type Query struct {
	AccountID string
	Status    Status
	SessionID string
	Tool      string
	// Now decides which pending and approved approvals count as expired.
	Now    time.Time
	Offset int
	Limit  int // 0 means all
}

// Store keeps approvals. Every method is scoped by account.
type Store interface {
	// CreateApproval stores a new approval (status pending).
	CreateApproval(ctx context.Context, a Approval) error
	// GetApproval returns one approval with its stored status (ErrNotFound
	// when the id is not the account's).
	GetApproval(ctx context.Context, accountID, id string) (Approval, error)
	// ListApprovals returns one page, newest first, and the total count.
	ListApprovals(ctx context.Context, q Query) ([]Approval, int, error)
	// DecideApproval approves or declines a pending approval not expired
	// at now, atomically; else ErrNotFound or a *StateError.
	DecideApproval(ctx context.Context, accountID, id string, d Decision, now time.Time) (Approval, error)
	// ConsumeApproval marks one approved, unexpired, unconsumed approval
	// of the account and digest consumed by executionID, atomically, and
	// returns it; ErrNoneApproved when there is none. Of two concurrent
	// calls at most one gets each approval.
	ConsumeApproval(ctx context.Context, accountID, digest, executionID string, now time.Time) (Approval, error)
}

// NewID returns a fresh approval id: "apr_" and 24 random hex digits.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return fmt.Sprintf("apr_%x", b)
}

// ValidID reports whether s has the shape of an approval id.
func ValidID(s string) bool {
	if len(s) != 28 || s[:4] != "apr_" {
		return false
	}
	for _, c := range s[4:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	r := []rune(s)
	if len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return string(r)
}
