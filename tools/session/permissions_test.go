package session

import (
	"encoding/json"
	"reflect"
	"testing"
)

func intp(n int) *int { return &n }

func TestPermissionsApplyMergesSlotListsPerSlot(t *testing.T) {
	seed := Default()
	seed.AllowIrreversible = false
	seed.MaxCallsPerTurn, seed.MaxStepsPerGeneration = intp(10), intp(5)
	seed.SlotAllowList = map[string][]string{"narrator": {"roll_dice", "get_time"}}
	seed.SlotDenyList = map[string][]string{"verifier": {"set_variable"}}
	cases := []struct {
		name  string
		body  string
		merge bool
		want  func(p *Permissions)
	}{
		{"seed PATCH example keeps narrator and adds director", `{"max_calls_per_turn":20,"slot_allow_list":{"director":["get_time"]}}`, true, func(p *Permissions) {
			p.MaxCallsPerTurn = intp(20)
			p.SlotAllowList = map[string][]string{"narrator": {"roll_dice", "get_time"}, "director": {"get_time"}}
		}},
		{"PATCH replaces one slot's list", `{"slot_deny_list":{"verifier":["roll_dice","roll_dice"]}}`, true, func(p *Permissions) {
			p.SlotDenyList = map[string][]string{"verifier": {"roll_dice"}}
		}},
		{"PATCH with an empty list removes the slot", `{"slot_allow_list":{"narrator":[]}}`, true, func(p *Permissions) {
			p.SlotAllowList = map[string][]string{}
		}},
		{"PATCH null clears a limit", `{"max_steps_per_generation":null}`, true, func(p *Permissions) { p.MaxStepsPerGeneration = nil }},
		{"PUT replaces everything", `{"enabled":false}`, false, func(p *Permissions) {
			*p = Default()
			p.Enabled = false
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var patch Patch
			if err := json.Unmarshal([]byte(c.body), &patch); err != nil {
				t.Fatal(err)
			}
			got, err := seed.clone().Apply(patch, c.merge)
			if err != nil {
				t.Fatal(err)
			}
			want := seed.clone()
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
	var bad Patch
	_ = json.Unmarshal([]byte(`{"max_calls_per_turn":"ten"}`), &bad)
	if _, err := seed.Apply(bad, true); err == nil {
		t.Error("a string limit was accepted")
	}
}

func TestPermissionsValidateNamesTheField(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Permissions
	}{
		{"unknown slot", Permissions{SlotAllowList: map[string][]string{"villain": {"get_time"}}}},
		{"bad tool name", Permissions{SlotDenyList: map[string][]string{"narrator": {"get time"}}}},
		{"unicode tool name", Permissions{SlotDenyList: map[string][]string{"narrator": {"get_tіme"}}}}, // Cyrillic і
		{"negative limit", Permissions{MaxCallsPerTurn: intp(-1)}},
		{"huge limit", Permissions{MaxStepsPerGeneration: intp(MaxLimit + 1)}},
	} {
		if err := c.p.Validate(DefaultSlots); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if err := Default().Validate(DefaultSlots); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestPermissionsAllows(t *testing.T) {
	p := Default()
	p.AllowIrreversible = false
	p.SlotAllowList = map[string][]string{"narrator": {"roll_dice", "get_time"}}
	p.SlotDenyList = map[string][]string{"verifier": {"set_variable"}, "narrator": {"get_time"}}
	off := Default()
	off.Enabled = false
	cases := []struct {
		name             string
		p                Permissions
		tool, slot, side string
		rule             string
	}{
		{"allowed by the allow list", p, "roll_dice", "narrator", "none", ""},
		{"deny list wins over the allow list", p, "get_time", "narrator", "none", "slot_deny_list"},
		{"allow list is exhaustive", p, "web_search", "narrator", "none", "slot_allow_list"},
		{"deny list of another slot", p, "set_variable", "verifier", "sandbox", "slot_deny_list"},
		{"slot without lists", p, "web_search", "director", "none", ""},
		{"no slot: slot lists do not apply", p, "set_variable", "", "sandbox", ""},
		{"irreversible refused", p, "send_mail", "director", "irreversible", "allow_irreversible"},
		{"disabled refuses everything", off, "get_time", "", "none", "enabled"},
		{"defaults allow", Default(), "send_mail", "memory", "irreversible", ""},
	}
	for _, c := range cases {
		d := c.p.Allows(c.tool, c.slot, c.side)
		got := ""
		if d != nil {
			got = d.Rule
		}
		if got != c.rule {
			t.Errorf("%s: rule %q, want %q", c.name, got, c.rule)
		}
	}
}
