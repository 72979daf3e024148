package runcode

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/builtin"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// The runtime catalog tells the truth: for every slot, with the script
// gate on and off, a tool it lists as available is one a call in that
// session with that slot runs, and a tool it lists as unavailable is one
// such a call is refused.
func TestRuntimeCatalogIsWhatACallMayRun(t *testing.T) {
	ctx := context.Background()
	_, sb, _ := shared(t)
	for _, scripts := range []bool{true, false} {
		t.Run(fmt.Sprintf("scripts=%v", scripts), func(t *testing.T) {
			sessions, defs := session.NewMemStore(), tooldef.NewMemStore()
			now := time.Now()
			add := func(name, side string, slots []string, script string) {
				d := tooldef.New()
				d.ID, d.AccountID, d.Name, d.SideEffectLevel, d.AllowedSlots, d.CreatedAt, d.UpdatedAt = "tooldef_"+name, tools.LocalAccount, name, side, slots, now, now
				if script != "" {
					d.HandlerType, d.Handler = tooldef.HandlerScript, json.RawMessage(`{"script":`+script+`}`)
				}
				if err := defs.CreateDefinition(ctx, d, 0); err != nil {
					t.Fatal(err)
				}
			}
			add("lookup_npc", "none", []string{"narrator", "director"}, `"return { found: true };"`)
			add("any_slot", "none", nil, `"return 1;"`)
			add("launch", "irreversible", nil, `"return 1;"`)
			add("no_handler", "none", nil, "")
			add("roll_dice", "none", nil, `"return 1;"`)               // shadowed by the builtin
			add("oracle", "none", nil, `"return { from: 'custom' };"`) // shadowed by the preset
			preset := tooldef.New()
			preset.ID, preset.Name, preset.Source, preset.CreatedAt, preset.UpdatedAt = tooldef.PresetID("oracle"), "oracle", tooldef.SourcePreset, now, now
			preset.HandlerType, preset.Handler = tooldef.HandlerScript, json.RawMessage(`{"script":"return { from: 'preset' };"}`)
			ex, err := tools.NewExecutor(tools.Options{Sessions: sessions, Variables: sessions, Definitions: tooldef.WithPresets(defs, []tooldef.Definition{preset}),
				Scripts: NewScripts(sb), ScriptsEnabled: scripts}, builtin.All()...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sessions.TouchSession(ctx, tools.LocalAccount, "sess", now); err != nil {
				t.Fatal(err)
			}
			p := session.Default()
			p.AllowIrreversible = false
			p.SlotAllowList = map[string][]string{"director": {"get_time", "lookup_npc"}}
			p.SlotDenyList = map[string][]string{"verifier": {"roll_dice", "any_slot"}}
			if err := sessions.SetSessionPermissions(ctx, tools.LocalAccount, "sess", p, now); err != nil {
				t.Fatal(err)
			}
			args := map[string]string{"random_choice": `{"options":["a","b"]}`, "get_variable": `{"name":"v"}`, "set_variable": `{"name":"v","value":[1]}`, "query_memory": `{"query":"v"}`,
				// An execution no one made: read_result runs and answers not_found.
				tools.ReadResultTool: `{"execution_id":"00000000-0000-7000-8000-000000000000"}`,
				tools.WaitJobTool:    `{"execution_id":"00000000-0000-7000-8000-000000000000","wait_seconds":0}`,
				tools.CancelJobTool:  `{"execution_id":"00000000-0000-7000-8000-000000000000"}`}
			// Those three name an execution; none exists, so they run and answer not_found.
			readsByID := map[string]bool{tools.ReadResultTool: true, tools.WaitJobTool: true, tools.CancelJobTool: true}
			refused := map[string]bool{tools.CodePermissionDenied: true, tools.CodeScriptsDisabled: true, tools.CodeNoHandler: true}
			calls := 0
			for _, slot := range []string{"", "narrator", "director", "verifier", "memory"} {
				cat, err := ex.Runtime(ctx, tools.LocalAccount, "sess", slot)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]int{}
				for _, tl := range cat.Tools {
					seen[tl.Name]++
					if tl.Availability == tools.InConflict {
						if (tl.Name != "roll_dice" && tl.Name != "oracle") || len(cat.Conflicts) != 2 {
							t.Errorf("conflict %+v, conflicts %+v", tl, cat.Conflicts)
						}
						continue
					}
					a := args[tl.Name]
					if a == "" {
						a = `{}`
					}
					calls++
					out, err := ex.Execute(ctx, tools.Proposal{Tool: tl.Name, Args: json.RawMessage(a),
						Caller: tools.Caller{Face: "mcp", Slot: slot, SessionID: "sess", FloorID: fmt.Sprint("f", calls)}})
					if err != nil {
						t.Fatal(err)
					}
					ran := !refused[out.Code]
					if ran != (tl.Availability == tools.Available) {
						t.Errorf("slot %q, %s: catalog says %s (%v), the call says %q %s", slot, tl.Name, tl.Availability, deref(tl.AvailabilityReason), out.Code, out.Message)
					}
					if ran && out.IsError && out.Code != tools.CodeNoCharacter && (!readsByID[tl.Name] || out.Code != tools.CodeNotFound) {
						t.Errorf("slot %q, %s ran and failed: %s %s", slot, tl.Name, out.Code, out.Message)
					}
					if tl.Name == "oracle" && ran && (tl.ProviderType != "preset" || string(out.Structured) != `{"from":"preset"}`) {
						t.Errorf("oracle: catalog %s %s, call %s", tl.ProviderType, tl.ProviderID, out.Structured)
					}
					if (tl.AvailabilityReason == nil) != (tl.Availability == tools.Available) {
						t.Errorf("%s: availability %s with reason %v", tl.Name, tl.Availability, deref(tl.AvailabilityReason))
					}
				}
				if seen["roll_dice"] != 2 || seen["no_handler"] != 1 || seen["lookup_npc"] != 1 || seen["oracle"] != 2 || seen["set_variable"] != 1 {
					t.Errorf("slot %q: tools %v", slot, seen)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
