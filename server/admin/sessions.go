package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools/session"
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
		"PATCH /sessions/{id}":                  http.HandlerFunc(s.patch),
		"GET /sessions/{id}/tool-permissions":   http.HandlerFunc(s.permissions),
		"PUT /sessions/{id}/tool-permissions":   http.HandlerFunc(s.setPermissions),
		"PATCH /sessions/{id}/tool-permissions": http.HandlerFunc(s.setPermissions),
		"GET /sessions/{id}/tools/runtime":      http.HandlerFunc(s.runtime),
	}
}

func (s *Sessions) account(r *http.Request) string {
	return accountOf(r, s.Account)
}

func (s *Sessions) now() time.Time { return nowOf(s.Now) }

// MaxMetadataBytes bounds a session's metadata object.
const MaxMetadataBytes = 64 << 10

func (s *Sessions) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID        *string         `json:"id"`
		Metadata  json.RawMessage `json:"metadata"`
		Character *characterIn    `json:"character"`
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
	char, err := in.Character.check()
	if err != nil {
		writeSessionErr(w, err)
		return
	}
	now := s.now()
	se := session.Session{ID: id, AccountID: s.account(r), Metadata: md, Permissions: session.Default(), Character: char, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateSession(r.Context(), se); err != nil {
		writeSessionErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusCreated, envelope[Session]{Data: SessionView(se)})
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
		server.WriteJSON(w, http.StatusOK, envelope[Session]{Data: SessionView(se)})
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
	server.WriteJSON(w, http.StatusOK, envelope[Deleted]{Data: Deleted{ID: id, Deleted: true}})
}

// characterIn is a character as POST and PATCH /sessions take it; id is
// optional (char_<uuid> when absent).
type characterIn struct {
	ID          *string         `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Attributes  json.RawMessage `json:"attributes"`
}

// check validates a character; nil in, nil out.
func (c *characterIn) check() (*session.Character, error) {
	if c == nil {
		return nil, nil
	}
	out := &session.Character{Name: c.Name, Description: c.Description, Attributes: c.Attributes}
	if c.ID != nil {
		out.ID = *c.ID
	} else {
		out.ID = "char_" + uuid.Must(uuid.NewV7()).String()
	}
	if field, err := session.CheckCharacter(out); err != nil {
		return nil, fieldError(field, "%s", err.Error())
	}
	return out, nil
}

// patch is PATCH /sessions/{id}: {"character": {...}} sets the session's
// character, {"character": null} removes it.
func (s *Sessions) patch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Character json.RawMessage `json:"character"`
	}
	if err := noQuery(r); err != nil {
		writeSessionErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeSessionErr(w, err)
		return
	}
	if len(in.Character) == 0 {
		writeSessionErr(w, invalid("send at least one field to change; the fields are: character"))
		return
	}
	var c *characterIn
	if string(in.Character) != "null" {
		dec := json.NewDecoder(bytes.NewReader(in.Character))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			writeSessionErr(w, fieldError("character", "want an object {id?, name, description?, attributes?} or null: %s", clip.Echo(err.Error())))
			return
		}
	}
	char, err := c.check()
	if err != nil {
		writeSessionErr(w, err)
		return
	}
	se, ok := s.get(w, r)
	if !ok {
		return
	}
	now := s.now()
	if err := s.Store.SetSessionCharacter(r.Context(), se.AccountID, se.ID, char, now); err != nil {
		writeSessionErr(w, err)
		return
	}
	se.Character, se.UpdatedAt = char, now
	server.WriteJSON(w, http.StatusOK, envelope[Session]{Data: SessionView(se)})
}

func (s *Sessions) permissions(w http.ResponseWriter, r *http.Request) {
	if se, ok := s.get(w, r); ok {
		server.WriteJSON(w, http.StatusOK, envelope[session.Permissions]{Data: se.Permissions})
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
	server.WriteJSON(w, http.StatusOK, envelope[session.Permissions]{Data: p})
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
	server.WriteJSON(w, http.StatusOK, envelope[any]{Data: cat})
}

func (s *Sessions) slots() []string {
	if len(s.Slots) == 0 {
		return session.DefaultSlots
	}
	return s.Slots
}

// Session is a session in the REST shape (fields in alphabetical order of
// their JSON names, as the map it replaced was written).
type Session struct {
	Character       *session.Character  `json:"character"`
	CreatedAt       int64               `json:"created_at"`
	ID              string              `json:"id"`
	Metadata        json.RawMessage     `json:"metadata"`
	ToolPermissions session.Permissions `json:"tool_permissions"`
	UpdatedAt       int64               `json:"updated_at"`
}

// SessionView is a session in the REST shape.
func SessionView(se session.Session) Session {
	return Session{ID: se.ID, Metadata: se.Metadata, ToolPermissions: se.Permissions,
		Character: se.Character, CreatedAt: se.CreatedAt.UnixMilli(), UpdatedAt: se.UpdatedAt.UnixMilli()}
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
