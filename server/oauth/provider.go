package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
)

// KeyStore finds API keys by id (a grant lives only while its key does).
type KeyStore interface {
	KeyByID(ctx context.Context, id string) (*keys.Key, error)
}

// KeyAuthenticator resolves the API key a user signs in with on the
// consent page.
type KeyAuthenticator interface {
	Authenticate(ctx context.Context, secret string) (*keys.Key, error)
}

// Options configure the embedded authorization server.
type Options struct {
	// Issuer is the public base URL ("https://tools.example.com"): the
	// issuer identifier and the base of every endpoint.
	Issuer string
	// Resource is this server's resource URL (Issuer + "/mcp").
	Resource string
	// ExtraResources are other resource servers tokens may be bound to
	// (RFC 8707), e.g. toolhost replicas that use this one as their issuer.
	ExtraResources []string
	Store          identity.GrantStore
	Keys           KeyAuthenticator
	KeyStore       KeyStore
	// ClientMetadataPrivateHosts lets Client ID Metadata Documents live on
	// private and loopback addresses (an intranet; tests). Off: public only.
	ClientMetadataPrivateHosts bool
	// Limiter keeps the registration limits' state (default: in this
	// process); RegistrationsPerMinute per remote address and
	// RegistrationsPerMinuteTotal from everybody (defaults
	// DefaultRegistrationsPerMinute, DefaultRegistrationsPerMinuteTotal).
	Limiter                     keys.Limiter
	RegistrationsPerMinute      int
	RegistrationsPerMinuteTotal int
	// AccessTokenTTL (default DefaultAccessTokenTTL) and RefreshTokenTTL
	// (DefaultRefreshTokenTTL); config refuses a refresh lifetime shorter
	// than the access one.
	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	// UnauthorizedClientTTL is how long a registered client never issued a
	// token is kept unused (default DefaultUnauthorizedClientTTL);
	// IdleClientTTL how long one none of whose tokens is valid is
	// (DefaultIdleClientTTL). Both at least MinClientTTL.
	UnauthorizedClientTTL time.Duration
	IdleClientTTL         time.Duration
	Now                   func() time.Time
	Logger                *slog.Logger
}

// Default token lifetimes: an access token is a bearer JWT, so short;
// a refresh token lets a client stay signed in for a month unused.
const (
	DefaultAccessTokenTTL  = time.Hour
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
)

// Provider is the embedded authorization server: zitadel/oidc's OpenID
// Provider for /authorize, /oauth/token, /revoke and /keys, plus what the
// library does not provide: RFC 8414 metadata with S256 only, dynamic
// client registration (RFC 7591), the resource indicator (RFC 8707) and
// the consent page.
type Provider struct {
	opts     Options
	op       *op.Provider
	storage  *storage
	csrfKey  []byte
	verifier *op.AccessTokenVerifier
	regLimit registerLimit
	purge    *storePurge

	consoleMu  sync.Mutex
	consoleIDs map[string]string // the console's redirect URI → its client
}

