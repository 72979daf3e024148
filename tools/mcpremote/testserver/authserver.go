package testserver

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Hostile ways an OAuth endpoint of AuthServer can answer.
const (
	// Huge streams a JSON document that never ends, without a length.
	Huge = "huge"
	// HugeDeclared announces a 1 GiB body and streams it.
	HugeDeclared = "huge-declared"
	// Drip sends one byte of a JSON document every 50 ms.
	Drip = "drip"
)

// OAuth endpoints of AuthServer, to name the hostile one.
const (
	EndpointResourceMetadata = "/.well-known/oauth-protected-resource/mcp"
	EndpointServerMetadata   = "/.well-known/oauth-authorization-server"
	EndpointRegister         = "/register"
	EndpointToken            = "/token"
)

// AuthServer is the test MCP server behind OAuth, with its own
// authorization server on the same origin (RFC 9728 and RFC 8414
// metadata, dynamic registration, a token endpoint that grants every
// code, refresh and client-credentials request). One endpoint can be made
// hostile. It records the token requests it was sent.
type AuthServer struct {
	*Server
	// Token is the access token the MCP endpoint accepts and the token
	// endpoint issues (set before serving; IssueJWT changes it).
	Token string

	mu      sync.Mutex
	base    string
	hostile map[string]string
	forms   []url.Values
	srv     *http.Server
	mcpH    http.Handler
}

// StartAuth serves an AuthServer on a loopback port until the returned
// stop is called. Its MCP endpoint is URL().
func StartAuth() (*AuthServer, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	a := &AuthServer{Server: New(false), Token: "good-token", base: "http://" + ln.Addr().String(), hostile: map[string]string{}}
	a.mcpH = a.Handler()
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(a.mcp))
	for _, p := range []string{EndpointResourceMetadata, EndpointServerMetadata, EndpointRegister, EndpointToken} {
		mux.Handle(p, http.HandlerFunc(a.oauth))
	}
	a.srv = &http.Server{Handler: mux}
	go func() { _ = a.srv.Serve(ln) }()
	return a, func() { a.srv.Close() }, nil
}

// URL is the MCP endpoint, also the resource (RFC 8707) it protects.
func (a *AuthServer) URL() string { return a.base + "/mcp" }

// Base is the origin: the issuer and the base of the endpoints.
func (a *AuthServer) Base() string { return a.base }

// SetHostile makes endpoint answer the hostile way how ("" to heal it).
func (a *AuthServer) SetHostile(endpoint, how string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hostile[endpoint] = how
}

// IssueJWT makes the token endpoint issue (and the MCP endpoint accept)
// an RFC 9068 access token (typ at+jwt, unsigned: a client cannot check
// the signature anyway) whose aud is aud.
func (a *AuthServer) IssueJWT(aud string) {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Token = enc(map[string]string{"typ": "at+jwt", "alg": "RS256"}) + "." +
		enc(jwtClaims{Aud: aud, Exp: time.Now().Add(time.Hour).Unix(), Iss: a.base, Sub: "user-1"}) + ".c2ln"
}

func (a *AuthServer) token() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Token
}

// TokenForms are the forms of the token requests, in order.
func (a *AuthServer) TokenForms() []url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]url.Values(nil), a.forms...)
}

func (a *AuthServer) mcp(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+a.token() {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+a.base+EndpointResourceMetadata+`"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	a.mcpH.ServeHTTP(w, r)
}

func (a *AuthServer) oauth(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	how := a.hostile[r.URL.Path]
	a.mu.Unlock()
	var doc any
	status := http.StatusOK
	switch r.URL.Path {
	case EndpointResourceMetadata:
		doc = resourceMetadata{AuthorizationServers: []string{a.base}, Resource: a.URL()}
	case EndpointServerMetadata:
		doc = serverMetadata{AuthorizationEndpoint: a.base + "/authorize", CodeChallengeMethodsSupported: []string{"S256"},
			GrantTypesSupported: []string{"authorization_code", "refresh_token"}, Issuer: a.base, RegistrationEndpoint: a.base + EndpointRegister,
			ResponseTypesSupported: []string{"code"}, TokenEndpoint: a.base + EndpointToken}
	case EndpointRegister:
		status = http.StatusCreated
		doc = registration{ClientID: "dyn-client", RedirectURIs: []string{"http://127.0.0.1/cb"}, TokenEndpointAuthMethod: "none"}
	case EndpointToken:
		_ = r.ParseForm()
		a.mu.Lock()
		a.forms = append(a.forms, r.PostForm)
		a.mu.Unlock()
		doc = tokenResponse{AccessToken: a.token(), ExpiresIn: 3600, RefreshToken: "refresh-next", TokenType: "Bearer"}
	}
	w.Header().Set("Content-Type", "application/json")
	switch how {
	case Huge, HugeDeclared:
		if how == HugeDeclared {
			w.Header().Set("Content-Length", "1073741824")
		}
		w.WriteHeader(status)
		flood(w, r)
	case Drip:
		w.WriteHeader(status)
		b, _ := json.Marshal(doc)
		for _, c := range b {
			if _, err := w.Write([]byte{c}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	default:
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(doc)
	}
}

// flood writes a JSON string that never closes until the client goes
// away (or 1 GiB).
func flood(w http.ResponseWriter, r *http.Request) {
	chunk := []byte(strings.Repeat("x", 32<<10))
	if _, err := w.Write([]byte(`{"padding":"`)); err != nil {
		return
	}
	for sent := 0; sent < 1<<30 && r.Context().Err() == nil; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// The documents of the authorization server, their fields in sorted order
// of their names (the order maps wrote them in).
type (
	resourceMetadata struct {
		AuthorizationServers []string `json:"authorization_servers"`
		Resource             string   `json:"resource"`
	}
	serverMetadata struct {
		AuthorizationEndpoint         string   `json:"authorization_endpoint"`
		CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
		GrantTypesSupported           []string `json:"grant_types_supported"`
		Issuer                        string   `json:"issuer"`
		RegistrationEndpoint          string   `json:"registration_endpoint"`
		ResponseTypesSupported        []string `json:"response_types_supported"`
		TokenEndpoint                 string   `json:"token_endpoint"`
	}
	registration struct {
		ClientID                string   `json:"client_id"`
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	}
	tokenResponse struct {
		AccessToken  string `json:"access_token"`
		ExpiresIn    int    `json:"expires_in"`
		RefreshToken string `json:"refresh_token"`
		TokenType    string `json:"token_type"`
	}
	jwtClaims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Iss string `json:"iss"`
		Sub string `json:"sub"`
	}
)
