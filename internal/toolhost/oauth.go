package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/console"
	"github.com/toolhost/toolhost/server/oauth"
)

// setupOAuth builds the resource server (and the embedded authorization
// server unless an external issuer is configured). It returns the
// authenticator the routes use (API keys as before, plus OAuth tokens),
// the routes to mount behind the admin scope and the public ones; onClose
// gets what to stop at shutdown (the purge of expired clients);
// consoleSignIn is set to the console's OAuth sign-in when the embedded
// server runs (an external issuer's users sign in with a key).
func setupOAuth(ctx context.Context, cfg config.OAuth, ks *keys.Service, listen net.Addr, logger *slog.Logger, onClose func(func()), consoleSignIn **console.OAuth) (server.Authenticator, map[string]http.Handler, map[string]http.Handler, error) {
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
	st, ok := ks.Store().(identity.GrantStore)
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
			Limiter: ks.Limiter(), RegistrationsPerMinute: cfg.RegistrationsPerMinute, RegistrationsPerMinuteTotal: cfg.RegistrationsPerMinuteTotal,
			UnauthorizedClientTTL: cfg.UnauthorizedClientTTL.D(), IdleClientTTL: cfg.IdleClientTTL.D(),
		})
		if err != nil {
			return nil, nil, nil, err
		}
		onClose(p.Close)
		res.AuthorizationServer, res.Verifier = base, p
		for pattern, h := range p.Routes() {
			public[pattern] = h
		}
		admin = oauth.GrantRoutes(st, nil)
		mux := http.NewServeMux()
		for pattern, h := range p.Routes() {
			mux.Handle(pattern, h)
		}
		*consoleSignIn = &console.OAuth{Client: p.ConsoleClient, Server: mux, Resource: resource,
			Scope: oauth.ConsoleScopes(), Tokens: p, Key: ks.Store().KeyByID}
	}
	for pattern, h := range res.Routes() {
		public[pattern] = h
	}
	return res, admin, public, nil
}