// NewProvider loads (or creates) the signing key and builds the provider.
func NewProvider(ctx context.Context, opts Options) (*Provider, error) {
	if opts.AccessTokenTTL <= 0 {
		opts.AccessTokenTTL = DefaultAccessTokenTTL
	}
	if opts.RefreshTokenTTL <= 0 {
		opts.RefreshTokenTTL = DefaultRefreshTokenTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Limiter == nil {
		opts.Limiter = keys.NewMemoryLimiter(opts.Now)
	}
	if opts.RegistrationsPerMinute <= 0 {
		opts.RegistrationsPerMinute = DefaultRegistrationsPerMinute
	}
	if opts.RegistrationsPerMinuteTotal <= 0 {
		opts.RegistrationsPerMinuteTotal = DefaultRegistrationsPerMinuteTotal
	}
	if opts.UnauthorizedClientTTL <= 0 {
		opts.UnauthorizedClientTTL = DefaultUnauthorizedClientTTL
	}
	if opts.IdleClientTTL <= 0 {
		opts.IdleClientTTL = DefaultIdleClientTTL
	}
	opts.UnauthorizedClientTTL = max(opts.UnauthorizedClientTTL, MinClientTTL)
	opts.IdleClientTTL = max(opts.IdleClientTTL, MinClientTTL)
	opts.Issuer = strings.TrimRight(opts.Issuer, "/")
	key, kid, err := loadSigningKey(ctx, opts.Store, opts.Now())
	if err != nil {
		return nil, err
	}
	p := &Provider{opts: opts, regLimit: registerLimit{lim: opts.Limiter, perAddr: opts.RegistrationsPerMinute, global: opts.RegistrationsPerMinuteTotal},
		purge: newStorePurge(opts.Store, opts.UnauthorizedClientTTL, opts.IdleClientTTL, opts.Now, opts.Logger)}
	p.storage = &storage{
		st: opts.Store, keyStore: opts.KeyStore, issuer: opts.Issuer,
		login:     func(id string) string { return opts.Issuer + "/oauth/consent?id=" + url.QueryEscape(id) },
		resources: append([]string{opts.Resource}, opts.ExtraResources...),
		accessTTL: opts.AccessTokenTTL, refreshTTL: opts.RefreshTokenTTL, requestTTL: 10 * time.Minute,
		signing: key, signingID: kid, now: opts.Now, logger: opts.Logger,
		cimd: newCIMD(opts.Store, opts.ClientMetadataPrivateHosts, opts.Now, p.purge.kick),
	}
	// The code encryption key, the CSRF key and the refresh tokens' MAC key
	// derive from the signing key, so every replica shares them without
	// another secret to configure.
	der := key.D.Bytes()
	crypto := sha256.Sum256(append([]byte("toolhost-oauth-code:"), der...))
	csrf := sha256.Sum256(append([]byte("toolhost-oauth-csrf:"), der...))
	p.csrfKey = csrf[:]
	refresh := sha256.Sum256(append([]byte("toolhost-oauth-refresh:"), der...))
	p.storage.refreshKey = refresh[:]
	p.storage.kick = p.purge.kick
	cfg := &op.Config{
		CryptoKey:             crypto,
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       grantableScopes,
	}
	var popts []op.Option
	if u, err := url.Parse(opts.Issuer); err == nil && u.Scheme == "http" {
		popts = append(popts, op.WithAllowInsecure())
	}
	popts = append(popts, op.WithLogger(opts.Logger),
		op.WithCustomAuthEndpoint(op.NewEndpoint("oauth/authorize")),
		op.WithCustomRevocationEndpoint(op.NewEndpoint("oauth/revoke")),
		op.WithCustomKeysEndpoint(op.NewEndpoint("oauth/keys")))
	prov, err := op.NewProvider(cfg, p.storage, op.StaticIssuer(opts.Issuer), popts...)
	if err != nil {
		return nil, fmt.Errorf("authorization server: %w", err)
	}
	p.op = prov
	p.verifier = op.NewAccessTokenVerifier(opts.Issuer, localKeySet{key: &key.PublicKey})
	return p, nil
}

// Close stops the purge (of expired clients, tokens and requests) under
// way, if any, and waits for it; the routes keep answering.
func (p *Provider) Close() { p.purge.close() }

// Routes are the authorization server's endpoints, to mount on the main
// mux without authentication.
func (p *Provider) Routes() map[string]http.Handler {
	meta := http.HandlerFunc(p.metadata)
	lib := p.op // the library's router, on the paths set in NewProvider
	return map[string]http.Handler{
		"GET /.well-known/oauth-authorization-server": meta,
		"GET /.well-known/openid-configuration":       meta,
		"/oauth/authorize":                            p.withResource(lib, true),
		"GET /oauth/authorize/callback":               lib,
		"POST /oauth/token":                           p.withResource(lib, false),
		"POST /oauth/revoke":                          lib,
		"GET /oauth/keys":                             lib,
		"POST /oauth/register":                        http.HandlerFunc(p.register),
		"GET /oauth/consent":                          http.HandlerFunc(p.consentPage),
		"POST /oauth/consent":                         http.HandlerFunc(p.consentSubmit),
	}
}

// metadata is RFC 8414 (also served as the OpenID configuration): the
// library's discovery document with S256 as the only PKCE method and the
// registration endpoint it does not know about.
func (p *Provider) metadata(w http.ResponseWriter, r *http.Request) {
	ctx := op.ContextWithIssuer(r.Context(), p.opts.Issuer)
	d := op.CreateDiscoveryConfig(ctx, p.op, p.storage)
	d.CodeChallengeMethodsSupported = []oidc.CodeChallengeMethod{oidc.CodeChallengeMethodS256}
	d.RegistrationEndpoint = p.opts.Issuer + "/oauth/register"
	d.ScopesSupported = append(slices.Clone(grantableScopes), oidc.ScopeOfflineAccess)
	d.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
	d.GrantTypesSupported = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
	d.TokenEndpointAuthMethodsSupported = []oidc.AuthMethod{oidc.AuthMethodNone, oidc.AuthMethodBasic, oidc.AuthMethodPost}
	d.RevocationEndpointAuthMethodsSupported = d.TokenEndpointAuthMethodsSupported
	d.IntrospectionEndpoint, d.UserinfoEndpoint, d.EndSessionEndpoint, d.DeviceAuthorizationEndpoint = "", "", "", ""
	d.IntrospectionEndpointAuthMethodsSupported, d.IntrospectionEndpointAuthSigningAlgValuesSupported, d.ClaimsSupported = nil, nil, nil
	// The library's document has no field for Client ID Metadata Document
	// support (MCP 2025-11-25); add it.
	b, err := json.Marshal(d)
	var doc map[string]any
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		server.WriteError(w, http.StatusInternalServerError, "internal_error", "cannot encode the metadata")
		return
	}
	doc["client_id_metadata_document_supported"] = true
	w.Header().Set("Access-Control-Allow-Origin", "*")
	server.WriteJSON(w, http.StatusOK, doc)
}

