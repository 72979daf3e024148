package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
)

// storage is zitadel/oidc's op.Storage over identity.GrantStore: the library runs
// the protocol (request validation, PKCE verification, token responses,
// revocation parsing); this file only keeps state and enforces what the
// library leaves to its storage (PKCE S256 only, the resource binding,
// single-use codes, refresh rotation with reuse detection).
type storage struct {
	st         identity.GrantStore
	keyStore   KeyStore
	issuer     string
	login      func(id string) string // the consent page of a request
	resources  []string               // what a token may be bound to; [0] is ours
	accessTTL  time.Duration
	refreshTTL time.Duration
	requestTTL time.Duration
	signing    *rsa.PrivateKey
	signingID  string
	refreshKey []byte // the MAC key of refresh tokens (refresh.go)
	kick       func() // starts the purge, at most hourly (expiry.go)
	now        func() time.Time
	logger     *slog.Logger
	cimd       *cimd
}

// authRequest is an authorization request as stored (JSON) between
// /authorize, the consent page and the code exchange.
type authRequest struct {
	ID                  string                   `json:"id"`
	ClientID            string                   `json:"client_id"`
	RedirectURI         string                   `json:"redirect_uri"`
	State               string                   `json:"state"`
	Nonce               string                   `json:"nonce"`
	Scopes              []string                 `json:"scopes"`
	ResponseType        oidc.ResponseType        `json:"response_type"`
	ResponseMode        oidc.ResponseMode        `json:"response_mode"`
	CodeChallenge       string                   `json:"code_challenge"`
	CodeChallengeMethod oidc.CodeChallengeMethod `json:"code_challenge_method"`
	Resource            string                   `json:"resource"`
	CreatedAt           time.Time                `json:"created_at"`

	// From the grant, once consented.
	grant *identity.Grant
}

func (a *authRequest) GetID() string                      { return a.ID }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string              { return []string{a.Resource} }
func (a *authRequest) GetClientID() string                { return a.ClientID }
func (a *authRequest) GetNonce() string                   { return a.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.ResponseMode }
func (a *authRequest) GetState() string                   { return a.State }
func (a *authRequest) Done() bool                         { return a.grant != nil }
func (a *authRequest) GetAuthTime() time.Time {
	if a.grant != nil {
		return a.grant.CreatedAt
	}
	return time.Time{}
}
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.CodeChallenge, Method: a.CodeChallengeMethod}
}

// GetScopes is what the user granted (offline_access added so the library
// issues a refresh token), or, before consent, what the client asked for.
func (a *authRequest) GetScopes() []string {
	if a.grant != nil {
		return append(slices.Clone(a.grant.Scopes), oidc.ScopeOfflineAccess)
	}
	return a.Scopes
}

func (a *authRequest) GetSubject() string {
	if a.grant != nil {
		return a.grant.AccountID
	}
	return ""
}

// refreshRequest is a refresh token's grant, as the library asks for it.
type refreshRequest struct {
	token  *identity.Token
	grant  *identity.Grant
	scopes []string
}

func (r *refreshRequest) GetAMR() []string            { return []string{"pwd"} }
func (r *refreshRequest) GetAudience() []string       { return []string{r.grant.Resource} }
func (r *refreshRequest) GetAuthTime() time.Time      { return r.grant.CreatedAt }
func (r *refreshRequest) GetClientID() string         { return r.token.ClientID }
func (r *refreshRequest) GetScopes() []string         { return r.scopes }
func (r *refreshRequest) GetSubject() string          { return r.grant.AccountID }
func (r *refreshRequest) SetCurrentScopes(s []string) { r.scopes = s }

type resourceKey struct{}

