package session

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
)

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Side-effect levels a permission check compares (catalog's values).
const irreversible = "irreversible"

// Permissions are a session's base tool permissions, in the seed's
// snake_case shape. A nil limit means no limit.
type Permissions struct {
	Enabled               bool                `json:"enabled"`
	MaxCallsPerTurn       *int                `json:"max_calls_per_turn"`
	MaxStepsPerGeneration *int                `json:"max_steps_per_generation"`
	AllowIrreversible     bool                `json:"allow_irreversible"`
	SlotAllowList         map[string][]string `json:"slot_allow_list"`
	SlotDenyList          map[string][]string `json:"slot_deny_list"`
	// RequireApproval is the session's approval policy (never, always,
	// side_effect), nil when it sets none. It makes a tool's policy
	// stricter, never looser (approval.Resolve).
	RequireApproval *string `json:"require_approval,omitempty"`
}

// Default is what a session that never set permissions may do: everything.
func Default() Permissions {
	return Permissions{Enabled: true, AllowIrreversible: true,
		SlotAllowList: map[string][]string{}, SlotDenyList: map[string][]string{}}
}

// Patch is a PUT or PATCH body: every field optional, so the two can tell
// an absent field from a zero one.
type Patch struct {
	Enabled               *bool               `json:"enabled"`
	MaxCallsPerTurn       json.RawMessage     `json:"max_calls_per_turn"`
	MaxStepsPerGeneration json.RawMessage     `json:"max_steps_per_generation"`
	AllowIrreversible     *bool               `json:"allow_irreversible"`
	SlotAllowList         map[string][]string `json:"slot_allow_list"`
	SlotDenyList          map[string][]string `json:"slot_deny_list"`
	// RequireApproval: absent keeps, null clears.
	RequireApproval json.RawMessage `json:"require_approval"`
}

// MaxListEntries bounds the tool names of one slot's list, and MaxLimit the
// two per-turn limits.
const (
	MaxListEntries = 256
	MaxLimit       = 10000
)

// Validate checks p against the known slots; it names the field at fault.
func (p Permissions) Validate(slots []string) error {
	for name, lim := range map[string]*int{"max_calls_per_turn": p.MaxCallsPerTurn, "max_steps_per_generation": p.MaxStepsPerGeneration} {
		if lim != nil && (*lim < 0 || *lim > MaxLimit) {
			return fmt.Errorf("%s must be an integer from 0 to %d or null, not %d", name, MaxLimit, *lim)
		}
	}
	for field, m := range map[string]map[string][]string{"slot_allow_list": p.SlotAllowList, "slot_deny_list": p.SlotDenyList} {
		for slot, names := range m {
			if !slices.Contains(slots, slot) {
				return fmt.Errorf("%s: unknown slot %q; slots: %v", field, clipID(slot), slots)
			}
			if len(names) > MaxListEntries {
				return fmt.Errorf("%s.%s: %d tool names, at most %d", field, slot, len(names), MaxListEntries)
			}
			for _, n := range names {
				if !toolName.MatchString(n) {
					return fmt.Errorf("%s.%s: %q is not a tool name (want 1 to 64 of A-Z a-z 0-9 _ -)", field, slot, clipID(n))
				}
			}
		}
	}
	return nil
}

// Apply returns p with the fields of patch applied. With merge (PATCH), the
// two slot lists merge per slot key (a slot given replaces that slot's
// list; an empty list removes the slot); without (PUT), every field absent
// from patch takes its default.
func (p Permissions) Apply(patch Patch, merge bool) (Permissions, error) {
	out := Default()
	if merge {
		out = p.clone()
	}
	if patch.Enabled != nil {
		out.Enabled = *patch.Enabled
	}
	if patch.AllowIrreversible != nil {
		out.AllowIrreversible = *patch.AllowIrreversible
	}
	var err error
	if out.MaxCallsPerTurn, err = limit(patch.MaxCallsPerTurn, out.MaxCallsPerTurn, "max_calls_per_turn"); err != nil {
		return p, err
	}
	if out.MaxStepsPerGeneration, err = limit(patch.MaxStepsPerGeneration, out.MaxStepsPerGeneration, "max_steps_per_generation"); err != nil {
		return p, err
	}
	if patch.RequireApproval != nil {
		if out.RequireApproval, err = policy(patch.RequireApproval); err != nil {
			return p, err
		}
	} else if !merge {
		out.RequireApproval = nil
	}
	out.SlotAllowList = mergeLists(out.SlotAllowList, patch.SlotAllowList, merge)
	out.SlotDenyList = mergeLists(out.SlotDenyList, patch.SlotDenyList, merge)
	return out, nil
}

// limit reads a limit field: absent keeps cur, null clears it.
func limit(raw json.RawMessage, cur *int, name string) (*int, error) {
	if raw == nil {
		return cur, nil
	}
	if string(raw) == "null" {
		return nil, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%s must be an integer or null, not %s", name, clipID(string(raw)))
	}
	return &n, nil
}

// Policies are the values of require_approval (approval.Policies; the
// session package does not import tools).
var Policies = []string{"never", "always", "side_effect"}

// policy reads require_approval: null clears it.
func policy(raw json.RawMessage) (*string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !slices.Contains(Policies, s) {
		return nil, fmt.Errorf("require_approval must be never, always, side_effect or null, not %s", clipID(string(raw)))
	}
	return &s, nil
}

func mergeLists(cur, patch map[string][]string, merge bool) map[string][]string {
	if !merge {
		if patch == nil {
			return map[string][]string{}
		}
		cur = map[string][]string{}
	}
	for slot, names := range patch {
		if merge && len(names) == 0 {
			delete(cur, slot)
			continue
		}
		cur[slot] = dedupe(names)
	}
	return cur
}

func dedupe(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (p Permissions) clone() Permissions {
	out := p
	out.SlotAllowList = maps.Clone(p.SlotAllowList)
	out.SlotDenyList = maps.Clone(p.SlotDenyList)
	if p.RequireApproval != nil {
		v := *p.RequireApproval
		out.RequireApproval = &v
	}
	if out.SlotAllowList == nil {
		out.SlotAllowList = map[string][]string{}
	}
	if out.SlotDenyList == nil {
		out.SlotDenyList = map[string][]string{}
	}
	return out
}

// Denial says which rule of the permissions refused a call.
type Denial struct {
	Rule    string // the field that denied: enabled, allow_irreversible, slot_deny_list, slot_allow_list, max_calls_per_turn
	Message string
}

// Allows checks one call of tool (with its side-effect level) by slot
// against p, in the order of the seed: tools off, irreversible tools, the
// slot's deny list (it wins), the slot's allow list (exhaustive when
// present). A call that declares no slot is checked by the rules that name
// no slot. The per-turn count is the caller's (it needs the turn).
func (p Permissions) Allows(tool, slot, sideEffect string) *Denial {
	switch {
	case !p.Enabled:
		return &Denial{"enabled", "tools are disabled for this session (tool_permissions.enabled is false)"}
	case !p.AllowIrreversible && sideEffect == irreversible:
		return &Denial{"allow_irreversible", fmt.Sprintf("%s is irreversible and this session does not allow irreversible tools", tool)}
	}
	if slot == "" {
		return nil
	}
	if slices.Contains(p.SlotDenyList[slot], tool) {
		return &Denial{"slot_deny_list", fmt.Sprintf("%s is on the deny list of slot %s in this session", tool, slot)}
	}
	if allow, ok := p.SlotAllowList[slot]; ok && !slices.Contains(allow, tool) {
		return &Denial{"slot_allow_list", fmt.Sprintf("%s is not on the allow list of slot %s in this session", tool, slot)}
	}
	return nil
}
