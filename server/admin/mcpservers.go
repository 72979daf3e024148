package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools/mcpremote"
)

// MCPGateway is what the /mcp-servers routes need of the gateway.
type MCPGateway interface {
	Refresh(ctx context.Context, srv mcpremote.Server) (mcpremote.Status, error)
	Forget(id string)
	// Unsaved is the server's last listing when saving it as the
	// snapshot failed (newer than the snapshot, if there is one).
	Unsaved(srv mcpremote.Server) (mcpremote.Status, bool)
	// Authorize and Complete run an oauth_authorization_code server's
	// consent: the URL for the user, then the callback's code.
	Authorize(ctx context.Context, srv mcpremote.Server, redirectURL string) (string, error)
	Complete(ctx context.Context, state, code, iss string) (account, server string, err error)
}

// MCPServers serves the registration of an account's remote MCP servers:
// POST/GET/PATCH/DELETE /mcp-servers, POST /mcp-servers/{id}/refresh and,
// for oauth_authorization_code servers, POST /mcp-servers/{id}/authorize
// with its public callback (CallbackRoutes).
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
	// Max is the most servers an account may register
	// (mcp_servers.max_per_account); 0 sets no cap. A create over it is
	// 409 mcp_server_limit; a delete makes room.
	Max     int
	Account func(*http.Request) string
	Now     func() time.Time
	Logger  *slog.Logger
	// CallbackURL is the absolute URL of CallbackPath as the user's
	// browser reaches it: the redirect URL of every authorization.
	CallbackURL string
}

// CallbackPath is where authorization servers send the user back.
const CallbackPath = "/mcp-servers/oauth/callback"

// Routes returns the routes for server.Options.Routes.
func (m *MCPServers) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /mcp-servers":                 http.HandlerFunc(m.list),
		"POST /mcp-servers":                http.HandlerFunc(m.create),
		"GET /mcp-servers/{id}":            http.HandlerFunc(m.one),
		"PATCH /mcp-servers/{id}":          http.HandlerFunc(m.patch),
		"DELETE /mcp-servers/{id}":         http.HandlerFunc(m.delete),
		"POST /mcp-servers/{id}/refresh":   http.HandlerFunc(m.refresh),
		"POST /mcp-servers/{id}/authorize": http.HandlerFunc(m.authorize),
	}
}

// CallbackRoutes is the authorization callback, to be mounted without
// authentication: the user's browser arrives from the authorization
// server with no toolhost credentials. The state, made by the gateway and
// kept (hashed) in the store, binds it to the account and server whose
// authorization issued it, and is good once, on any replica.
func (m *MCPServers) CallbackRoutes() map[string]http.Handler {
	return map[string]http.Handler{"GET " + CallbackPath: http.HandlerFunc(m.callback)}
}

func (m *MCPServers) authorize(w http.ResponseWriter, r *http.Request) {
	s, ok := m.server(w, r)
	if !ok {
		return
	}
	switch {
	case s.Auth.Type != mcpremote.AuthAuthorizationCode:
		server.WriteError(w, http.StatusConflict, "not_authorization_code", "only a server with auth oauth_authorization_code is authorized by a user; this one's auth is "+s.Auth.Type)
		return
	case !s.Enabled:
		server.WriteError(w, http.StatusConflict, "mcp_server_disabled", "this MCP server is disabled; enable it (PATCH enabled: true) to authorize it")
		return
	case m.Gateway == nil || m.CallbackURL == "":
		server.WriteError(w, http.StatusServiceUnavailable, "authorization_unavailable", "this toolhost has no callback URL for authorizations")
		return
	}
	u, err := m.Gateway.Authorize(r.Context(), s, m.CallbackURL)
	switch {
	case errors.Is(err, mcpremote.ErrNoChallenge):
		server.WriteError(w, http.StatusConflict, "authorization_not_needed", err.Error())
		return
	case errors.Is(err, mcpremote.ErrNoKey):
		writeMCPErr(w, err)
		return
	case err != nil:
		if m.Logger != nil {
			m.Logger.InfoContext(r.Context(), "starting the authorization of an MCP server failed", "server_id", s.ID, "err", err)
		}
		if writeAuthFailure(w, err) {
			return
		}
		server.WriteError(w, http.StatusBadGateway, "authorization_failed",
			"the MCP server's authorization could not be started (its protected resource or authorization server metadata, or the client registration, failed); see the server log")
		return
	}
	server.WriteJSON(w, http.StatusOK, envelope[authorizationView]{Data: authorizationView{
		AuthorizationURL: u, ExpiresAt: m.now().Add(mcpremote.AuthorizeTimeout).UnixMilli()}})
}