// withResource carries the RFC 8707 resource of an /authorize request to
// CreateAuthRequest (the library does not parse it).
func withResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	// OAuth 2.1: PKCE is required, and only S256 (plain would hand the
	// verifier to whoever sees the authorization request).
	if req.CodeChallenge == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge is required (PKCE with S256)")
	}
	if req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256")
	}
	if req.ResponseType != oidc.ResponseTypeCode {
		return nil, oidc.ErrInvalidRequest().WithDescription("only response_type=code is supported")
	}
	resource, _ := ctx.Value(resourceKey{}).(string)
	if resource == "" {
		resource = s.resources[0]
	}
	now := s.now().UTC()
	a := &authRequest{
		ID: keys.NewID("authreq"), ClientID: req.ClientID, RedirectURI: req.RedirectURI, State: req.State,
		Nonce: req.Nonce, Scopes: req.Scopes, ResponseType: req.ResponseType, ResponseMode: req.ResponseMode,
		CodeChallenge: req.CodeChallenge, CodeChallengeMethod: req.CodeChallengeMethod, Resource: resource, CreatedAt: now,
	}
	data, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode auth request: %w", err)
	}
	if err := s.st.CreateRequest(ctx, identity.Request{ID: a.ID, ClientID: a.ClientID, Data: data, CreatedAt: now, ExpiresAt: now.Add(s.requestTTL)}); err != nil {
		return nil, err
	}
	s.kick() // requests pile up until a purge
	return a, nil
}

func (s *storage) decode(ctx context.Context, r *identity.Request) (*authRequest, error) {
	var a authRequest
	if err := json.Unmarshal(r.Data, &a); err != nil {
		return nil, fmt.Errorf("decode auth request %s: %w", r.ID, err)
	}
	if r.GrantID != "" {
		g, err := s.st.Grant(ctx, r.GrantID)
		if err != nil {
			return nil, err
		}
		a.grant = g
	}
	return &a, nil
}

func (s *storage) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	r, err := s.st.Request(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.ExpiresAt.Before(s.now()) {
		return nil, fmt.Errorf("auth request %s expired: %w", id, identity.ErrNotFound)
	}
	return s.decode(ctx, r)
}

// AuthRequestByCode consumes the code: a replayed code is refused
// (invalid_grant) and, as RFC 6749 §4.1.2 advises, the grant it produced
// is revoked with every token issued under it.
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.st.ConsumeCode(ctx, identity.Hash(code), s.now())
	if errors.Is(err, identity.ErrUsed) && r != nil && r.GrantID != "" {
		if rerr := s.st.RevokeGrant(ctx, r.GrantID, s.now()); rerr != nil {
			s.logger.Warn("revoke grant of a replayed code", "grant_id", r.GrantID, "err", rerr)
		}
		return nil, fmt.Errorf("authorization code replayed: %w", err)
	}
	if err != nil {
		return nil, err
	}
	a, err := s.decode(ctx, r)
	if err != nil {
		return nil, err
	}
	if a.grant == nil || a.grant.RevokedAt != nil {
		return nil, fmt.Errorf("auth request %s: no live grant: %w", r.ID, identity.ErrNotFound)
	}
	// RFC 8707: a code is exchanged for a token of its own resource only.
	if chk, _ := ctx.Value(codeResourceKey{}).(*codeResource); chk != nil && chk.want != a.Resource {
		chk.mismatch = true
		return nil, fmt.Errorf("auth request %s: the code is for %s, not %s", r.ID, a.Resource, chk.want)
	}
	return a, nil
}

func (s *storage) SaveAuthCode(ctx context.Context, id, code string) error {
	return s.st.SetCode(ctx, id, identity.Hash(code))
}

func (s *storage) DeleteAuthRequest(ctx context.Context, id string) error {
	return s.st.DeleteRequest(ctx, id)
}

// CreateAccessToken is used when no refresh token is due; every grant here
// gets one, so it only records the access token.
func (s *storage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	grantID, clientID, err := grantOf(req)
	if err != nil {
		return "", time.Time{}, err
	}
	return s.newAccessToken(ctx, grantID, clientID, req.GetScopes())
}

func grantOf(req op.TokenRequest) (grantID, clientID string, err error) {
	switch r := req.(type) {
	case *authRequest:
		if r.grant == nil {
			return "", "", oidc.ErrInvalidGrant().WithDescription("the authorization request was not consented")
		}
		return r.grant.ID, r.ClientID, nil
	case *refreshRequest:
		return r.grant.ID, r.token.ClientID, nil
	}
	return "", "", oidc.ErrUnsupportedGrantType()
}

func (s *storage) newAccessToken(ctx context.Context, grantID, clientID string, scopes []string) (string, time.Time, error) {
	id, err := randomToken()
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now().UTC()
	exp := now.Add(s.accessTTL)
	t := identity.Token{Hash: identity.Hash(id), Kind: identity.KindAccess, GrantID: grantID, ClientID: clientID, Scopes: scopes, CreatedAt: now, ExpiresAt: exp}
	if err := s.st.CreateToken(ctx, t); err != nil {
		return "", time.Time{}, err
	}
	s.kick() // so do tokens, a refresh adding two
	return id, exp, nil
}

