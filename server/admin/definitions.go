package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools/tooldef"
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
	// Max is the most definitions an account may keep
	// (tools.max_definitions_per_account); 0 sets no cap. A create over
	// it is 409 tool_definition_limit; what is stored stays, and a delete
	// makes room.
	Max     int
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

func (d *Definitions) now() time.Time { return nowOf(d.Now) }

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
	data := []BuiltinTool{}
	lang := catalog.RequestLang(catalog.FaceREST, r.Header.Get("Accept-Language"))
	if d.Builtins != nil {
		for _, s := range d.Builtins() {
			data = append(data, BuiltinTool{Name: s.Name, Description: s.Description.In(lang), Parameters: s.InputIn(lang),
				SideEffectLevel: string(s.SideEffect), AllowedSlots: []string{}, Source: "builtin"})
		}
	}
	server.WriteJSON(w, http.StatusOK, envelope[[]BuiltinTool]{Data: data})
}

func (d *Definitions) list(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, "source", "source_id", "enabled", "sort_by", "sort_order", "limit", "offset")
	if err != nil {
		writeDefErr(w, err)
		return
	}
	q := tooldef.Query{AccountID: d.account(r), HasSourceID: v.Has("source_id")}
	// An empty source_id selects the definitions without one (null).
	if v.Get("source_id") != "" {
		if q.SourceID, err = text(v, "source_id"); err != nil {
			writeDefErr(w, err)
			return
		}
	}
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
	order, err := oneOf(v, "sort_order", sortOrders, "desc")
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
	data := make([]Definition, len(defs))
	for i, def := range defs {
		data[i] = DefinitionView(def)
	}
	server.WriteJSON(w, http.StatusOK, definitionList{Data: data, Meta: ListMeta{
		Total: total, Limit: q.Limit, Offset: q.Offset, HasMore: q.Offset+len(defs) < total,
		SortBy: q.SortBy, SortOrder: order}})
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
	server.WriteJSON(w, http.StatusOK, envelope[Definition]{Data: DefinitionView(def)})
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
	if err := d.Store.CreateDefinition(r.Context(), def, d.Max); err != nil {
		if errors.Is(err, tooldef.ErrLimit) {
			server.WriteError(w, http.StatusConflict, "tool_definition_limit", fmt.Sprintf(
				"this account already has %d tool definitions, the most this server allows (tools.max_definitions_per_account); delete one to create another", d.Max))
			return
		}
		writeDefErr(w, err)
		return
	}
	d.changed(def.AccountID)
	server.WriteJSON(w, http.StatusCreated, envelope[Definition]{Data: DefinitionView(def)})
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
	server.WriteJSON(w, http.StatusOK, envelope[Definition]{Data: DefinitionView(def)})
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
	server.WriteJSON(w, http.StatusOK, envelope[Deleted]{Data: Deleted{ID: id, Deleted: true}})
}

// The wire shapes of the definitions routes. Fields are declared in
// alphabetical order of their JSON names: the bytes are those of the maps
// they replaced, which encoding/json wrote with sorted keys.

// envelope is the seed's {"data": ...}.
type envelope[T any] struct {
	Data T `json:"data"`
}

// ListMeta is the seed's meta of a list.
type ListMeta struct {
	HasMore   bool   `json:"has_more"`
	Limit     int    `json:"limit"`
	Offset    int    `json:"offset"`
	SortBy    string `json:"sort_by"`
	SortOrder string `json:"sort_order"`
	Total     int    `json:"total"`
}

type definitionList struct {
	Data []Definition `json:"data"`
	Meta ListMeta     `json:"meta"`
}

// Deleted answers a DELETE.
type Deleted struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

// BuiltinTool is one item of GET /tools/builtin.
type BuiltinTool struct {
	AllowedSlots    []string        `json:"allowed_slots"`
	Description     string          `json:"description"`
	Name            string          `json:"name"`
	Parameters      json.RawMessage `json:"parameters"`
	SideEffectLevel string          `json:"side_effect_level"`
	Source          string          `json:"source"`
}

// Definition is a tool definition in the seed's shape; null where the
// seed shows null (source_id, handler_type, handler).
type Definition struct {
	AllowedSlots    []string        `json:"allowed_slots"`
	CreatedAt       int64           `json:"created_at"`
	Description     string          `json:"description"`
	Enabled         bool            `json:"enabled"`
	Handler         json.RawMessage `json:"handler"`
	HandlerType     *string         `json:"handler_type"`
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Parameters      json.RawMessage `json:"parameters"`
	SideEffectLevel string          `json:"side_effect_level"`
	Source          string          `json:"source"`
	SourceID        *string         `json:"source_id"`
	UpdatedAt       int64           `json:"updated_at"`
}

// DefinitionView is a definition in the seed's shape.
func DefinitionView(d tooldef.Definition) Definition {
	slots := d.AllowedSlots
	if slots == nil {
		slots = []string{}
	}
	return Definition{
		ID: d.ID, Name: d.Name, Description: d.Description, Parameters: d.Parameters,
		SideEffectLevel: d.SideEffectLevel, AllowedSlots: slots, Source: d.Source,
		SourceID: optional(d.SourceID), Enabled: d.Enabled, HandlerType: optional(d.HandlerType),
		Handler: d.Handler, CreatedAt: d.CreatedAt.UnixMilli(), UpdatedAt: d.UpdatedAt.UnixMilli(),
	}
}

// optional is nil for "" (JSON null).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func writeDefErr(w http.ResponseWriter, err error) {
	var fe *tooldef.FieldError
	switch {
	case errors.As(err, &fe):
		server.WriteErrorObject(w, http.StatusBadRequest, wire.ErrorObject{Code: "validation_error", Field: fe.Field, Message: fe.Error()})
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
