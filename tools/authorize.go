package tools

import (
	"context"
	"errors"
	"time"

	"toolhost/keys"
)

// KeysAuthorizer admits calls under the caller's API-key limits: scopes,
// the MCP per-minute and concurrency limits, and the monthly cap for tools
// that bill units. The paid units a call reports are settled when it ends.
func KeysAuthorizer(svc *keys.Service) Authorizer { return keysAuthorizer{svc} }

type keysAuthorizer struct{ svc *keys.Service }

func (a keysAuthorizer) Authorize(ctx context.Context, inv *Invocation) (func(Outcome), error) {
	t, err := a.svc.Admit(ctx, keys.Admission{
		KeyID:     inv.Caller.KeyID,
		AccountID: inv.Caller.AccountID,
		Slot:      inv.Caller.Slot,
		Tool:      inv.Spec.Name,
		Paid:      inv.Spec.PaidUnit != "",
		Free:      inv.Free,
		Lease:     inv.ID,
		Timeout:   time.Until(inv.Deadline),
	})
	if err != nil {
		var ref *keys.Refusal
		if errors.As(err, &ref) {
			te := &Error{Code: ref.Code, Message: ref.Message, RetryAfter: ref.RetryAfter}
			if ref.RetryAfter > 0 {
				te.Details = map[string]any{"retry_after_ms": ref.RetryAfter.Milliseconds()}
			}
			return nil, te
		}
		return nil, err
	}
	return func(out Outcome) { t.Done(out.Units) }, nil
}
