package mcp

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// ApproveField is the one field of the approval form: the user approves
// the call by accepting the form with it true.
const ApproveField = "approve"

// maxShownArgs bounds the arguments (in runes) an approval message
// shows; the approval itself (GET /approvals/{id}) keeps them whole.
const maxShownArgs = 2000

// multiRoundTripVersion is the first protocol version on which a server
// may not send requests while it serves one (SEP-2322): elicitation there
// is an input-required result (rounds.go).
const multiRoundTripVersion = "2026-07-28"

// approvalForm is the requested schema of an approval elicitation: one
// boolean, so that form-mode clients render a confirm box.
var approvalForm = map[string]any{
	"type": "object",
	"properties": map[string]any{
		ApproveField: map[string]any{
			"type":        "boolean",
			"title":       "Run this call",
			"description": "Approve exactly this invocation (tool and arguments).",
			"default":     true,
		},
	},
	"required": []string{ApproveField},
}

// canElicit reports whether a client that initialized with ip declared
// form elicitation on a protocol version where the server may ask in the
// middle of a tools/call.
func canElicit(ip *sdk.InitializeParams) bool {
	return elicitsForm(ip) && ip.ProtocolVersion < multiRoundTripVersion
}

// asksInRounds reports whether a client that initialized with ip declared
// form elicitation on a protocol version where the server asks through an
// input-required result (rounds.go).
func asksInRounds(ip *sdk.InitializeParams) bool {
	return elicitsForm(ip) && ip.ProtocolVersion >= multiRoundTripVersion
}

// elicitsForm reports whether the client declared form elicitation.
func elicitsForm(ip *sdk.InitializeParams) bool {
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	el := ip.Capabilities.Elicitation
	// Neither form nor url declared means form (the capability before modes).
	return el.Form != nil || el.URL == nil
}

// approvalParams is the form elicitation that asks the user about req.
func approvalParams(req tools.ApprovalRequest) *sdk.ElicitParams {
	return &sdk.ElicitParams{Mode: "form", Message: approvalMessage(req), RequestedSchema: approvalForm}
}

// decision is the user's answer to an approval form, decided by the
// caller (its API key, else its account) through elicitation: accept
// with approve true approves; anything else (no answer at all included)
// declines, with the action as reason.
func decision(caller identity.Identity, res *sdk.ElicitResult) approval.Decision {
	by := caller.KeyID
	if by == "" {
		by = caller.AccountID
	}
	d := approval.Decision{By: by, Via: approval.ViaElicitation}
	switch {
	case res == nil:
		d.Reason = "the call carried no answer to the approval form"
	case res.Action == "accept" && res.Content[ApproveField] == true:
		d.Approve = true
	case res.Action == "accept":
		d.Reason = "accepted without approve: true"
	default:
		d.Reason = "the user chose " + safeText(clip.Echo(res.Action)) + " in the elicitation"
	}
	return d
}

// elicitConfirmer asks the session's user through elicitation/create
// (form mode) to approve the call: accept with approve true approves, as
// the caller's identity via ViaElicitation; decline, cancel or accept
// without approve decline with the action as reason; an error (the client
// failed or went away) is returned for the pipeline to decline or, when
// the call's ctx ended, to end it cancelled_before_commit. progress, when
// the call carries a progress token, is told that the call waits.
func elicitConfirmer(ss *sdk.ServerSession, caller identity.Identity, progress func(float64, float64, string)) tools.Confirmer {
	return func(ctx context.Context, req tools.ApprovalRequest) (approval.Decision, error) {
		a := req.Approval
		if progress != nil {
			progress(0, 0, fmt.Sprintf("waiting for the user's approval of %s (%s)", safeText(a.Tool), a.ID))
		}
		res, err := ss.Elicit(ctx, approvalParams(req))
		if err != nil {
			return approval.Decision{}, fmt.Errorf("elicitation failed: %w", err)
		}
		return decision(caller, res), nil
	}
}

// approvalMessage is what the user reads: the tool, what it does, why it
// asks, the normalized arguments (escaped and clipped) and the approval.
func approvalMessage(req tools.ApprovalRequest) string {
	a := req.Approval
	var b strings.Builder
	fmt.Fprintf(&b, "Approve a call of %s?\n", safeText(a.Tool))
	if d := strings.TrimSpace(req.Description); d != "" {
		fmt.Fprintf(&b, "What it does: %s\n", safeText(clip.Runes(d, 512)))
	}
	fmt.Fprintf(&b, "Side effect: %s (require_approval %s)\n", safeText(a.SideEffectLevel), req.Policy)
	fmt.Fprintf(&b, "Arguments: %s", safeText(clip.Runes(string(a.Args), maxShownArgs)))
	fmt.Fprintf(&b, "\nApproval %s, expires %s. Only this invocation runs if you approve.",
		a.ID, a.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"))
	return b.String()
}

// safeText escapes what a client would act on or hide: control characters
// and invisible format characters (bidirectional overrides, zero-width
// ones), so an argument cannot reorder or hide part of the message.
func safeText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