// CreateAccessAndRefreshTokens issues an access token and a fresh refresh
// token; on refresh the presented one is rotated away atomically, so two
// concurrent uses of one refresh token cannot both succeed.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	grantID, clientID, err := grantOf(req)
	if err != nil {
		return "", "", time.Time{}, err
	}
	if current != "" {
		if _, err := s.st.UseRefresh(ctx, identity.Hash(current), s.now()); err != nil {
			return "", "", time.Time{}, op.ErrInvalidRefreshToken
		}
	}
	access, exp, err := s.newAccessToken(ctx, grantID, clientID, req.GetScopes())
	if err != nil {
		return "", "", time.Time{}, err
	}
	refresh, err := s.newRefreshToken(grantID)
	if err != nil {
		return "", "", time.Time{}, err
	}
	now := s.now().UTC()
	rt := identity.Token{Hash: identity.Hash(refresh), Kind: identity.KindRefresh, GrantID: grantID, ClientID: clientID,
		Scopes: req.GetScopes(), CreatedAt: now, ExpiresAt: now.Add(s.refreshTTL), NamesGrant: true}
	if err := s.st.CreateToken(ctx, rt); err != nil {
		return "", "", time.Time{}, err
	}
	return access, refresh, exp, nil
}

// TokenRequestByRefreshToken refuses an unknown, expired or revoked refresh
// token; one already rotated away means it leaked, so its grant is revoked
// (OAuth 2.1 §4.3.1) — whether its row is still stored or was purged
// (refresh.go).
func (s *storage) TokenRequestByRefreshToken(ctx context.Context, refresh string) (op.RefreshTokenRequest, error) {
	t, err := s.st.Token(ctx, identity.Hash(refresh))
	if errors.Is(err, identity.ErrNotFound) {
		if g, gerr := s.unstoredGrant(ctx, refresh); gerr == nil && g != nil {
			s.revokeReused(ctx, g)
		}
		return nil, op.ErrInvalidRefreshToken
	}
	if err != nil || t.Kind != identity.KindRefresh {
		return nil, op.ErrInvalidRefreshToken
	}
	now := s.now()
	if t.UsedAt != nil {
		if g, gerr := s.st.Grant(ctx, t.GrantID); gerr == nil {
			s.revokeReused(ctx, g)
		}
		return nil, op.ErrInvalidRefreshToken
	}
	if t.RevokedAt != nil || t.ExpiresAt.Before(now) {
		return nil, op.ErrInvalidRefreshToken
	}
	g, err := s.liveGrant(ctx, t.GrantID)
	if err != nil {
		return nil, op.ErrInvalidRefreshToken
	}
	return &refreshRequest{token: t, grant: g, scopes: t.Scopes}, nil
}

// liveGrant returns the grant when it and the API key it was given with
// are both still valid.
func (s *storage) liveGrant(ctx context.Context, id string) (*identity.Grant, error) {
	g, err := s.st.Grant(ctx, id)
	if err != nil {
		return nil, err
	}
	if g.RevokedAt != nil {
		return nil, fmt.Errorf("grant %s revoked: %w", id, identity.ErrNotFound)
	}
	k, err := s.keyStore.KeyByID(ctx, g.KeyID)
	if err != nil {
		return nil, err
	}
	if k.RevokedAt != nil {
		return nil, fmt.Errorf("grant %s: key %s revoked: %w", id, g.KeyID, identity.ErrNotFound)
	}
	return g, nil
}

func (s *storage) TerminateSession(ctx context.Context, userID, clientID string) error { return nil }

// RevokeToken (RFC 7009): an access token's id or a refresh token. A
// refresh token takes its whole grant with it, also one rotated away and
// purged since (it names its grant). Unknown tokens are not an error (RFC
// 7009 §2.2).
func (s *storage) RevokeToken(ctx context.Context, tokenOrID, userID, clientID string) *oidc.Error {
	t, err := s.st.Token(ctx, identity.Hash(tokenOrID))
	if errors.Is(err, identity.ErrNotFound) {
		return s.revokeUnstored(ctx, tokenOrID, clientID)
	}
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	if t.ClientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("the token was not issued to this client")
	}
	if t.Kind == identity.KindRefresh {
		err = s.st.RevokeGrant(ctx, t.GrantID, s.now())
	} else {
		err = s.st.RevokeToken(ctx, t.Hash, s.now())
	}
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