// withResource authenticates the client at the token endpoint
// (clientauth.go) and checks the RFC 8707 resource parameter: absent means this
// server; present it must name this server or a configured extra resource,
// else invalid_target. /authorize hands it on to CreateAuthRequest; the
// token endpoint checks it against the grant's resource.
func (p *Provider) withResource(next http.Handler, authorize bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_request", "the request body is not a valid form (at most 64 KiB)")
			return
		}
		if !authorize && !p.authenticateClient(w, r) {
			return
		}
		res := r.Form["resource"]
		if len(res) > 1 {
			oauthError(w, http.StatusBadRequest, "invalid_target", "send at most one resource")
			return
		}
		resource := ""
		if len(res) == 1 {
			resource = strings.TrimRight(res[0], "/")
			if !slices.Contains(p.storage.resources, resource) {
				oauthError(w, http.StatusBadRequest, "invalid_target", "this authorization server issues no tokens for that resource")
				return
			}
		}
		switch {
		case authorize:
			r = r.WithContext(withResource(r.Context(), resource))
		case resource == "":
			// The token is bound to the grant's resource whatever the
			// request says: absent is not "any".
		case r.Form.Get("grant_type") == string(oidc.GrantTypeRefreshToken):
			if !p.refreshResourceMatches(r, resource) {
				oauthError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the one the grant was given for")
				return
			}
		case r.Form.Get("grant_type") == string(oidc.GrantTypeCode):
			p.exchangeForResource(w, r, next, resource)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// exchangeForResource runs a code exchange that names a resource: the
// storage compares it with the code's when it consumes the code, and a
// mismatch is answered invalid_target (RFC 8707 §2) instead of the
// library's answer, which is held back until then. The code is spent
// either way.
func (p *Provider) exchangeForResource(w http.ResponseWriter, r *http.Request, next http.Handler, resource string) {
	chk := &codeResource{want: resource}
	held := &heldResponse{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(held, r.WithContext(context.WithValue(r.Context(), codeResourceKey{}, chk)))
	if chk.mismatch {
		oauthError(w, http.StatusBadRequest, "invalid_target", "the authorization code was issued for another resource")
		return
	}
	for k, v := range held.header {
		w.Header()[k] = v
	}
	w.WriteHeader(held.status)
	_, _ = w.Write(held.body.Bytes())
}

// codeResource is the resource a code exchange asks for, and whether the
// code turned out to be for another one.
type codeResource struct {
	want     string
	mismatch bool
}

type codeResourceKey struct{}

// heldResponse keeps a token response (a few hundred bytes) until the
// exchange is known to be for the code's resource.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header         { return h.header }
func (h *heldResponse) WriteHeader(status int)      { h.status = status }
func (h *heldResponse) Write(b []byte) (int, error) { return h.body.Write(b) }

// refreshResourceMatches reports whether a refresh request's resource is
// the one its refresh token's grant was bound to.
func (p *Provider) refreshResourceMatches(r *http.Request, resource string) bool {
	t, err := p.opts.Store.Token(r.Context(), identity.Hash(r.Form.Get("refresh_token")))
	if err != nil {
		return true // the library answers invalid_grant
	}
	g, err := p.opts.Store.Grant(r.Context(), t.GrantID)
	return err != nil || g.Resource == resource
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Cache-Control", "no-store")
	server.WriteJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// ErrInvalidToken is a token refused: unknown, expired, revoked, for
// another audience or issuer, badly signed.
var ErrInvalidToken = server.ErrInvalidToken
