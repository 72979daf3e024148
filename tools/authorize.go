package tools

import (
	"context"
	"errors"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
)

// KeysAuthorizer admits calls under the caller's API-key limits: scopes,
// the MCP per-minute and concurrency limits, and the monthly cap for tools
// that bill units. The paid units a call reports are settled when it ends.
//
// It is also a limitGate: the rate and concurrency limits are taken before
// the call is parsed (Executor.Execute), so a key over them gets no
// parsing, validation or schema work done for free.
//
// A call is billed in the month it began on the executor's clock (the
// time its journal record starts), not on the key service's own clock.
func KeysAuthorizer(svc *keys.Service) Authorizer { return keysAuthorizer{svc} }

type keysAuthorizer struct{ svc *keys.Service }

// limitGate is an Authorizer whose cheap per-key limits can be checked
// before parsing. The value it returns reaches Authorize as
// Invocation.admitted; done releases what it holds (safe to call twice).
// at is when the call began on the executor's clock.
type limitGate interface {
	gate(ctx context.Context, p *Proposal, lease string, timeout time.Duration, at time.Time) (admitted any, done func(Outcome), err error)
}

func (a keysAuthorizer) gate(ctx context.Context, p *Proposal, lease string, timeout time.Duration, at time.Time) (any, func(Outcome), error) {
	t, err := a.svc.Limit(ctx, keys.Admission{
		KeyID:     p.Caller.KeyID,
		AccountID: p.Caller.AccountID,
		Face:      p.Caller.Face,
		Tool:      p.Tool,
		Lease:     lease,
		Timeout:   timeout,
		At:        at,
	})
	if err != nil {
		return nil, nil, refusal(err)
	}
	return t, func(out Outcome) { t.Done(out.Units) }, nil
}

func (a keysAuthorizer) Authorize(ctx context.Context, inv *Invocation) (func(Outcome), error) {
	t, ok := inv.admitted.(*keys.Ticket)
	if !ok {
		var err error
		t, err = a.svc.Limit(ctx, keys.Admission{
			KeyID: inv.Caller.KeyID, AccountID: inv.Caller.AccountID, Face: inv.Caller.Face,
			Tool: inv.Spec.Name, Lease: inv.ID, Timeout: time.Until(inv.Deadline), At: inv.Ref.Clock,
		})
		if err != nil {
			return nil, refusal(err)
		}
	}
	return reserve(ctx, t, inv)
}

// reserve completes an admission: the most a paid call can cost held
// against the key's monthly cap, the call's budget set from it.
func reserve(ctx context.Context, t *keys.Ticket, inv *Invocation) (func(Outcome), error) {
	paid := inv.Spec.PaidUnit != ""
	if paid && inv.Free {
		t.Meter() // a cached answer: nothing held against the monthly cap
	} else if err := t.Reserve(ctx, paid, inv.MaxUnits); err != nil {
		t.Done(0)
		return nil, refusal(err)
	}
	inv.UnitBudget = t.Budget()
	return func(out Outcome) {
		if out.Receipt != nil {
			// Enqueued: the job's run is the call, metered when it runs
			// (jobMeter), so the enqueueing admission counts none.
			t.Withdraw()
			return
		}
		t.Done(out.Units)
	}, nil
}

// jobMeter is an Authorizer that also meters the run of a deferred call
// (RunJob): its units are billed to the caller's key like an inline
// call's, in the month the attempt runs, and it is refused when the key
// is revoked or its monthly cap is reached. The key's per-minute and
// concurrency limits were the enqueueing call's; running jobs are bounded
// by the account's job limit instead.
type jobMeter interface {
	meterJob(ctx context.Context, inv *Invocation, at time.Time) (func(Outcome), error)
}

func (a keysAuthorizer) meterJob(ctx context.Context, inv *Invocation, at time.Time) (func(Outcome), error) {
	t, err := a.svc.Limit(ctx, keys.Admission{
		KeyID: inv.Caller.KeyID, AccountID: inv.Caller.AccountID,
		Tool: inv.Spec.Name, Lease: inv.ID, At: at, // no face: no concurrency slot to time
	})
	if err != nil {
		return nil, refusal(err)
	}
	return reserve(ctx, t, inv)
}

func refusal(err error) error {
	var ref *keys.Refusal
	if errors.As(err, &ref) {
		return &Error{Code: ref.Code, Message: ref.Message, RetryAfter: ref.RetryAfter}
	}
	return err
}
