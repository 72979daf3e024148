package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"toolhost/mcpgateway"
	"toolhost/mcpremote"
	"toolhost/server"
)

// MCPGateway is what the /mcp-servers routes need of the gateway.
type MCPGateway interface {
	Refresh(ctx context.Context, srv mcpremote.Server) (mcpgateway.Status, error)
	Forget(id string)
}

// MCPServers serves the registration of an account's remote MCP servers:
// POST/GET/PATCH/DELETE /mcp-servers and POST /mcp-servers/{id}/refresh.
// Secrets go in and never come out: responses show which are set, not
// their values.
type MCPServers struct {
	Store   mcpremote.Store
	Sealer  *mcpremote.Sealer
	Rules   mcpremote.Rules
	Gateway MCPGateway
	// CheckHost applies the fetch SSRF policy (fetch.allow_private) to a
	// URL's host at registration; the dialer applies it again at every
	// connection. Nil checks nothing here.
	CheckHost func(ctx context.Context, host string) error
	// Changed is told after an account's servers changed (MCP
	// list_changed); may be nil.
	Changed func(accountID string)
	Account func(*http.Request) string
	Now     func() time.Time
	Logger  *slog.Logger
}

// Routes returns the routes for server.Options.Routes.
func (m *MCPServers) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /mcp-servers":               http.HandlerFunc(m.list),
		"POST /mcp-servers":              http.HandlerFunc(m.create),
		"GET /mcp-servers/{id}":          http.HandlerFunc(m.one),
		"PATCH /mcp-servers/{id}":        http.HandlerFunc(m.patch),
		"DELETE /mcp-servers/{id}":       http.HandlerFunc(m.delete),
		"POST /mcp-servers/{id}/refresh": http.HandlerFunc(m.refresh),
	}
}

func (m *MCPServers) account(r *http.Request) string {
	return accountOf(r, m.Account)
}

func (m *MCPServers) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *MCPServers) changed(account string) {
	if m.Changed != nil {
		m.Changed(account)
	}
}

// errURLBlocked is the 400 of a URL the SSRF policy refuses.
type errURLBlocked struct{ err error }

func (e errURLBlocked) Error() string { return e.err.Error() }

func (m *MCPServers) checkURL(ctx context.Context, raw string) error {
	if m.CheckHost == nil {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &mcpremote.FieldError{Field: "url", Msg: "is not a URL"}
	}
	if err := m.CheckHost(ctx, u.Hostname()); err != nil {
		return errURLBlocked{err}
	}
	return nil
}

func (m *MCPServers) list(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return
	}
	ss, err := m.Store.ListMCPServers(r.Context(), m.account(r))
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	data := make([]mcpServerView, len(ss))
	for i, s := range ss {
		data[i] = m.view(r.Context(), s, nil)
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (m *MCPServers) one(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return
	}
	s, err := m.Store.GetMCPServer(r.Context(), m.account(r), r.PathValue("id"))
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": m.view(r.Context(), s, nil)})
}

func (m *MCPServers) create(w http.ResponseWriter, r *http.Request) {
	var in mcpremote.Input
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeMCPErr(w, err)
		return
	}
	now := m.now()
	s := mcpremote.Server{ID: "mcpsrv_" + uuid.Must(uuid.NewV7()).String(), AccountID: m.account(r), CreatedAt: now, UpdatedAt: now}
	var sec mcpremote.Secrets
	if err := m.Rules.Apply(&s, &sec, in, true); err != nil {
		writeMCPErr(w, err)
		return
	}
	if err := m.checkURL(r.Context(), s.URL); err != nil {
		writeMCPErr(w, err)
		return
	}
	if s.Auth.Type == mcpremote.AuthClientCredentials {
		if err := m.checkURL(r.Context(), s.Auth.TokenURL); err != nil {
			writeMCPErr(w, err)
			return
		}
	}
	sealed, err := m.Sealer.Seal(s.AccountID, s.ID, sec)
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	s.Sealed = sealed
	if err := m.Store.CreateMCPServer(r.Context(), s); err != nil {
		writeMCPErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusCreated, map[string]any{"data": m.view(r.Context(), s, m.list1(r.Context(), s))})
}

