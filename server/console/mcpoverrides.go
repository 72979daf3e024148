package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// override is the account's governance of one remote tool, the shape
// PATCH /mcp-servers/{id} takes in "tools" (mcpremote.Override). Replay
// safety is not among them: it follows from the side-effect level.
type override struct {
	SideEffectLevel     *string   `json:"side_effect_level,omitempty"`
	AllowedSlots        *[]string `json:"allowed_slots,omitempty"`
	Enabled             *bool     `json:"enabled,omitempty"`
	RequireApproval     *string   `json:"require_approval,omitempty"`
	AsyncCapability     *string   `json:"async_capability,omitempty"`
	DefaultDeliveryMode *string   `json:"default_delivery_mode,omitempty"`
}

// toolOverride is one remote tool's override form.
type toolOverride struct {
	Server, Tool, CSRF string
	O                  override
	Slots              []string
}

// Has reports whether slot is among the override's allowed slots.
func (t toolOverride) Has(slot string) bool {
	return t.O.AllowedSlots != nil && slices.Contains(*t.O.AllowedSlots, slot)
}

// Str is a set field's value, "" when unset.
func (toolOverride) Str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Enabled is "true", "false" or "" (not set).
func (t toolOverride) Enabled() string {
	if t.O.Enabled == nil {
		return ""
	}
	return map[bool]string{true: "true", false: "false"}[*t.O.Enabled]
}

// overridesOf are the forms of a server's tools: every tool of its
// listing and every tool it has an override for, by name.
func (c *Console) overridesOf(s mcpServer, csrf string) []toolOverride {
	var set map[string]override
	_ = json.Unmarshal(s.Tools, &set)
	names := slices.Clone(s.Catalog.Tools)
	for n := range set {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]toolOverride, 0, len(names))
	for _, n := range names {
		out = append(out, toolOverride{Server: s.ID, Tool: n, CSRF: csrf, O: set[n], Slots: c.slots()})
	}
	return out
}

// overrideOf reads one tool's override form: an empty field is unset
// (the server's default or the platform's applies); allowed slots are
// set only when the form says so.
func overrideOf(f url.Values) override {
	var o override
	opt := func(name string) *string {
		if v := strings.TrimSpace(f.Get(name)); v != "" {
			return &v
		}
		return nil
	}
	o.SideEffectLevel, o.RequireApproval = opt("side_effect_level"), opt("require_approval")
	o.AsyncCapability, o.DefaultDeliveryMode = opt("async_capability"), opt("default_delivery_mode")
	if v := f.Get("enabled"); v == "true" || v == "false" {
		b := v == "true"
		o.Enabled = &b
	}
	if f.Get("slots_set") == "true" {
		s := append([]string{}, f["allowed_slots"]...)
		o.AllowedSlots = &s
	}
	return o
}

// setOverride changes one remote tool's override through
// PATCH /mcp-servers/{id}: the server's current overrides are read
// (GET /mcp-servers/{id}), this tool's replaced (removed when the form
// sets nothing), and the whole object sent back, as the route replaces
// it whole. Its validation errors are shown as it words them.
func (c *Console) setOverride(w http.ResponseWriter, r *http.Request, rq *request, id string) {
	tool := r.PostForm.Get("tool")
	var cur struct {
		Data struct {
			Tools map[string]override `json:"tools"`
		} `json:"data"`
	}
	st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, "/mcp-servers/"+id, nil, &cur))
	if msg == "" {
		set := cur.Data.Tools
		if set == nil {
			set = map[string]override{}
		}
		if o := overrideOf(r.PostForm); o == (override{}) {
			delete(set, tool)
		} else {
			set[tool] = o
		}
		var out struct {
			Data mcpServer `json:"data"`
		}
		st, msg = c.apiResult(c.apiCall(r.Context(), rq, http.MethodPatch, "/mcp-servers/"+id, map[string]any{"tools": set}, &out))
	}
	if msg != "" {
		c.showMCPServers(w, r, rq, st, view{Error: msg})
		return
	}
	c.showMCPServers(w, r, rq, http.StatusOK, view{Notice: "Saved the override of " + tool + "."})
}
