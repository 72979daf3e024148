package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"toolhost/config/duration"
	"toolhost/grants"
	"toolhost/keys"
	"toolhost/server"
	"toolhost/server/oauth"
)

// OAuthConfig is the "auth.oauth" section of the config file
// (docs/oauth.md).
type OAuthConfig struct {
	// Enabled turns OAuth on /mcp and /v1 on or off (default on; never in
	// --dev, where nothing is authenticated).
	Enabled *bool `json:"enabled"`
	// PublicURL is the base URL clients reach this server at
	// ("https://tools.example.com"); default http://<listen address>. The
	// resource is PublicURL + "/mcp"; the embedded issuer is PublicURL.
	PublicURL string `json:"public_url"`
	// Issuer, when set, is an external authorization server whose JWTs are
	// accepted instead of running the embedded one.
	Issuer string `json:"issuer"`
	// AccountClaim names the external token's claim holding the toolhost
	// account id (default "sub").
	AccountClaim string `json:"account_claim"`
	// AccessTokenTTL (default "1h") and RefreshTokenTTL (default "720h")
	// of the embedded server's tokens.
	AccessTokenTTL  duration.Duration `json:"access_token_ttl"`
	RefreshTokenTTL duration.Duration `json:"refresh_token_ttl"`
	// ClientMetadataPrivateHosts lets Client ID Metadata Documents be
	// fetched from private and loopback addresses (default: public only).
	ClientMetadataPrivateHosts bool `json:"client_metadata_private_hosts"`
	// ExtraResources are other resource URLs the embedded server may bind
	// tokens to (other toolhost servers using this one as their issuer).
	ExtraResources []string `json:"extra_resources"`
}

// AuthConfig is the "auth" section of the config file.
type AuthConfig struct {
	OAuth OAuthConfig `json:"oauth"`
}

// setupOAuth builds the resource server (and the embedded authorization
// server unless an external issuer is configured). It returns the
// authenticator the routes use (API keys as before, plus OAuth tokens),
// the routes to mount behind the admin scope and the public ones.
func setupOAuth(ctx context.Context, cfg OAuthConfig, ks *keys.Service, listen net.Addr, logger *slog.Logger) (server.Authenticator, map[string]http.Handler, map[string]http.Handler, error) {
	if cfg.Enabled != nil && !*cfg.Enabled {
		return ks, nil, nil, nil
	}
	base := strings.TrimRight(cfg.PublicURL, "/")
	if base == "" {
		base = "http://" + listen.String()
		if ta, ok := listen.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
			logger.Warn("OAuth clients are told to use "+base+", the listen address; set auth.oauth.public_url to the URL they reach this server at",
				"doc", "docs/oauth.md")
		}
	}
	resource := base + "/mcp"
	st, ok := ks.Store().(grants.Store)
	if !ok {
		return nil, nil, nil, fmt.Errorf("oauth: the key store cannot hold grants")
	}
	res := &oauth.Resource{URL: resource, Keys: ks}
	public := map[string]http.Handler{}
	admin := map[string]http.Handler{}
	if cfg.Issuer != "" {
		res.AuthorizationServer = strings.TrimRight(cfg.Issuer, "/")
		res.Verifier = oauth.NewExternal(oauth.ExternalOptions{
			Issuer: res.AuthorizationServer, Resource: resource, AccountClaim: cfg.AccountClaim, Keys: ks.Store(),
		})
	} else {
		p, err := oauth.NewProvider(ctx, oauth.Options{
			Issuer: base, Resource: resource, ExtraResources: cfg.ExtraResources,
			Store: st, Keys: ks, KeyStore: ks.Store(), ClientMetadataPrivateHosts: cfg.ClientMetadataPrivateHosts,
			AccessTokenTTL: cfg.AccessTokenTTL.D(), RefreshTokenTTL: cfg.RefreshTokenTTL.D(), Logger: logger,
		})
		if err != nil {
			return nil, nil, nil, err
		}
		res.AuthorizationServer, res.Verifier = base, p
		for pattern, h := range p.Routes() {
			public[pattern] = h
		}
		admin = oauth.GrantRoutes(st, nil)
	}
	for pattern, h := range res.Routes() {
		public[pattern] = h
	}
	return res, admin, public, nil
}
