package mcpremote

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Auth types.
const (
	AuthNone              = "none"
	AuthBearer            = "bearer"
	AuthClientCredentials = "oauth_client_credentials"
	// AuthAuthorizationCode needs a user's consent: the server is
	// unavailable until someone opens its authorization URL and the
	// authorization server redirects back to toolhost (Secrets.Grant).
	AuthAuthorizationCode = "oauth_authorization_code"
)

// Server is one registered remote MCP server. Everything secret is in
// Sealed (see Secrets).
type Server struct {
	ID        string
	AccountID string
	// Name is the namespace of its tools: a call of NAME__tool runs tool
	// on this server.
	Name string
	// URL is the streamable HTTP endpoint.
	URL string
	// HeaderNames are the names of the extra headers sent to it; their
	// values are secrets.
	HeaderNames []string
	Auth        Auth
	Enabled     bool
	// Timeout bounds one call to the server (DefaultTimeout when zero).
	Timeout time.Duration
	// Tools are the account's overrides by remote tool name.
	Tools map[string]Override
	// Defaults are the server's own governance of its tools: what a tool
	// gets when neither its override nor its annotations decide
	// (basis server_default in the runtime catalog).
	Defaults Defaults
	// Sealed is the sealed Secrets.
	Sealed    []byte
	CreatedAt time.Time
	// UpdatedAt is the version of the server: the gateway keeps a link
	// (its session) for as long as the server it reads has the link's
	// UpdatedAt. Writes set it with Touch, so that it is what the stores
	// keep and differs between two writes.
	UpdatedAt time.Time
}

// Touch stamps a write of s: UpdatedAt becomes now as the stores keep it
// (whole milliseconds, no monotonic reading), and later than it was even
// when two writes fall in one millisecond. A first write (zero UpdatedAt)
// stamps CreatedAt too. Without it a server written at nanosecond
// precision compared unequal to itself read back from SQLite or
// PostgreSQL, and the gateway dropped the session its first listing had
// opened and dialed again.
func (s *Server) Touch(now time.Time) {
	t := time.UnixMilli(now.UnixMilli()).UTC()
	if s.UpdatedAt.IsZero() {
		s.CreatedAt = t
	} else if !t.After(s.UpdatedAt) {
		t = time.UnixMilli(s.UpdatedAt.UnixMilli() + 1).UTC()
	}
	s.UpdatedAt = t
}

// Auth is the non-secret part of how toolhost authenticates to a server.
type Auth struct {
	Type string `json:"type"`
	// TokenURL, ClientID and Scopes are for oauth_client_credentials;
	// ClientID (a pre-registered client, else toolhost registers itself
	// dynamically) for oauth_authorization_code.
	TokenURL string   `json:"token_url,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// Override is the account's governance of one remote tool; nil fields
// keep what the server's annotations say.
type Override struct {
	SideEffectLevel *string   `json:"side_effect_level,omitempty"`
	AllowedSlots    *[]string `json:"allowed_slots,omitempty"`
	Enabled         *bool     `json:"enabled,omitempty"`
	// RequireApproval is the tool's approval policy (never, always,
	// side_effect); nil keeps the server's default.
	RequireApproval *string `json:"require_approval,omitempty"`
	// AsyncCapability (inline_only, deferred_ok) lets calls of the tool run
	// as background jobs; DefaultDeliveryMode (inline, async_job) makes
	// that their default. nil: inline only, the platform's default.
	AsyncCapability     *string `json:"async_capability,omitempty"`
	DefaultDeliveryMode *string `json:"default_delivery_mode,omitempty"`
}

// Defaults are a server-level default of every tool of the server. The
// side-effect level applies to a tool without an override whose
// annotations say neither readOnlyHint nor destructiveHint; the slots to
// a tool without an allowed_slots override. nil fields leave the
// platform's defaults (irreversible; any slot).
type Defaults struct {
	SideEffectLevel *string   `json:"side_effect_level,omitempty"`
	AllowedSlots    *[]string `json:"allowed_slots,omitempty"`
	// RequireApproval is the approval policy of a tool without its own;
	// nil leaves the platform's (side_effect: irreversible tools ask).
	RequireApproval *string `json:"require_approval,omitempty"`
}

// Secrets are the values that are sealed at rest.
type Secrets struct {
	Headers      map[string]string `json:"headers,omitempty"`
	BearerToken  string            `json:"bearer_token,omitempty"`
	ClientSecret string            `json:"client_secret,omitempty"`
	// Grant is what an oauth_authorization_code authorization obtained:
	// nil until a user authorized.
	Grant *Grant `json:"grant,omitempty"`
}

// Grant is the client and tokens of an authorization-code grant: enough
// to refresh the access token without the user.
type Grant struct {
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthStyle    int       `json:"auth_style,omitempty"`
	AuthURL      string    `json:"auth_url"`
	TokenURL     string    `json:"token_url"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Resource is the RFC 8707 resource the grant was given for, named
	// again in every refresh.
	Resource string `json:"resource,omitempty"`
}

