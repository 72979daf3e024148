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
		enc(map[string]any{"iss": a.base, "aud": aud, "sub": "user-1", "exp": time.Now().Add(time.Hour).Unix()}) + ".c2ln"
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
		doc = map[string]any{"resource": a.URL(), "authorization_servers": []string{a.base}}
	case EndpointServerMetadata:
		doc = map[string]any{"issuer": a.base, "authorization_endpoint": a.base + "/authorize", "token_endpoint": a.base + EndpointToken,
			"registration_endpoint": a.base + EndpointRegister, "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token"}}
	case EndpointRegister:
		status = http.StatusCreated
		doc = map[string]any{"client_id": "dyn-client", "redirect_uris": []string{"http://127.0.0.1/cb"}, "token_endpoint_auth_method": "none"}
	case EndpointToken:
		_ = r.ParseForm()
		a.mu.Lock()
		a.forms = append(a.forms, r.PostForm)
		a.mu.Unlock()
		doc = map[string]any{"access_token": a.token(), "refresh_token": "refresh-next", "token_type": "Bearer", "expires_in": 3600}
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