// list1 lists a server's tools right after it was written, so its
// snapshot exists and the response says whether it answers.
func (m *MCPServers) list1(ctx context.Context, s mcpremote.Server) *mcpgateway.Status {
	defer m.changed(s.AccountID)
	if m.Gateway == nil || !s.Enabled {
		return nil
	}
	st, err := m.Gateway.Refresh(ctx, s)
	if err != nil && m.Logger != nil {
		m.Logger.InfoContext(ctx, "a registered MCP server did not answer its first listing", "server_id", s.ID, "err", st.Err)
	}
	return &st
}

func (m *MCPServers) patch(w http.ResponseWriter, r *http.Request) {
	var in mcpremote.Input
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return
	}
	if err := readBody(r, &in); err != nil {
		writeMCPErr(w, err)
		return
	}
	if in.Empty() {
		writeMCPErr(w, invalid("nothing to update: send at least one field of the server"))
		return
	}
	ctx := r.Context()
	s, err := m.Store.GetMCPServer(ctx, m.account(r), r.PathValue("id"))
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	sec, err := m.Sealer.Open(s.AccountID, s.ID, s.Sealed)
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	if err := m.Rules.Apply(&s, &sec, in, false); err != nil {
		writeMCPErr(w, err)
		return
	}
	if in.URL != nil {
		if err := m.checkURL(ctx, s.URL); err != nil {
			writeMCPErr(w, err)
			return
		}
	}
	if in.Auth != nil && s.Auth.Type == mcpremote.AuthClientCredentials {
		if err := m.checkURL(ctx, s.Auth.TokenURL); err != nil {
			writeMCPErr(w, err)
			return
		}
	}
	// Sealed again on every write: under the current key after a rotation.
	if s.Sealed, err = m.Sealer.Seal(s.AccountID, s.ID, sec); err != nil {
		writeMCPErr(w, err)
		return
	}
	s.UpdatedAt = m.now()
	if err := m.Store.UpdateMCPServer(ctx, s); err != nil {
		writeMCPErr(w, err)
		return
	}
	if m.Gateway != nil {
		m.Gateway.Forget(s.ID)
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": m.view(ctx, s, m.list1(ctx, s))})
}

func (m *MCPServers) delete(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return
	}
	id, account := r.PathValue("id"), m.account(r)
	if err := m.Store.DeleteMCPServer(r.Context(), account, id); err != nil {
		writeMCPErr(w, err)
		return
	}
	if m.Gateway != nil {
		m.Gateway.Forget(id)
	}
	m.changed(account)
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": id, "deleted": true}})
}

func (m *MCPServers) refresh(w http.ResponseWriter, r *http.Request) {
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return
	}
	s, err := m.Store.GetMCPServer(r.Context(), m.account(r), r.PathValue("id"))
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	if !s.Enabled {
		server.WriteError(w, http.StatusConflict, "mcp_server_disabled", "this MCP server is disabled; enable it (PATCH enabled: true) to list its tools")
		return
	}
	st := m.list1(r.Context(), s)
	server.WriteJSON(w, http.StatusOK, map[string]any{"data": m.view(r.Context(), s, st)})
}

// mcpServerView is a server in the API's shape: every secret replaced by
// whether it is set.
type mcpServerView struct {
	ID        string                        `json:"id"`
	Name      string                        `json:"name"`
	URL       string                        `json:"url"`
	Headers   map[string]string             `json:"headers"`
	Auth      mcpAuthView                   `json:"auth"`
	Enabled   bool                          `json:"enabled"`
	Timeout   string                        `json:"timeout"`
	Tools     map[string]mcpremote.Override `json:"tools"`
	CreatedAt int64                         `json:"created_at"`
	UpdatedAt int64                         `json:"updated_at"`
	// Catalog is the result of the listing this request made (create,
	// patch, refresh), else what the snapshot says.
	Catalog mcpCatalogView `json:"catalog"`
}

