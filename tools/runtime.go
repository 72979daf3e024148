package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// RuntimeCatalog is the seed's per-session runtime tool catalog: what a
// call in that session, declaring that slot, may run right now.
type RuntimeCatalog struct {
	SessionID   string        `json:"session_id"`
	GeneratedAt int64         `json:"generated_at"`
	Tools       []RuntimeTool `json:"tools"`
	Conflicts   []Conflict    `json:"conflicts"`
	// MCPServers are the account's remote MCP servers and where their
	// tools come from now (remote.go).
	MCPServers []RemoteServer `json:"mcp_servers,omitempty"`
}

// RuntimeTool is one tool of the runtime catalog, with every field of the
// seed.
type RuntimeTool struct {
	Name                 string                `json:"name"`
	ProviderID           string                `json:"provider_id"`
	ProviderType         string                `json:"provider_type"`
	Source               string                `json:"source"`
	SideEffectLevel      string                `json:"side_effect_level"`
	AllowedSlots         []string              `json:"allowed_slots"`
	Availability         string                `json:"availability"`
	AvailabilityReason   *string               `json:"availability_reason"`
	AsyncCapability      string                `json:"async_capability"`
	DefaultDeliveryMode  string                `json:"default_delivery_mode"`
	CatalogSource        *string               `json:"catalog_source"`
	ReplaySafety         string                `json:"replay_safety"`
	ResultVisibility     string                `json:"result_visibility"`
	SideEffectLevelBasis string                `json:"side_effect_level_basis"`
	AllowedSlotsBasis    string                `json:"allowed_slots_basis"`
	ParameterSchemaBasis string                `json:"parameter_schema_basis"`
	ReplaySafetyBasis    string                `json:"replay_safety_basis"`
	MetadataBasisDetail  map[string]BasisScope `json:"metadata_basis_detail"`
	// RequireApproval is the call's approval policy in this session
	// (never, always, side_effect; approve.go) and RequireApprovalBasis
	// where it came from.
	RequireApproval      string `json:"require_approval"`
	RequireApprovalBasis string `json:"require_approval_basis"`
}

// BasisScope is one entry of metadata_basis_detail.
type BasisScope struct {
	Basis string `json:"basis"`
	Scope string `json:"scope"`
}

// Conflict is two tools that answer to one name: the one a call runs
// (Winner) and those it shadows.
type Conflict struct {
	Name     string   `json:"name"`
	Winner   string   `json:"winner"`
	Shadowed []string `json:"shadowed"`
	Reason   string   `json:"reason"`
}

// Availability values of the seed.
const (
	Available   = "available"
	Unavailable = "unavailable"
	InConflict  = "conflict"
)

// Bases and their scopes (metadata_basis_detail).
const (
	basisDeclared = "tool_declared"
	basisPlatform = "platform_default"
	basisInferred = "inferred_from_execution_policy"
)

var basisScope = map[string]string{basisDeclared: "tool", basisPlatform: "platform", basisInferred: "inference",
	BasisAccountOverride: "account", BasisServerDefault: "server", BasisShallowProjection: "projection",
	approval.BasisSession: "session", approval.BasisConfig: "platform"}

// Bases a remote tool's governance may have besides those above.
const (
	BasisDeclared        = basisDeclared
	BasisPlatform        = basisPlatform
	BasisAccountOverride = "account_override"
	// BasisServerDefault: the registered MCP server's defaults
	// (mcpremote.Defaults) decided it.
	BasisServerDefault = "server_default"
	// BasisShallowProjection: the parameter schema is toolhost's shallow
	// projection of the one the MCP server listed (mcpremote, offeredSchema).
	BasisShallowProjection = "shallow_schema_projection"
)

// replaySafety derives the seed's replay_safety from a side-effect level.
func replaySafety(side catalog.SideEffect, declaredSafe bool) string {
	switch {
	case declaredSafe:
		return "safe"
	case side == catalog.SideEffectNone:
		return "safe"
	case side == catalog.SideEffectSandbox:
		return "confirm_on_replay"
	}
	return "never_auto_replay"
}