// Snapshot is the last successful tools/list of a server: the tools as the
// server sent them (JSON of []*mcp.Tool) and when.
type Snapshot struct {
	Tools    json.RawMessage
	ListedAt time.Time
}

// Defaults and bounds.
const (
	DefaultTimeout   = 30 * time.Second
	MaxTimeout       = 5 * time.Minute
	MaxServerNameLen = 32
	MaxHeaders       = 32
	MaxTools         = 512
	// DefaultMaxPerAccount is how many servers an account may register
	// (mcp_servers.max_per_account): each holds a session, a connection
	// pool and up to MaxTools tools in every listing of the account.
	DefaultMaxPerAccount = 16
)

// Errors of the stores.
var (
	ErrNotFound   = errors.New("no such MCP server")
	ErrConflict   = errors.New("an MCP server with this name already exists")
	ErrNoSnapshot = errors.New("no snapshot of this MCP server")
	// ErrLimit: the account already has as many servers as the cap of
	// the create allows.
	ErrLimit = errors.New("MCP server limit reached")
	// ErrSecretsChanged: an UpdateMCPServer wrote the server while an
	// UpdateMCPSecrets ran; that write is kept, update's result is not.
	ErrSecretsChanged = errors.New("the MCP server was written while its secrets were being updated")
)

// Store keeps the registered servers and their snapshots.
type Store interface {
	// CreateMCPServer stores s. With limit > 0 it refuses (ErrLimit) when
	// the account already has limit servers, counted together with the
	// insert: concurrent creates never take the account past limit.
	CreateMCPServer(ctx context.Context, s Server, limit int) error
	GetMCPServer(ctx context.Context, account, id string) (Server, error)
	// ListMCPServers returns an account's servers by name.
	ListMCPServers(ctx context.Context, account string) ([]Server, error)
	UpdateMCPServer(ctx context.Context, s Server) error
	DeleteMCPServer(ctx context.Context, account, id string) error
	// SaveMCPSnapshot stores snap unless the stored snapshot was listed
	// after it (to the millisecond): an older listing never replaces a
	// newer one, so the stored time is always that of the stored tools.
	SaveMCPSnapshot(ctx context.Context, account, id string, snap Snapshot) error
	// GetMCPSnapshot returns ErrNoSnapshot when the server was never listed.
	GetMCPSnapshot(ctx context.Context, account, id string) (Snapshot, error)
	// UpdateMCPSecrets calls update with the server's stored Sealed and
	// stores what it returns (nil keeps what is stored), under a lock of
	// the server that every other UpdateMCPSecrets of it waits for, on
	// this replica and on every other process sharing the store: each
	// update sees what the one before it stored. Nothing else of the
	// server changes, UpdatedAt included (the gateway keeps its
	// session). update runs with the lock held, as long as ctx allows (a
	// token refresh), and must not use the store. ErrNotFound when the
	// account has no such server; an error of update is returned as it
	// is, nothing stored; ErrSecretsChanged when an UpdateMCPServer (which
	// takes no lock) wrote the server meanwhile.
	UpdateMCPSecrets(ctx context.Context, account, id string, update func(sealed []byte) ([]byte, error)) error
	// PutMCPAuthorization keeps a pending authorization until its
	// ExpiresAt, ending the server's earlier pending ones (their URLs
	// then lead nowhere, so repeated starts cannot pile up) and
	// dropping expired ones of any server.
	PutMCPAuthorization(ctx context.Context, p PendingAuthorization) error
	// TakeMCPAuthorization removes and returns the pending authorization
	// whose State is state, atomically: of two takers of one state, one
	// gets it. ErrUnknownState when there is none or it expired at now.
	TakeMCPAuthorization(ctx context.Context, state []byte, now time.Time) (PendingAuthorization, error)
}
