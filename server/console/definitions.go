package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	toolsession "github.com/toolhost/toolhost/tools/session"
)

// definition is one tool definition in the GET /tools/definitions shape.
type definition struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Description     string          `json:"description"`
	Parameters      json.RawMessage `json:"parameters"`
	SideEffectLevel string          `json:"side_effect_level"`
	AllowedSlots    []string        `json:"allowed_slots"`
	Source          string          `json:"source"`
	SourceID        *string         `json:"source_id"`
	Enabled         bool            `json:"enabled"`
	HandlerType     *string         `json:"handler_type"`
	Handler         json.RawMessage `json:"handler"`
	UpdatedAt       *int64          `json:"updated_at"`
}

// Script is the body of a script handler, "" without one.
func (d definition) Script() string {
	var h struct {
		Script string `json:"script"`
	}
	_ = json.Unmarshal(d.Handler, &h)
	return h.Script
}

// IsScript reports a script handler.
func (d definition) IsScript() bool { return d.HandlerType != nil && *d.HandlerType == "script" }

// Has reports whether the definition may run in slot.
func (d definition) Has(slot string) bool {
	for _, s := range d.AllowedSlots {
		if s == slot {
			return true
		}
	}
	return false
}

type definitionsData struct {
	Definitions []definition
	Total       int
	// Edit is the edit form of one definition (what was posted when the
	// write was refused); New the create form, holding what it was given
	// when REST refused it, so nothing typed is lost.
	Edit *definitionForm
	New  definitionForm
}

// definitionForm is the create or the edit form of a definition.
type definitionForm struct {
	Def    definition
	Action string // where it posts
	Edit   bool
	Slots  []string
	CSRF   string
}

// toolDefinitions lists the account's definitions through
// GET /tools/definitions (any key of the account).
func (c *Console) toolDefinitions(w http.ResponseWriter, r *http.Request, rq *request) {
	c.showDefinitions(w, r, rq, http.StatusOK, view{}, nil)
}

// formDefinition is what a definition form posted, to show it again.
func formDefinition(id string, f url.Values) *definition {
	d := &definition{ID: id, Name: f.Get("name"), Description: f.Get("description"), Parameters: json.RawMessage(f.Get("parameters")),
		SideEffectLevel: f.Get("side_effect_level"), AllowedSlots: f["allowed_slots"], Enabled: f.Get("enabled") == "true"}
	if f.Get("handler_type") == "script" {
		t := "script"
		d.HandlerType = &t
		d.Handler, _ = json.Marshal(map[string]string{"script": f.Get("script")})
	}
	return d
}

// toolDefinition shows one definition's edit form, read through
// GET /tools/definitions/{id}: another account's id is its 404.
func (c *Console) toolDefinition(w http.ResponseWriter, r *http.Request, rq *request) {
	var one struct {
		Data definition `json:"data"`
	}
	st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, "/tools/definitions/"+url.PathEscape(r.PathValue("id")), nil, &one))
	if msg != "" {
		c.showDefinitions(w, r, rq, st, view{Error: msg}, nil)
		return
	}
	c.showDefinitions(w, r, rq, http.StatusOK, view{}, &one.Data)
}