func (m *MCPServers) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		// The pending authorization stays until it times out: a refusal
		// carries a state anyone could have sent.
		server.WriteError(w, http.StatusBadRequest, "authorization_denied", "the authorization server refused: "+clip.Echo(e))
		return
	}
	state, code := q.Get("state"), q.Get("code")
	if state == "" || code == "" || len(state) > 1024 || len(code) > 4096 {
		server.WriteError(w, http.StatusBadRequest, "validation_error", "the callback needs a code and a state of sane length")
		return
	}
	if m.Gateway == nil {
		server.WriteError(w, http.StatusNotFound, "unknown_state", mcpremote.ErrUnknownState.Error())
		return
	}
	ctx := r.Context()
	account, id, err := m.Gateway.Complete(ctx, state, code, q.Get("iss"))
	switch {
	case errors.Is(err, mcpremote.ErrUnknownState):
		server.WriteError(w, http.StatusBadRequest, "unknown_state", err.Error())
		return
	case err != nil:
		if m.Logger != nil {
			m.Logger.InfoContext(ctx, "finishing the authorization of an MCP server failed", "server_id", id, "err", err)
		}
		if writeAuthFailure(w, err) {
			return
		}
		server.WriteError(w, http.StatusBadGateway, "authorization_failed", "the authorization code could not be exchanged for a token; start again with POST /mcp-servers/{id}/authorize")
		return
	}
	s, err := m.Store.GetMCPServer(ctx, account, id)
	if err != nil {
		writeMCPErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, envelope[mcpServerView]{Data: m.view(ctx, s, m.list1(ctx, s))})
}

// writeAuthFailure answers an authorization server's answer the gateway
// refused (too large, a token for another resource: 502; too slow: 504)
// with its code; nothing was stored.
func writeAuthFailure(w http.ResponseWriter, err error) bool {
	code, cause := mcpremote.AuthFailure(err)
	if cause == nil {
		return false
	}
	status := http.StatusBadGateway
	if code == mcpremote.CodeAuthServerTimeout {
		status = http.StatusGatewayTimeout
	}
	server.WriteError(w, status, code, cause.Error()+"; nothing was stored")
	return true
}

func (m *MCPServers) account(r *http.Request) string {
	return accountOf(r, m.Account)
}

func (m *MCPServers) now() time.Time { return nowOf(m.Now) }

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
	server.WriteJSON(w, http.StatusOK, envelope[[]mcpServerView]{Data: data})
}

func (m *MCPServers) one(w http.ResponseWriter, r *http.Request) {
	s, ok := m.server(w, r)
	if !ok {
		return
	}
	server.WriteJSON(w, http.StatusOK, envelope[mcpServerView]{Data: m.view(r.Context(), s, nil)})
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
	s := mcpremote.Server{ID: "mcpsrv_" + uuid.Must(uuid.NewV7()).String(), AccountID: m.account(r)}
	s.Touch(m.now())
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
	if err := m.Store.CreateMCPServer(r.Context(), s, m.Max); err != nil {
		if errors.Is(err, mcpremote.ErrLimit) {
			server.WriteError(w, http.StatusConflict, "mcp_server_limit", fmt.Sprintf(
				"this account already has %d MCP servers, the most this server allows (mcp_servers.max_per_account); delete one to register another", m.Max))
			return
		}
		writeMCPErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusCreated, envelope[mcpServerView]{Data: m.view(r.Context(), s, m.list1(r.Context(), s))})
}

// list1 lists a server's tools right after it was written, so its
// snapshot exists and the response says whether it answers.
func (m *MCPServers) list1(ctx context.Context, s mcpremote.Server) *mcpremote.Status {
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
	s.Touch(m.now())
	if err := m.Store.UpdateMCPServer(ctx, s); err != nil {
		writeMCPErr(w, err)
		return
	}
	if m.Gateway != nil {
		m.Gateway.Forget(s.ID)
	}
	server.WriteJSON(w, http.StatusOK, envelope[mcpServerView]{Data: m.view(ctx, s, m.list1(ctx, s))})
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
	server.WriteJSON(w, http.StatusOK, envelope[Deleted]{Data: Deleted{Deleted: true, ID: id}})
}

func (m *MCPServers) refresh(w http.ResponseWriter, r *http.Request) {
	s, ok := m.server(w, r)
	if !ok {
		return
	}
	if !s.Enabled {
		server.WriteError(w, http.StatusConflict, "mcp_server_disabled", "this MCP server is disabled; enable it (PATCH enabled: true) to list its tools")
		return
	}
	st := m.list1(r.Context(), s)
	server.WriteJSON(w, http.StatusOK, envelope[mcpServerView]{Data: m.view(r.Context(), s, st)})
}