func runtimeTool(spec catalog.Spec, providerID, providerType, source string, slots []string, slotsBasis, replayBasis string) RuntimeTool {
	if slots == nil {
		slots = []string{}
	}
	t := RuntimeTool{
		Name: spec.Name, ProviderID: providerID, ProviderType: providerType, Source: source,
		SideEffectLevel: string(spec.SideEffect), AllowedSlots: slots, Availability: Available,
		AsyncCapability: "inline_only", DefaultDeliveryMode: "inline", ResultVisibility: "immediate",
		ReplaySafety:         replaySafety(spec.SideEffect, spec.ReplaySafe && providerType == journal.ProviderBuiltin),
		SideEffectLevelBasis: basisDeclared, AllowedSlotsBasis: slotsBasis, ParameterSchemaBasis: basisDeclared,
		ReplaySafetyBasis: replayBasis,
	}
	if spec.Deferrable() {
		t.AsyncCapability = catalog.DeferredOK
	}
	if deliveryOf(spec, DeliveryDefault) == DeliveryAsync {
		t.DefaultDeliveryMode, t.ResultVisibility = string(DeliveryAsync), VisibilityDeferred
	}
	t.MetadataBasisDetail = map[string]BasisScope{
		"async_capability":      {basisDeclared, basisScope[basisDeclared]},
		"default_delivery_mode": {basisDeclared, basisScope[basisDeclared]},
		"side_effect_level":     {t.SideEffectLevelBasis, basisScope[t.SideEffectLevelBasis]},
		"allowed_slots":         {t.AllowedSlotsBasis, basisScope[t.AllowedSlotsBasis]},
		"parameter_schema":      {t.ParameterSchemaBasis, basisScope[t.ParameterSchemaBasis]},
		"replay_safety":         {t.ReplaySafetyBasis, basisScope[t.ReplaySafetyBasis]},
	}
	return t
}

func (t *RuntimeTool) unavailable(reason string) {
	t.Availability, t.AvailabilityReason = Unavailable, &reason
}

// Runtime builds the runtime catalog of a session that exists (else
// session.ErrNotFound) for a caller declaring slot. It applies the same
// rules, through the same functions, as the authorize step of Execute, so
// what it lists as available is what a call would be allowed to run. What
// it cannot know ahead is per call: the arguments, the count of calls so
// far in a turn, and the key's rate and monthly limits.
func (e *Executor) Runtime(ctx context.Context, account, sessionID, slot string) (RuntimeCatalog, error) {
	cat := RuntimeCatalog{SessionID: sessionID, GeneratedAt: e.opts.Clock().UnixMilli(), Tools: []RuntimeTool{}, Conflicts: []Conflict{}}
	if e.opts.Sessions == nil {
		return cat, session.ErrNotFound
	}
	if te := e.checkSlot(slot); te != nil {
		return cat, te
	}
	s, err := e.opts.Sessions.GetSession(ctx, account, sessionID)
	if err != nil {
		return cat, err
	}
	perms := s.Permissions
	var sessionPolicy approval.Policy
	if perms.RequireApproval != nil {
		sessionPolicy = approval.Policy(*perms.RequireApproval)
	}
	common := func(t *RuntimeTool) {
		// The same policy the confirm step resolves (approve.go).
		var p approval.Policy
		basis := ""
		if op, ok := e.opts.Policies[t.Name]; ok {
			p, basis = op, approval.BasisConfig
		}
		if t.RequireApproval != "" {
			p, basis = approval.Policy(t.RequireApproval), t.RequireApprovalBasis
		}
		p, basis = approval.Resolve(p, basis, sessionPolicy)
		t.RequireApproval, t.RequireApprovalBasis = string(p), basis
		t.MetadataBasisDetail["require_approval"] = BasisScope{basis, basisScope[basis]}
		if t.Availability != Available {
			return
		}
		if d := perms.Allows(t.Name, slot, t.SideEffectLevel); d != nil {
			t.unavailable(d.Message)
		} else if perms.MaxCallsPerTurn != nil && *perms.MaxCallsPerTurn == 0 {
			t.unavailable("max_calls_per_turn is 0: no call may run in any turn")
		}
	}
	var overrides map[string]Delivery
	if e.opts.Settings != nil {
		if overrides, err = e.opts.Settings.BuiltinDeliveries(ctx, account); err != nil {
			return cat, fmt.Errorf("runtime catalog: %w", err)
		}
	}
	for _, spec := range append(e.catalog.List(), e.SessionSpecs()...) {
		spec, basis := withOverride(spec, overrides[spec.Name])
		t := runtimeTool(spec, BuiltinProviderID, journal.ProviderBuiltin, "builtin", nil, basisPlatform, basisDeclared)
		t.MetadataBasisDetail["default_delivery_mode"] = BasisScope{basis, basisScope[basis]}
		common(&t)
		cat.Tools = append(cat.Tools, t)
	}
	if err := e.addRemote(ctx, &cat, account, slot, common); err != nil {
		return cat, err
	}
	if e.opts.Definitions == nil {
		finishRuntime(&cat, nil)
		return cat, nil
	}
	on := true
	defs, _, err := e.opts.Definitions.ListDefinitions(ctx, tooldef.Query{AccountID: account,
		Enabled: &on, SortBy: tooldef.SortName, Asc: true})
	if err != nil {
		return cat, fmt.Errorf("runtime catalog: %w", err)
	}
	character := ""
	if s.Character != nil {
		character = s.Character.ID
	}
	byName := map[string][]tooldef.Definition{}
	for _, d := range defs {
		if visible(d, character) {
			byName[d.Name] = append(byName[d.Name], d)
		}
	}
	// The definition a call of each name would run, as resolve picks it.
	callableDef := map[string]string{}
	for name, ds := range byName {
		if d, ok := callable(ds, character); ok {
			_, callableDef[name] = providerOf(d)
		}
	}
	for _, def := range defs {
		if !visible(def, character) {
			continue
		}
		typ, id := providerOf(def)
		t := runtimeTool(definitionSpec(def), id, typ, def.Source, def.AllowedSlots, basisDeclared, basisInferred)
		if te := e.definitionDenial(def); te != nil {
			t.unavailable(te.Message)
		} else if d := slotDenial(def.Name, slot, def.AllowedSlots); d != nil {
			t.unavailable(d.Message)
		}
		common(&t)
		cat.Tools = append(cat.Tools, t)
	}
	finishRuntime(&cat, callableDef)
	return cat, nil
}