type mcpAuthView struct {
	Type            string   `json:"type"`
	TokenSet        *bool    `json:"token_set,omitempty"`
	TokenURL        string   `json:"token_url,omitempty"`
	ClientID        string   `json:"client_id,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
	ClientSecretSet *bool    `json:"client_secret_set,omitempty"`
}

type mcpCatalogView struct {
	CatalogSource *string  `json:"catalog_source"`
	ListedAt      *int64   `json:"listed_at"`
	Tools         []string `json:"tools"`
	Error         *string  `json:"error"`
}

// redacted stands for a header value in responses.
const redacted = "[redacted]"

func (m *MCPServers) view(ctx context.Context, s mcpremote.Server, st *mcpgateway.Status) mcpServerView {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = mcpremote.DefaultTimeout
	}
	v := mcpServerView{ID: s.ID, Name: s.Name, URL: s.URL, Headers: map[string]string{}, Enabled: s.Enabled,
		Timeout: timeout.String(), Tools: s.Tools, CreatedAt: s.CreatedAt.UnixMilli(), UpdatedAt: s.UpdatedAt.UnixMilli(),
		Auth: mcpAuthView{Type: s.Auth.Type}, Catalog: mcpCatalogView{Tools: []string{}}}
	if v.Tools == nil {
		v.Tools = map[string]mcpremote.Override{}
	}
	for _, h := range s.HeaderNames {
		v.Headers[h] = redacted
	}
	set := len(s.Sealed) > 0
	switch s.Auth.Type {
	case mcpremote.AuthBearer:
		v.Auth.TokenSet = &set
	case mcpremote.AuthClientCredentials:
		v.Auth.TokenURL, v.Auth.ClientID, v.Auth.Scopes, v.Auth.ClientSecretSet = s.Auth.TokenURL, s.Auth.ClientID, s.Auth.Scopes, &set
	}
	if st == nil {
		snap, err := m.Store.GetMCPSnapshot(ctx, s.AccountID, s.ID)
		if err != nil {
			return v
		}
		at := snap.ListedAt.UnixMilli()
		v.Catalog.ListedAt = &at
		v.Catalog.Tools = snapshotNames(snap)
		return v
	}
	src := st.Source
	v.Catalog.CatalogSource = &src
	if !st.ListedAt.IsZero() {
		at := st.ListedAt.UnixMilli()
		v.Catalog.ListedAt = &at
	}
	for _, t := range st.Tools {
		v.Catalog.Tools = append(v.Catalog.Tools, t.Name)
	}
	if st.Err != "" {
		e := st.Err
		v.Catalog.Error = &e
	}
	return v
}

func writeMCPErr(w http.ResponseWriter, err error) {
	var fe *mcpremote.FieldError
	var blocked errURLBlocked
	switch {
	case errors.As(err, &fe) && fe.Code != "":
		server.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code": fe.Code, "message": fe.Error(), "field": fe.Field}})
	case errors.As(err, &fe):
		server.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code": "validation_error", "message": fe.Error(), "field": fe.Field}})
	case errors.As(err, &blocked):
		server.WriteJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code": "url_not_allowed", "field": "url",
			"message": "the URL reaches a private, loopback or link-local address, which MCP servers may not use unless the operator lists it in fetch.allow_private"}})
	case errors.Is(err, mcpremote.ErrNoKey):
		server.WriteError(w, http.StatusServiceUnavailable, "secret_key_missing", err.Error())
	case errors.Is(err, mcpremote.ErrNotFound):
		server.WriteError(w, http.StatusNotFound, "not_found", "no such MCP server")
	case errors.Is(err, mcpremote.ErrConflict):
		server.WriteError(w, http.StatusConflict, "mcp_server_conflict", "this account already has an MCP server with this name")
	default:
		var ve validationError
		if errors.As(err, &ve) {
			writeErr(w, err)
			return
		}
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "the MCP servers could not be read or written; see the server log")
	}
}

// snapshotNames are the remote names of a snapshot's tools.
func snapshotNames(snap mcpremote.Snapshot) []string {
	var ts []struct {
		Name string `json:"name"`
	}
	out := []string{}
	if json.Unmarshal(snap.Tools, &ts) != nil {
		return out
	}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
