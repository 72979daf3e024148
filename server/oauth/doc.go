// Package oauth makes toolhost's MCP endpoint (and /v1, for tokens with
// the hosted scope) an OAuth 2.1 protected resource, as the MCP
// authorization specification (2025-06-18, 2025-11-25) asks, so remote
// clients can connect by URL.
//
// Resource is the resource-server side: RFC 9728 metadata (served with the
// go-sdk's auth package) and bearer verification, wired into server.Auth
// as a server.TokenAuthenticator; API keys keep working unchanged beside
// it. Tokens come from one of two issuers:
//
//   - Provider, the embedded authorization server, built on zitadel/oidc's
//     op package (the library runs the protocol; storage.go keeps state in
//     identity.GrantStore): authorization code with PKCE S256 only, dynamic client
//     registration (rate-limited per address and in all on the API keys'
//     limiter, registerlimit.go; unused clients, dead tokens and expired
//     requests are purged at most hourly, expiry.go) and
//     Client ID Metadata Documents (cimd.go:
//     the one outbound fetch, public addresses only), resource indicators
//     binding each code, token and refresh to one resource,
//     client authentication before the grant at the token endpoint
//     (clientauth.go: an unknown or expired client is invalid_client, so
//     it registers again),
//     refresh-token rotation with reuse detection (refresh.go: a token
//     names its grant under a MAC, so a reuse is recognised after the
//     purge deleted its row), revocation, and a
//     server-rendered consent page where the user signs in with an API key;
//     the operator console's own client (console.go: registered in process,
//     the one client admin and tools may be delegated to).
//     A grant acts as that key's account with at most its scopes, so its
//     limits, cap and journal apply. Access tokens are short-lived JWTs
//     whose ids are stored hashed and checked on every request (a revoked
//     grant is refused at once).
//   - External, an existing authorization server (Keycloak, Auth0, another
//     toolhost): its JWTs are checked against its JWKS, issuer, expiry and
//     audience, and a claim names the account.
package oauth