// revokeUnstored revokes the grant a refresh token with no row names, if
// it is the client's.
func (s *storage) revokeUnstored(ctx context.Context, token, clientID string) *oidc.Error {
	g, err := s.unstoredGrant(ctx, token)
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	if g == nil {
		return nil
	}
	if g.ClientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("the token was not issued to this client")
	}
	if err := s.st.RevokeGrant(ctx, g.ID, s.now()); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

func (s *storage) GetRefreshTokenInfo(ctx context.Context, clientID, token string) (string, string, error) {
	t, err := s.st.Token(ctx, identity.Hash(token))
	if err != nil || t.Kind != identity.KindRefresh || t.ClientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	g, err := s.st.Grant(ctx, t.GrantID)
	if err != nil {
		return "", "", op.ErrInvalidRefreshToken
	}
	return g.AccountID, token, nil
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{id: s.signingID, key: s.signing}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{id: s.signingID, key: s.signing}}}, nil
}

func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if !possibleClientID(id) {
		return nil, fmt.Errorf("oauth client %q: %w", id, identity.ErrNotFound)
	}
	if isClientIDURL(id) {
		c, err := s.cimd.lookup(ctx, id)
		if err != nil {
			s.logger.Info("client metadata document refused", "client_id", id, "err", err)
			return nil, err
		}
		return &client{c: c, login: s.login, now: s.now}, nil
	}
	c, err := s.st.Client(ctx, id)
	if err != nil {
		return nil, err
	}
	return &client{c: c, login: s.login, now: s.now}, nil
}

// maxClientIDBytes bounds a client_id worth looking up: a registered id
// is short, a metadata document's URL at most this long.
const maxClientIDBytes = 2048

// possibleClientID reports whether id could name a client: no id this
// server issues or fetches is empty, longer than maxClientIDBytes, or
// holds invalid UTF-8 or control characters (which PostgreSQL refuses in
// a query, NUL first: such an id is unknown, not a store failure).
func possibleClientID(id string) bool {
	return id != "" && len(id) <= maxClientIDBytes && utf8.ValidString(id) && !strings.ContainsFunc(id, unicode.IsControl)
}

func (s *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	c, err := s.st.Client(ctx, id)
	if err != nil {
		return oidc.ErrInvalidClient()
	}
	if c.SecretHash == "" || !equalHash(c.SecretHash, identity.Hash(secret)) {
		return oidc.ErrInvalidClient().WithDescription("client authentication failed")
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, _, subject, _ string) error {
	info.Subject = subject
	return nil
}

func (s *storage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, _, subject, clientID string) error {
	resp.Subject, resp.ClientID = subject, clientID
	return nil
}

// GetPrivateClaimsFromScopes puts the granted scopes in the access token
// as the space-separated "scope" claim (RFC 9068), which is what resource
// servers, ours and others, read.
func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	var kept []string
	for _, sc := range scopes {
		if sc != oidc.ScopeOfflineAccess && sc != oidc.ScopeOpenID {
			kept = append(kept, sc)
		}
	}
	return map[string]any{"scope": oidc.SpaceDelimitedArray(kept)}, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("jwt profile grants are not supported")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("jwt profile grants are not supported")
}

func (s *storage) Health(context.Context) error { return nil }

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// loadSigningKey returns the authorization server's RSA key, creating it
// on the first start (replicas agree on the first one stored).
func loadSigningKey(ctx context.Context, st identity.GrantStore, now time.Time) (*rsa.PrivateKey, string, error) {
	fresh, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, "", fmt.Errorf("signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(fresh)
	if err != nil {
		return nil, "", fmt.Errorf("signing key: %w", err)
	}
	stored, err := st.SigningKey(ctx, "as-1", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), now)
	if err != nil {
		return nil, "", err
	}
	block, _ := pem.Decode([]byte(stored))
	if block == nil {
		return nil, "", errors.New("signing key: stored key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("signing key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, "", errors.New("signing key: not RSA")
	}
	sum := sha256.Sum256(block.Bytes)
	return rk, "as-" + base64.RawURLEncoding.EncodeToString(sum[:8]), nil
}
