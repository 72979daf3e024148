package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/session"
)

func TestSessionPermissionsInTheAuthorizeStep(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	p := &probe{name: "roll", run: echo}
	e, err := NewExecutor(Options{Sessions: st}, p)
	if err != nil {
		t.Fatal(err)
	}
	set := func(sid string, edit func(*session.Permissions)) {
		if _, err := st.TouchSession(ctx, LocalAccount, sid, time.Now()); err != nil {
			t.Fatal(err)
		}
		perm := session.Default()
		edit(&perm)
		if err := st.SetSessionPermissions(ctx, LocalAccount, sid, perm, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	two := 2
	set("deny", func(p *session.Permissions) { p.SlotDenyList = map[string][]string{"verifier": {"roll"}} })
	set("allow", func(p *session.Permissions) { p.SlotAllowList = map[string][]string{"narrator": {"other"}} })
	set("off", func(p *session.Permissions) { p.Enabled = false })
	set("turn", func(p *session.Permissions) { p.MaxCallsPerTurn = &two })
	cases := []struct {
		name              string
		sid, slot, floor  string
		code, rule, state string
		status            journal.Status
	}{
		{"no session: allowed", "", "verifier", "", "", "", "observed", journal.StatusSuccess},
		{"new session is created and allows", "fresh", "verifier", "", "", "", "observed", journal.StatusSuccess},
		{"deny list of the slot", "deny", "verifier", "", CodePermissionDenied, "slot_deny_list", "authorization_rejected", journal.StatusDenied},
		{"another slot is not denied", "deny", "narrator", "", "", "", "observed", journal.StatusSuccess},
		{"allow list is exhaustive", "allow", "narrator", "", CodePermissionDenied, "slot_allow_list", "authorization_rejected", journal.StatusDenied},
		{"disabled", "off", "", "", CodePermissionDenied, "enabled", "authorization_rejected", journal.StatusDenied},
		{"unknown slot", "", "villain", "", CodeInvalidSlot, "", "parse_rejected", journal.StatusError},
		{"turn call 1", "turn", "", "f1", "", "", "observed", journal.StatusSuccess},
		{"turn call 2", "turn", "", "f1", "", "", "observed", journal.StatusSuccess},
		{"turn call 3 is over max_calls_per_turn", "turn", "", "f1", CodePermissionDenied, "max_calls_per_turn", "authorization_rejected", journal.StatusDenied},
		{"the next turn starts again", "turn", "", "f2", "", "", "observed", journal.StatusSuccess},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := e.Execute(ctx, Proposal{Tool: "roll", Args: json.RawMessage(`{}`),
				Caller: Caller{Face: "mcp", Slot: c.slot, SessionID: c.sid, FloorID: c.floor}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Code != c.code {
				t.Fatalf("code %q (%s), want %q", out.Code, out.Message, c.code)
			}
			if c.rule != "" && !json.Valid(out.Structured) {
				t.Fatalf("structured %s", out.Structured)
			}
			if c.rule != "" {
				var body struct {
					Error struct{ Rule string } `json:"error"`
				}
				_ = json.Unmarshal(out.Structured, &body)
				if body.Error.Rule != c.rule {
					t.Errorf("rule %q, want %q", body.Error.Rule, c.rule)
				}
			}
			rec, err := e.Journal().Store().Get(ctx, LocalAccount, out.ExecutionID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != c.status || string(rec.State) != c.state || rec.CallerSlot != c.slot || rec.Face != "mcp" {
				t.Errorf("journal: status %s state %s slot %q face %q; want %s %s %q mcp", rec.Status, rec.State, rec.CallerSlot, rec.Face, c.status, c.state, c.slot)
			}
		})
	}
	if _, err := st.GetSession(ctx, LocalAccount, "fresh"); err != nil {
		t.Errorf("a call naming a new session did not create it: %v", err)
	}
}
