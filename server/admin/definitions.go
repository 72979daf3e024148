package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"toolhost/catalog"
	"toolhost/journal"
	"toolhost/server"
	"toolhost/tooldef"
)

// Definitions serves GET /tools/builtin and the tool definitions CRUD of
// the seed.
type Definitions struct {
	Store tooldef.Store
	// Builtins lists the builtin tools GET /tools/builtin shows.
	Builtins func() []catalog.Spec
	// Rules validate a definition (slots, reserved names, schema).
	Rules tooldef.Rules
	// ScriptsEnabled reports ENABLE_UNSAFE_SCRIPT_HANDLER; while false,
	// writes that leave an enabled script handler are 403.
	ScriptsEnabled func() bool
	// Changed is told after an account's definitions changed (MCP
	// list_changed); may be nil.
	Changed func(accountID string)
	Account func(*http.Request) string
	Now     func() time.Time
}

// Routes returns the routes for server.Options.Routes.
func (d *Definitions) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /tools/builtin":                   http.HandlerFunc(d.builtin),
		"GET /tools/definitions":               http.HandlerFunc(d.list),
		"POST /tools/definitions":              http.HandlerFunc(d.create),
		"GET /tools/definitions/{id}":          http.HandlerFunc(d.one),
		"PATCH /tools/definitions/{id}":        http.HandlerFunc(d.patch),
		"DELETE /tools/definitions/{id}":       http.HandlerFunc(d.delete),
		"PATCH /tools/definitions/{id}/toggle": http.HandlerFunc(d.toggle),
	}
}

func (d *Definitions) account(r *http.Request) string {
	return accountOf(r, d.Account)
}

func (d *Definitions) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Definitions) scripts() bool { return d.ScriptsEnabled != nil && d.ScriptsEnabled() }

func (d *Definitions) changed(account string) {
	if d.Changed != nil {
		d.Changed(account)
	}
}

func (d *Definitions) builtin(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeDefErr(w, err)
		return
	}
	data := []map[string]any{}
	if d.Builtins != nil {
		for _, s := range d.Builtins() {
			data = append(data, map[string]any{"name": s.Name, "description": s.Description.EN, "parameters": s.Input,
				"side_effect_level": s.SideEffect, "allowed_slots": []string{}, "source": "builtin"})
		}
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (d *Definitions) list(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, "source", "source_id", "enabled", "sort_by", "sort_order", "limit", "offset")
	if err != nil {
		writeDefErr(w, err)
		return
	}
	q := tooldef.Query{AccountID: d.account(r), SourceID: v.Get("source_id"), HasSourceID: v.Has("source_id")}
	if q.Source, err = oneOf(v, "source", []string{tooldef.SourcePreset, tooldef.SourceCharacter, tooldef.SourceCustom}, ""); err != nil {
		writeDefErr(w, err)
		return
	}
	if s, err := oneOf(v, "enabled", []string{"true", "false"}, ""); err != nil {
		writeDefErr(w, err)
		return
	} else if s != "" {
		b := s == "true"
		q.Enabled = &b
	}
	if q.SortBy, err = oneOf(v, "sort_by", []string{tooldef.SortUpdatedAt, tooldef.SortName}, tooldef.SortUpdatedAt); err != nil {
		writeDefErr(w, err)
		return
	}
	order, err := oneOf(v, "sort_order", []string{"asc", "desc"}, "desc")
	if err != nil {
		writeDefErr(w, err)
		return
	}
	q.Asc = order == "asc"
	var page journal.Query
	if err := paging(v, &page); err != nil {
		writeDefErr(w, err)
		return
	}
	q.Limit, q.Offset = page.Limit, page.Offset
	defs, total, err := d.Store.ListDefinitions(r.Context(), q)
	if err != nil {
		writeDefErr(w, err)
		return
	}
	data := make([]map[string]any, len(defs))
	for i, def := range defs {
		data[i] = DefinitionView(def)
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": data, "meta": map[string]any{
		"total": total, "limit": q.Limit, "offset": q.Offset, "has_more": q.Offset+len(defs) < total,
		"sort_by": q.SortBy, "sort_order": order}})
}

func (d *Definitions) one(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeDefErr(w, err)
		return
	}
	def, err := d.Store.GetDefinition(r.Context(), d.account(r), r.PathValue("id"))
	if err != nil {
		writeDefErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": DefinitionView(def)})
}

// errScriptsDisabled is the 403 of a write the script gate refuses.
var errScriptsDisabled = errors.New("script handlers are disabled on this server (ENABLE_UNSAFE_SCRIPT_HANDLER is not true)")