// finishRuntime sorts the catalog by name and marks what shares a name.
func finishRuntime(cat *RuntimeCatalog, callableDef map[string]string) {
	sortRuntime(cat)
	for i := 0; i < len(cat.Tools); {
		j := i + 1
		for j < len(cat.Tools) && cat.Tools[j].Name == cat.Tools[i].Name {
			j++
		}
		if j-i > 1 {
			cat.Conflicts = append(cat.Conflicts, markConflict(cat.Tools[i:j], callableDef[cat.Tools[i].Name]))
		}
		i = j
	}
}

// markConflict settles tools that answer to one name as resolve does
// (pipeline.go): a builtin first, else the definition a call would run
// (callableDef, its provider id: the preset, else the session character's,
// else the custom one), else the remote MCP tool. Every other one is
// marked conflict, whatever its own availability, since no call can reach
// it; the conflict names the winner's provider id and the shadowed ones',
// in that order of precedence.
func markConflict(group []RuntimeTool, callableDef string) Conflict {
	win := -1
	for i, t := range group {
		if win < 0 || precedence(t, callableDef) < precedence(group[win], callableDef) {
			win = i
		}
	}
	w := group[win]
	reason := fmt.Sprintf("a call of %s runs the %s (%s)", w.Name, providerKind(w), w.ProviderID)
	c := Conflict{Name: w.Name, Winner: w.ProviderID, Shadowed: []string{}, Reason: reason}
	losers := make([]RuntimeTool, 0, len(group)-1)
	for i := range group {
		if i != win {
			group[i].Availability, group[i].AvailabilityReason = InConflict, &reason
			losers = append(losers, group[i])
		}
	}
	byPrecedence := func(a, b RuntimeTool) int {
		if d := precedence(a, callableDef) - precedence(b, callableDef); d != 0 {
			return d
		}
		return strings.Compare(a.ProviderID, b.ProviderID)
	}
	slices.SortStableFunc(losers, byPrecedence)
	for _, t := range losers {
		c.Shadowed = append(c.Shadowed, t.ProviderID)
	}
	// The catalog lists them in the same order: the one a call runs first.
	slices.SortStableFunc(group, byPrecedence)
	return c
}

// precedence ranks a tool among those of its name, lowest first.
func precedence(t RuntimeTool, callableDef string) int {
	switch {
	case t.ProviderType == journal.ProviderBuiltin:
		return 0
	case t.ProviderType == journal.ProviderPreset && t.ProviderID == callableDef:
		return 1
	case t.ProviderType == journal.ProviderPreset && t.Source == tooldef.SourcePreset:
		return 2
	case t.ProviderType == journal.ProviderPreset && t.Source == tooldef.SourceCharacter:
		return 3
	case t.ProviderType == journal.ProviderPreset:
		return 4
	}
	return 5
}

// providerKind names a tool's provider in a conflict's reason.
func providerKind(t RuntimeTool) string {
	switch t.ProviderType {
	case journal.ProviderBuiltin:
		return "builtin"
	case journal.ProviderMCP:
		return "remote MCP tool"
	}
	return t.Source + " definition"
}

func sortRuntime(cat *RuntimeCatalog) {
	slices.SortStableFunc(cat.Tools, func(a, b RuntimeTool) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}