func (c *Console) showDefinitions(w http.ResponseWriter, r *http.Request, rq *request, status int, vw view, edit *definition) {
	d := &definitionsData{New: definitionForm{Action: Prefix + "/tool-definitions", Slots: c.slots(), CSRF: rq.csrf,
		Def: definition{SideEffectLevel: "none", Enabled: true, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	if posted, ok := vw.Data.(*definition); ok {
		d.New.Def = *posted
	}
	if edit != nil {
		d.Edit = &definitionForm{Def: *edit, Action: Prefix + "/tool-definitions/" + url.PathEscape(edit.ID), Edit: true, Slots: c.slots(), CSRF: rq.csrf}
	}
	vw.Title, vw.Nav, vw.Data = "Tool definitions", "tool-definitions", d
	var list struct {
		Data []definition `json:"data"`
		Meta struct {
			Total int `json:"total"`
		} `json:"meta"`
	}
	st, msg := c.apiResult(c.apiCall(r.Context(), rq, http.MethodGet, "/tools/definitions?sort_by=name&sort_order=asc&limit=500", nil, &list))
	if msg != "" {
		vw.Error = strings.TrimSpace(vw.Error + " " + msg)
		c.render(w, st, "definitions", rq, vw)
		return
	}
	d.Definitions, d.Total = list.Data, list.Meta.Total
	c.render(w, status, "definitions", rq, vw)
}

// definitionBody is the POST or PATCH body a definition form makes: every
// field of the form, the handler as the seed's {"script": …} when the
// handler type is script, null otherwise.
func definitionBody(f url.Values) (map[string]any, string) {
	body := map[string]any{
		"name":              strings.TrimSpace(f.Get("name")),
		"description":       f.Get("description"),
		"side_effect_level": f.Get("side_effect_level"),
		"allowed_slots":     append([]string{}, f["allowed_slots"]...),
	}
	if p := strings.TrimSpace(f.Get("parameters")); p != "" {
		if !json.Valid([]byte(p)) {
			return nil, "parameters: not JSON; give a JSON Schema object such as {\"type\":\"object\",\"properties\":{}}"
		}
		body["parameters"] = json.RawMessage(p)
	} else {
		body["parameters"] = nil
	}
	if f.Get("handler_type") == "script" {
		body["handler_type"] = "script"
		body["handler"] = map[string]string{"script": f.Get("script")}
	} else {
		body["handler_type"], body["handler"] = nil, nil
	}
	return body, ""
}

// createDefinition creates one through POST /tools/definitions (tools
// scope): the script gate, the name rules and the schema check are that
// route's, and its refusal is shown on the page.
func (c *Console) createDefinition(w http.ResponseWriter, r *http.Request, rq *request) {
	body, msg := definitionBody(r.PostForm)
	st := http.StatusBadRequest
	var out struct {
		Data definition `json:"data"`
	}
	if msg == "" {
		body["enabled"] = r.PostForm.Get("enabled") == "true"
		st, msg = c.apiResult(c.apiCall(r.Context(), rq, http.MethodPost, "/tools/definitions", body, &out))
	}
	if msg != "" {
		c.showDefinitions(w, r, rq, st, view{Error: msg, Data: formDefinition("", r.PostForm)}, nil)
		return
	}
	c.showDefinitions(w, r, rq, http.StatusCreated, view{Notice: "Created " + out.Data.Name + " (" + out.Data.ID + ")."}, nil)
}

// definitionAction updates, toggles or deletes one definition through
// PATCH /tools/definitions/{id}, …/toggle and DELETE: another account's
// id is the route's 404, a preset the route's 403.
func (c *Console) definitionAction(w http.ResponseWriter, r *http.Request, rq *request) {
	id := r.PathValue("id")
	path := "/tools/definitions/" + url.PathEscape(id)
	var out struct {
		Data definition `json:"data"`
	}
	var st int
	var msg, notice string
	switch r.PostForm.Get("action") {
	case "update":
		body, bad := definitionBody(r.PostForm)
		st, msg = http.StatusBadRequest, bad
		if bad == "" {
			st, msg = c.apiResult(c.apiCall(r.Context(), rq, http.MethodPatch, path, body, &out))
		}
		if msg != "" {
			c.showDefinitions(w, r, rq, st, view{Error: msg}, formDefinition(id, r.PostForm))
			return
		}
		notice = "Saved " + out.Data.Name + "."
	case "toggle":
		on := r.PostForm.Get("enabled") == "true"
		st, msg = c.apiResult(c.apiCall(r.Context(), rq, http.MethodPatch, path+"/toggle", map[string]bool{"enabled": on}, &out))
		notice = out.Data.Name + map[bool]string{true: " enabled.", false: " disabled."}[on]
	case "delete":
		st, msg = c.apiResult(c.apiCall(r.Context(), rq, http.MethodDelete, path, nil, nil))
		notice = "Deleted " + id + "."
	default:
		c.showDefinitions(w, r, rq, http.StatusBadRequest, view{Error: "the action must be update, toggle or delete"}, nil)
		return
	}
	if msg != "" {
		c.showDefinitions(w, r, rq, st, view{Error: msg}, nil)
		return
	}
	c.showDefinitions(w, r, rq, http.StatusOK, view{Notice: notice}, nil)
}

// apiResult turns an in-process call's failure into a status and the
// message the page shows: REST's own code and message, or 503 when the
// call could not be made at all.
func (c *Console) apiResult(st int, msg string, err error) (int, string) {
	if err != nil {
		c.o.Logger.Error("console: REST call", "err", err)
		return http.StatusServiceUnavailable, "this cannot be done right now; see the server log"
	}
	return st, msg
}

// slots are the caller slots forms offer.
func (c *Console) slots() []string {
	if len(c.o.Slots) > 0 {
		return c.o.Slots
	}
	return toolsession.DefaultSlots
}