// mcpServerView is a server in the API's shape: every secret replaced by
// whether it is set.
type mcpServerView struct {
	ID      string                        `json:"id"`
	Name    string                        `json:"name"`
	URL     string                        `json:"url"`
	Headers map[string]string             `json:"headers"`
	Auth    mcpAuthView                   `json:"auth"`
	Enabled bool                          `json:"enabled"`
	Timeout string                        `json:"timeout"`
	Tools   map[string]mcpremote.Override `json:"tools"`
	// Defaults are the server-level defaults of its tools ({} when none).
	Defaults  mcpremote.Defaults `json:"defaults"`
	CreatedAt int64              `json:"created_at"`
	UpdatedAt int64              `json:"updated_at"`
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
	// Authorized tells, for oauth_authorization_code, whether a user
	// authorized (the tokens are never shown).
	Authorized *bool `json:"authorized,omitempty"`
}

type mcpCatalogView struct {
	CatalogSource *string  `json:"catalog_source"`
	ListedAt      *int64   `json:"listed_at"`
	Tools         []string `json:"tools"`
	Error         *string  `json:"error"`
	// SnapshotError: the tools listed at listed_at could not be saved
	// as the server's snapshot (mcpremote.Status.SaveErr).
	SnapshotError *string `json:"snapshot_error"`
}

// authorizationView answers POST /mcp-servers/{id}/authorize: where the
// user goes to authorize, and until when that link works.
type authorizationView struct {
	AuthorizationURL string `json:"authorization_url"`
	ExpiresAt        int64  `json:"expires_at"`
}

// redacted stands for a header value in responses.
const redacted = "[redacted]"

func (m *MCPServers) view(ctx context.Context, s mcpremote.Server, st *mcpremote.Status) mcpServerView {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = mcpremote.DefaultTimeout
	}
	v := mcpServerView{ID: s.ID, Name: s.Name, URL: s.URL, Headers: map[string]string{}, Enabled: s.Enabled,
		Timeout: timeout.String(), Tools: s.Tools, Defaults: s.Defaults, CreatedAt: s.CreatedAt.UnixMilli(), UpdatedAt: s.UpdatedAt.UnixMilli(),
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
	case mcpremote.AuthAuthorizationCode:
		v.Auth.ClientID, v.Auth.Scopes = s.Auth.ClientID, s.Auth.Scopes
		if sec, err := m.Sealer.Open(s.AccountID, s.ID, s.Sealed); err == nil {
			authorized := sec.Grant != nil
			v.Auth.Authorized = &authorized
			if s.Auth.ClientID != "" {
				cs := sec.ClientSecret != ""
				v.Auth.ClientSecretSet = &cs
			}
		}
	}
	if st == nil {
		snap, err := m.Store.GetMCPSnapshot(ctx, s.AccountID, s.ID)
		if m.Gateway != nil {
			// A listing whose save failed is newer than the snapshot.
			if u, ok := m.Gateway.Unsaved(s); ok && (err != nil || snap.ListedAt.UnixMilli() < u.ListedAt.UnixMilli()) {
				return catalogView(v, &u)
			}
		}
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
	return catalogView(v, st)
}

// catalogView fills v.Catalog from st (its Source aside).
func catalogView(v mcpServerView, st *mcpremote.Status) mcpServerView {
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
	if st.SaveErr != "" {
		e := st.SaveErr
		v.Catalog.SnapshotError = &e
	}
	return v
}

func writeMCPErr(w http.ResponseWriter, err error) {
	var fe *mcpremote.FieldError
	var blocked errURLBlocked
	switch {
	case errors.As(err, &fe) && fe.Code != "":
		server.WriteErrorObject(w, http.StatusBadRequest, wire.ErrorObject{Code: fe.Code, Field: fe.Field, Message: fe.Error()})
	case errors.As(err, &fe):
		server.WriteErrorObject(w, http.StatusBadRequest, wire.ErrorObject{Code: "validation_error", Field: fe.Field, Message: fe.Error()})
	case errors.As(err, &blocked):
		server.WriteErrorObject(w, http.StatusBadRequest, wire.ErrorObject{Code: "url_not_allowed", Field: "url",
			Message: "the URL reaches a private, loopback or link-local address, which MCP servers may not use unless the operator lists it in fetch.allow_private"})
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

// server reads the caller's server named by the path, or writes the error
// (a query string, or not found) and says so.
func (m *MCPServers) server(w http.ResponseWriter, r *http.Request) (mcpremote.Server, bool) {
	if err := noQuery(r); err != nil {
		writeMCPErr(w, err)
		return mcpremote.Server{}, false
	}
	s, err := m.Store.GetMCPServer(r.Context(), m.account(r), r.PathValue("id"))
	if err != nil {
		writeMCPErr(w, err)
		return mcpremote.Server{}, false
	}
	return s, true
}
