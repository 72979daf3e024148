package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/tools"
)

// permissions are a session's tool permissions in the REST shape.
type permissions struct {
	Enabled               bool                `json:"enabled"`
	MaxCallsPerTurn       *int                `json:"max_calls_per_turn"`
	MaxStepsPerGeneration *int                `json:"max_steps_per_generation"`
	AllowIrreversible     bool                `json:"allow_irreversible"`
	SlotAllowList         map[string][]string `json:"slot_allow_list"`
	SlotDenyList          map[string][]string `json:"slot_deny_list"`
	RequireApproval       *string             `json:"require_approval,omitempty"`
}

type runtimeCatalog struct {
	SessionID string              `json:"session_id"`
	Tools     []tools.RuntimeTool `json:"tools"`
	Conflicts []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"conflicts"`
}

// slotLists is one slot's two lists as the form shows them.
type slotLists struct {
	Slot        string
	Allow, Deny string // names, comma-separated
	HasAllow    bool
}

type sessionsData struct {
	ID, Slot    string
	Slots       []string
	Found       bool
	Permissions permissions
	Lists       []slotLists
	Runtime     runtimeCatalog
}

// sessions looks a session up (?id=) and shows its tool permissions and
// its runtime tool catalog for ?slot=, through GET
// /sessions/{id}/tool-permissions and …/tools/runtime: another account's
// session is their 404.
func (c *Console) sessions(w http.ResponseWriter, r *http.Request, rq *request) {
	c.showSession(w, r, rq, http.StatusOK, view{})
}

func (c *Console) showSession(w http.ResponseWriter, r *http.Request, rq *request, status int, vw view) {
	d := &sessionsData{ID: strings.TrimSpace(r.FormValue("id")), Slot: r.FormValue("slot"), Slots: c.slots()}
	vw.Title, vw.Nav, vw.Data = "Sessions and tool permissions", "sessions", d
	if d.ID == "" {
		c.render(w, status, "sessions", rq, vw)
		return
	}
	base := "/sessions/" + url.PathEscape(d.ID)
	var perms struct {
		Data permissions `json:"data"`
	}
	var rt struct {
		Data runtimeCatalog `json:"data"`
	}
	st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, base+"/tool-permissions", nil, &perms))
	if msg == "" {
		q := ""
		if d.Slot != "" {
			q = "?" + url.Values{"slot": {d.Slot}}.Encode()
		}
		st, msg = c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, base+"/tools/runtime"+q, nil, &rt))
	}
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "sessions", rq, vw)
		return
	}
	d.Found, d.Permissions, d.Runtime = true, perms.Data, rt.Data
	for _, s := range d.Slots {
		allow, has := perms.Data.SlotAllowList[s]
		d.Lists = append(d.Lists, slotLists{Slot: s, Allow: strings.Join(allow, ", "), HasAllow: has,
			Deny: strings.Join(perms.Data.SlotDenyList[s], ", ")})
	}
	c.render(w, status, "sessions", rq, vw)
}

// createSession creates a session through POST /sessions (tools scope).
func (c *Console) createSession(w http.ResponseWriter, r *http.Request, rq *request) {
	body := map[string]any{}
	if id := strings.TrimSpace(r.PostForm.Get("new_id")); id != "" {
		body["id"] = id
	}
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodPost, "/sessions", body, &out))
	if msg != "" {
		c.showSession(w, r, rq, st, view{Error: msg})
		return
	}
	r.Form.Set("id", out.Data.ID)
	c.showSession(w, r, rq, http.StatusCreated, view{Notice: "Created session " + out.Data.ID + "."})
}

// setPermissions sends the permissions form through PUT (replace: every
// field the form holds) or PATCH (merge: only the fields changed, a slot's
// list replacing that slot's alone) /sessions/{id}/tool-permissions.
func (c *Console) setPermissions(w http.ResponseWriter, r *http.Request, rq *request) {
	id := r.PathValue("id")
	r.Form.Set("id", id)
	f := r.PostForm
	var body map[string]any
	var bad string
	method := http.MethodPut
	if f.Get("mode") == "patch" {
		method = http.MethodPatch
		body, bad = patchBody(f)
	} else {
		body, bad = putBody(f, c.slots())
	}
	st := http.StatusBadRequest
	if bad == "" {
		st, bad = c.apiResult(c.apiCall(r.Context(), rq, method, "/sessions/"+url.PathEscape(id)+"/tool-permissions", body, nil))
	}
	if bad != "" {
		c.showSession(w, r, rq, st, view{Error: bad})
		return
	}
	c.showSession(w, r, rq, http.StatusOK, view{Notice: "Tool permissions saved (" + method + ")."})
}

// putBody is every field of the replace form; a slot whose allow list is
// not set has none (any tool may run there).
func putBody(f url.Values, slots []string) (map[string]any, string) {
	allow, deny := map[string][]string{}, map[string][]string{}
	for _, s := range slots {
		if f.Get("allow_set."+s) == "true" {
			allow[s] = names(f.Get("allow." + s))
		}
		if n := names(f.Get("deny." + s)); len(n) > 0 {
			deny[s] = n
		}
	}
	body := map[string]any{"enabled": f.Get("enabled") == "true", "allow_irreversible": f.Get("allow_irreversible") == "true",
		"slot_allow_list": allow, "slot_deny_list": deny}
	for _, k := range []string{"max_calls_per_turn", "max_steps_per_generation"} {
		v, bad := limitValue(k, f.Get(k))
		if bad != "" {
			return nil, bad
		}
		body[k] = v
	}
	if p := f.Get("require_approval"); p != "" {
		body["require_approval"] = p
	}
	return body, ""
}

// patchBody holds only what the merge form changes: "keep" (or empty)
// sends nothing for a field; a slot's list, when set, replaces that
// slot's list and leaves the other slots' as they are; an empty one
// removes it.
func patchBody(f url.Values) (map[string]any, string) {
	body := map[string]any{}
	for _, k := range []string{"enabled", "allow_irreversible"} {
		if v := f.Get(k); v == "true" || v == "false" {
			body[k] = v == "true"
		}
	}
	for _, k := range []string{"max_calls_per_turn", "max_steps_per_generation"} {
		if s := strings.TrimSpace(f.Get(k)); s != "" {
			v, bad := limitValue(k, s)
			if bad != "" {
				return nil, bad
			}
			body[k] = v
		}
	}
	switch p := f.Get("require_approval"); p {
	case "", "keep":
	case "clear":
		body["require_approval"] = nil
	default:
		body["require_approval"] = p
	}
	if slot := f.Get("slot"); slot != "" {
		for _, kind := range []string{"allow", "deny"} {
			if f.Get(kind+"_change") == "true" {
				body["slot_"+kind+"_list"] = map[string][]string{slot: names(f.Get(kind))}
			}
		}
	}
	if len(body) == 0 {
		return nil, "nothing to merge: change at least one field"
	}
	return body, ""
}

// limitValue reads a per-turn limit: empty or "none" is null (no limit),
// anything else is sent as the number it is (REST checks its range) or,
// when not a number, refused here.
func limitValue(field, s string) (any, string) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, ""
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, field + ": " + strconv.Quote(clipText(s)) + " is not a whole number (leave it empty for no limit)"
	}
	return n, ""
}

// names splits a list of tool names typed with commas, spaces or lines.
func names(s string) []string {
	return append([]string{}, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })...)
}

// clipText shortens text from a form before it is echoed in a message.
func clipText(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}

// JSON is the permissions as the page shows them raw.
func (p permissions) JSON() string {
	b, _ := json.MarshalIndent(p, "", "  ")
	return string(b)
}
