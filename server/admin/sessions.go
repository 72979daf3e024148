package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"toolhost/clip"
	"toolhost/server"
	"toolhost/session"
)

// Sessions serves the session entity and its tool permissions:
// POST /sessions, GET and DELETE /sessions/{id},
// GET/PUT/PATCH /sessions/{id}/tool-permissions.
type Sessions struct {
	Store session.Store
	// Slots are the caller slots permissions may name.
	Slots   []string
	Account func(*http.Request) string
	Now     func() time.Time
	// Runtime builds a session's runtime tool catalog for a slot ("" for
	// none); session.ErrNotFound when the account has no such session.
	Runtime func(ctx context.Context, accountID, sessionID, slot string) (any, error)
}

// Routes returns the routes for server.Options.Routes.
func (s *Sessions) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /sessions":                        http.HandlerFunc(s.create),
		"GET /sessions/{id}":                    http.HandlerFunc(s.one),
		"DELETE /sessions/{id}":                 http.HandlerFunc(s.delete),
		"GET /sessions/{id}/tool-permissions":   http.HandlerFunc(s.permissions),
		"PUT /sessions/{id}/tool-permissions":   http.HandlerFunc(s.setPermissions),
		"PATCH /sessions/{id}/tool-permissions": http.HandlerFunc(s.setPermissions),
		"GET /sessions/{id}/tools/runtime":      http.HandlerFunc(s.runtime),
	}
}

func (s *Sessions) account(r *http.Request) string {
	if s.Account != nil {
		return s.Account(r)
	}
	return "local"
}

func (s *Sessions) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// MaxMetadataBytes bounds a session's metadata object.
const MaxMetadataBytes = 64 << 10

func (s *Sessions) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID       *string         `json:"id"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := noQuery(r); err != nil {
		writeSessionErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeSessionErr(w, err)
		return
	}
	id := "sess_" + uuid.Must(uuid.NewV7()).String()
	if in.ID != nil {
		if err := session.ValidID(*in.ID); err != nil {
			writeSessionErr(w, fieldError("id", "%s", err.Error()))
			return
		}
		id = *in.ID
	}
	md := json.RawMessage("{}")
	if len(in.Metadata) > 0 && string(in.Metadata) != "null" {
		if in.Metadata[0] != '{' {
			writeSessionErr(w, fieldError("metadata", "must be a JSON object"))
			return
		}
		if len(in.Metadata) > MaxMetadataBytes {
			writeSessionErr(w, fieldError("metadata", "is %d bytes; at most %d", len(in.Metadata), MaxMetadataBytes))
			return
		}
		md = in.Metadata
	}
	now := s.now()
	se := session.Session{ID: id, AccountID: s.account(r), Metadata: md, Permissions: session.Default(), CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateSession(r.Context(), se); err != nil {
		writeSessionErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusCreated, map[string]any{"data": SessionView(se)})
}

func (s *Sessions) get(w http.ResponseWriter, r *http.Request) (session.Session, bool) {
	if err := noQuery(r); err != nil {
		writeSessionErr(w, err)
		return session.Session{}, false
	}
	se, err := s.Store.GetSession(r.Context(), s.account(r), r.PathValue("id"))
	if err != nil {
		writeSessionErr(w, err)
		return session.Session{}, false
	}
	return se, true
}

func (s *Sessions) one(w http.ResponseWriter, r *http.Request) {
	if se, ok := s.get(w, r); ok {
		server.WriteJSON(w, http.StatusOK, map[string]any{"data": SessionView(se)})
	}
}

func (s *Sessions) delete(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeSessionErr(w, err)
		return
	}
	id := r.PathValue("id")
	if err := s.Store.DeleteSession(r.Context(), s.account(r), id); err != nil {
		writeSessionErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": id, "deleted": true}})
}

func (s *Sessions) permissions(w http.ResponseWriter, r *http.Request) {
	if se, ok := s.get(w, r); ok {
		server.WriteJSON(w, http.StatusOK, map[string]any{"data": se.Permissions})
	}
}

// setPermissions is PUT (replace: absent fields take their defaults) and
// PATCH (merge: slot lists per slot key, other fields replaced).
func (s *Sessions) setPermissions(w http.ResponseWriter, r *http.Request) {
	var patch session.Patch
	if err := noQuery(r); err != nil {
		writeSessionErr(w, err)
		return
	}
	if err := readBody(r, &patch); err != nil {
		writeSessionErr(w, err)
		return
	}
	se, ok := s.get(w, r)
	if !ok {
		return
	}
	p, err := se.Permissions.Apply(patch, r.Method == http.MethodPatch)
	if err == nil {
		err = p.Validate(s.slots())
	}
	if err != nil {
		writeSessionErr(w, invalid("%s", err.Error()))
		return
	}
	if err := s.Store.SetSessionPermissions(r.Context(), se.AccountID, se.ID, p, s.now()); err != nil {
		writeSessionErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": p})
}

// runtime serves GET /sessions/{id}/tools/runtime?slot=.
func (s *Sessions) runtime(w http.ResponseWriter, r *http.Request) {
	v, err := params(r, "slot")
	if err == nil && v.Has("slot") && !slices.Contains(s.slots(), v.Get("slot")) {
		err = fieldError("slot", "unknown slot %q; slots: %s", clip.Echo(v.Get("slot")), strings.Join(s.slots(), ", "))
	}
	if err == nil && s.Runtime == nil {
		err = session.ErrNotFound
	}
	if err != nil {
		writeSessionErr(w, err)
		return
	}
	cat, err := s.Runtime(r.Context(), s.account(r), r.PathValue("id"), v.Get("slot"))
	if err != nil {
		writeSessionErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": cat})
}

func (s *Sessions) slots() []string {
	if len(s.Slots) == 0 {
		return session.DefaultSlots
	}
	return s.Slots
}

// SessionView is a session in the REST shape.
func SessionView(se session.Session) map[string]any {
	return map[string]any{"id": se.ID, "metadata": se.Metadata, "tool_permissions": se.Permissions,
		"created_at": se.CreatedAt.UnixMilli(), "updated_at": se.UpdatedAt.UnixMilli()}
}

func noQuery(r *http.Request) error {
	_, err := params(r)
	return err
}

func writeSessionErr(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, session.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no such session")
	case errors.Is(err, session.ErrConflict):
		server.WriteError(w, http.StatusConflict, "session_conflict", "a session with this id already exists")
	default:
		writeErr(w, err)
	}
}
