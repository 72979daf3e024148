package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
)

// Codes of the session step of the pipeline.
const (
	// CodePermissionDenied: the session's tool permissions refused the
	// call; its error object's "rule" names the rule.
	CodePermissionDenied = "permission_denied"
	// CodeInvalidSlot: the caller declared a slot that is not configured.
	CodeInvalidSlot = "invalid_slot"
	// CodeSessionUnavailable: the session store did not answer.
	CodeSessionUnavailable = "session_unavailable"
)

// checkSlot refuses a declared slot outside the configured set.
func (e *Executor) checkSlot(slot string) *Error {
	if slot == "" || slices.Contains(e.opts.Slots, slot) {
		return nil
	}
	return Errorf(CodeInvalidSlot, "unknown caller slot %q; the slots are: %s", clip.Echo(slot), strings.Join(e.opts.Slots, ", "))
}

// Slots returns the configured caller slots.
func (e *Executor) Slots() []string { return slices.Clone(e.opts.Slots) }

// Sessions returns the session store, nil when the executor has none.
func (e *Executor) Sessions() session.Store { return e.opts.Sessions }

// checkSession is the session part of the authorize step: the call's
// session is created when new, and its base permissions are applied. A
// call without a session id has no permissions to apply.
//
// The session's require_approval, when it sets one, is stored in policy.
func (e *Executor) checkSession(ctx context.Context, account string, inv *Invocation, policy *approval.Policy) (*Error, error) {
	sid := inv.Caller.SessionID
	if e.opts.Sessions == nil || sid == "" {
		return nil, nil
	}
	s, err := e.opts.Sessions.TouchSession(ctx, account, sid, e.opts.Clock())
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", sid, err)
	}
	p := s.Permissions
	if p.RequireApproval != nil {
		*policy = approval.Policy(*p.RequireApproval)
	}
	if d := p.Allows(inv.Spec.Name, inv.Caller.Slot, string(inv.Spec.SideEffect)); d != nil {
		return denial(d), nil
	}
	if p.MaxCallsPerTurn != nil && !e.turns.take(e.opts.Clock(), account, sid, inv.Caller.FloorID, *p.MaxCallsPerTurn) {
		return denial(&session.Denial{Rule: "max_calls_per_turn",
			Message: fmt.Sprintf("this turn already made the %d tool calls this session allows per turn (max_calls_per_turn)", *p.MaxCallsPerTurn)}), nil
	}
	return nil, nil
}

// MaxSteps returns the session's max_steps_per_generation when it sets
// one: the hosted loop runs at most that many tool rounds (loop.Runner).
// A session store that does not answer sets no limit here; each call is
// still checked in the authorize step.
func (e *Executor) MaxSteps(ctx context.Context, accountID, sessionID string) (int, bool) {
	if e.opts.Sessions == nil || sessionID == "" {
		return 0, false
	}
	if accountID == "" {
		accountID = e.opts.AccountID
	}
	s, err := e.opts.Sessions.TouchSession(ctx, accountID, sessionID, e.opts.Clock())
	if err != nil || s.Permissions.MaxStepsPerGeneration == nil {
		return 0, false
	}
	return *s.Permissions.MaxStepsPerGeneration, true
}

func denial(d *session.Denial) *Error {
	return &Error{Code: CodePermissionDenied, Message: d.Message, Details: denialDetails{Rule: d.Rule}}
}

// denialDetails are a permission_denied's own fields.
type denialDetails struct {
	Rule string `json:"rule"`
}

// turns counts the calls of each turn (account, session, floor) for
// max_calls_per_turn. Counts live in this process: a /v1 request runs in
// one process, and an MCP floor spread over replicas is counted per
// replica. Turns untouched for turnIdle are forgotten.
type turns struct {
	mu    sync.Mutex
	m     map[[3]string]*turn
	sweep time.Time
}

type turn struct {
	n    int
	seen time.Time
}

const turnIdle = 30 * time.Minute

// take counts one call of a turn, at now, unless it already has limit
// calls; a call without a floor is a turn of its own.
func (t *turns) take(now time.Time, account, sid, floor string, limit int) bool {
	if floor == "" {
		return limit >= 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[[3]string]*turn{}
	}
	if now.Sub(t.sweep) > time.Minute {
		for k, v := range t.m {
			if now.Sub(v.seen) > turnIdle {
				delete(t.m, k)
			}
		}
		t.sweep = now
	}
	k := [3]string{account, sid, floor}
	tu := t.m[k]
	if tu == nil {
		tu = &turn{}
		t.m[k] = tu
	}
	tu.seen = now
	if tu.n >= limit {
		return false
	}
	tu.n++
	return true
}