func (d *Definitions) create(w http.ResponseWriter, r *http.Request) {
	var in tooldef.Input
	if err := noQuery(r); err != nil {
		writeDefErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeDefErr(w, err)
		return
	}
	def := tooldef.New()
	if err := d.Rules.Apply(&def, in, true); err != nil {
		writeDefErr(w, err)
		return
	}
	if def.HandlerType == tooldef.HandlerScript && !d.scripts() {
		writeDefErr(w, errScriptsDisabled)
		return
	}
	now := d.now()
	def.ID, def.AccountID, def.CreatedAt, def.UpdatedAt = "tooldef_"+uuid.Must(uuid.NewV7()).String(), d.account(r), now, now
	if err := d.Store.CreateDefinition(r.Context(), def); err != nil {
		writeDefErr(w, err)
		return
	}
	d.changed(def.AccountID)
	server.WriteJSON(w, http.StatusCreated, map[string]any{"data": DefinitionView(def)})
}

func (d *Definitions) patch(w http.ResponseWriter, r *http.Request) {
	var in tooldef.Input
	if err := noQuery(r); err != nil {
		writeDefErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeDefErr(w, err)
		return
	}
	if in.Empty() {
		writeDefErr(w, invalid("nothing to update: send at least one field of the definition"))
		return
	}
	d.update(w, r, func(def *tooldef.Definition) error {
		if err := d.Rules.Apply(def, in, false); err != nil {
			return err
		}
		if def.HandlerType == tooldef.HandlerScript && !d.scripts() {
			return errScriptsDisabled
		}
		return nil
	})
}

func (d *Definitions) toggle(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := noQuery(r); err != nil {
		writeDefErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeDefErr(w, err)
		return
	}
	if in.Enabled == nil {
		writeDefErr(w, fieldError("enabled", "is required (true or false)"))
		return
	}
	d.update(w, r, func(def *tooldef.Definition) error {
		if *in.Enabled && def.HandlerType == tooldef.HandlerScript && !d.scripts() {
			return errScriptsDisabled
		}
		def.Enabled = *in.Enabled
		return nil
	})
}

func (d *Definitions) update(w http.ResponseWriter, r *http.Request, edit func(*tooldef.Definition) error) {
	def, err := d.Store.GetDefinition(r.Context(), d.account(r), r.PathValue("id"))
	if err == nil && def.Source == tooldef.SourcePreset {
		err = tooldef.ErrReadOnly
	}
	if err != nil {
		writeDefErr(w, err)
		return
	}
	if err := edit(&def); err != nil {
		writeDefErr(w, err)
		return
	}
	def.UpdatedAt = d.now()
	if err := d.Store.UpdateDefinition(r.Context(), def); err != nil {
		writeDefErr(w, err)
		return
	}
	d.changed(def.AccountID)
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": DefinitionView(def)})
}

func (d *Definitions) delete(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeDefErr(w, err)
		return
	}
	id, account := r.PathValue("id"), d.account(r)
	if err := d.Store.DeleteDefinition(r.Context(), account, id); err != nil {
		writeDefErr(w, err)
		return
	}
	d.changed(account)
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": id, "deleted": true}})
}

// DefinitionView is a definition in the seed's shape.
func DefinitionView(d tooldef.Definition) map[string]any {
	var handler any
	if d.Handler != nil {
		handler = d.Handler
	}
	slots := d.AllowedSlots
	if slots == nil {
		slots = []string{}
	}
	return map[string]any{
		"id": d.ID, "name": d.Name, "description": d.Description, "parameters": d.Parameters,
		"side_effect_level": d.SideEffectLevel, "allowed_slots": slots, "source": d.Source,
		"source_id": str(d.SourceID), "enabled": d.Enabled, "handler_type": str(d.HandlerType),
		"handler": handler, "created_at": d.CreatedAt.UnixMilli(), "updated_at": d.UpdatedAt.UnixMilli(),
	}
}

func writeDefErr(w http.ResponseWriter, err error) {
	var fe *tooldef.FieldError
	switch {
	case errors.As(err, &fe):
		server.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code": "validation_error", "message": fe.Error(), "field": fe.Field}})
	case errors.Is(err, errScriptsDisabled):
		server.WriteError(w, http.StatusForbidden, "tool_script_handler_disabled", err.Error())
	case errors.Is(err, tooldef.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no such tool definition")
	case errors.Is(err, tooldef.ErrReadOnly):
		server.WriteError(w, http.StatusForbidden, "tool_definition_read_only",
			"preset tool definitions come from the server's config file (tools.presets) and cannot be changed over the API")
	case errors.Is(err, tooldef.ErrConflict):
		server.WriteError(w, http.StatusConflict, "tool_definition_conflict",
			"this account already has a tool definition with the same name, source and source_id")
	default:
		var ve validationError
		if errors.As(err, &ve) {
			writeErr(w, err)
			return
		}
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "the tool definitions could not be read or written; see the server log")
	}
}
