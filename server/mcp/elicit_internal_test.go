package mcp

import (
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// Only a client that declared form elicitation (or elicitation without
// modes) is asked: mid-call before 2026-07-28 (canElicit), through
// input-required results since (asksInRounds).
func TestCanElicit(t *testing.T) {
	caps := func(el *sdk.ElicitationCapabilities) *sdk.ClientCapabilities {
		return &sdk.ClientCapabilities{Elicitation: el}
	}
	form := &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}
	tests := []struct {
		name              string
		ip                *sdk.InitializeParams
		midCall, inRounds bool
	}{
		{"no initialize", nil, false, false},
		{"no capabilities", &sdk.InitializeParams{ProtocolVersion: "2025-06-18"}, false, false},
		{"no elicitation", &sdk.InitializeParams{ProtocolVersion: "2025-06-18", Capabilities: caps(nil)}, false, false},
		{"elicitation without modes", &sdk.InitializeParams{ProtocolVersion: "2025-06-18", Capabilities: caps(&sdk.ElicitationCapabilities{})}, true, false},
		{"form", &sdk.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: caps(form)}, true, false},
		{"url only", &sdk.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: caps(&sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}})}, false, false},
		{"multi round trip protocol", &sdk.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: caps(form)}, false, true},
		{"multi round trip without modes", &sdk.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: caps(&sdk.ElicitationCapabilities{})}, false, true},
		{"multi round trip url only", &sdk.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: caps(&sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}})}, false, false},
		{"multi round trip without elicitation", &sdk.InitializeParams{ProtocolVersion: "2026-07-28", Capabilities: caps(nil)}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := canElicit(tt.ip); got != tt.midCall {
				t.Errorf("canElicit = %v, want %v", got, tt.midCall)
			}
			if got := asksInRounds(tt.ip); got != tt.inRounds {
				t.Errorf("asksInRounds = %v, want %v", got, tt.inRounds)
			}
		})
	}
}

// The message escapes what the tool's author and the caller wrote: a
// description or tool name cannot hide or reorder the request either.
func TestApprovalMessageEscapesEveryPart(t *testing.T) {
	req := tools.ApprovalRequest{
		Approval: approval.Approval{ID: "apr_1", Tool: "demo__w\u202eetirw", SideEffectLevel: "irreversible",
			Args: []byte(`{"note":"a\u2066b"}`), ExpiresAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		Description: "Writes.\x1b[8m hidden \u200b" + strings.Repeat("d", 5000),
		Policy:      approval.Always,
	}
	msg := approvalMessage(req)
	for _, bad := range []string{"\u202e", "\u2066", "\x1b", "\u200b"} {
		if strings.Contains(msg, bad) {
			t.Errorf("raw %q in %q", bad, msg)
		}
	}
	for _, want := range []string{`demo__w\u202eetirw`, `\u2066`, `\u001b[8m`, "apr_1", "2030-01-02 03:04:05Z", "bytes in all"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %.400s", want, msg)
		}
	}
	if len(msg) > 4096 {
		t.Errorf("message of %d bytes", len(msg))
	}
}
