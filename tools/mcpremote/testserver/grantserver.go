package testserver

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// GrantServer is the test MCP server behind a token endpoint that
// rotates refresh tokens and detects their reuse, as OAuth 2.1 asks of
// an authorization server with public clients: a refresh takes the
// grant's current refresh token and issues a new access token and a new
// refresh token; a refresh token sent a second time revokes the grant,
// so its access tokens stop working and every later refresh is refused
// (invalid_grant). It counts the token requests it was sent.
type GrantServer struct {
	*Server

	mu       sync.Mutex
	base     string
	requests int
	issued   int
	current  string          // the grant's refresh token
	used     map[string]bool // its refresh tokens used already
	access   map[string]bool // its access tokens
	revoked  bool
	gate     chan struct{} // Hold: the next refresh waits for it
	held     chan struct{}
	srv      *http.Server
}

// StartGrant serves a GrantServer on a loopback port until the returned
// stop is called. Its grant starts with the access token access and the
// refresh token refresh.
func StartGrant(access, refresh string) (*GrantServer, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	g := &GrantServer{Server: New(false), base: "http://" + ln.Addr().String(), current: refresh,
		used: map[string]bool{}, access: map[string]bool{access: true}}
	mcpH := g.Handler()
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.accepts(r.Header.Get("Authorization")) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpH.ServeHTTP(w, r)
	}))
	mux.Handle(EndpointToken, http.HandlerFunc(g.token))
	g.srv = &http.Server{Handler: mux}
	go func() { _ = g.srv.Serve(ln) }()
	return g, func() { g.srv.Close() }, nil
}

// URL is the MCP endpoint.
func (g *GrantServer) URL() string { return g.base + "/mcp" }

// TokenURL is the token endpoint.
func (g *GrantServer) TokenURL() string { return g.base + EndpointToken }

// Requests is how many token requests it was sent.
func (g *GrantServer) Requests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests
}

// Revoked reports whether a refresh token came twice.
func (g *GrantServer) Revoked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.revoked
}

// RefreshToken is the grant's current refresh token.
func (g *GrantServer) RefreshToken() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.current
}

// Hold makes the next token request wait, before it is answered, until
// release is called; held is closed once that request arrived.
func (g *GrantServer) Hold() (held <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.held = make(chan struct{}), make(chan struct{})
	gate := g.gate
	var once sync.Once
	return g.held, func() { once.Do(func() { close(gate) }) }
}

func (g *GrantServer) accepts(authorization string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	const prefix = "Bearer "
	return !g.revoked && len(authorization) > len(prefix) && authorization[:len(prefix)] == prefix && g.access[authorization[len(prefix):]]
}

func (g *GrantServer) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	g.mu.Lock()
	g.requests++
	gate, held := g.gate, g.held
	g.gate, g.held = nil, nil
	g.mu.Unlock()
	if gate != nil {
		close(held)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	doc, ok := g.refresh(r.PostForm.Get("grant_type"), r.PostForm.Get("refresh_token"))
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
	}
	_ = json.NewEncoder(w).Encode(doc)
}

// refresh answers one refresh request: the rotated tokens (a
// tokenResponse), or the error document of a refused one (an oauthError).
func (g *GrantServer) refresh(grantType, refresh string) (any, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case grantType != "refresh_token":
		return oauthError{Error: "unsupported_grant_type"}, false
	case g.revoked:
		return oauthError{Error: "invalid_grant", ErrorDescription: "the grant was revoked"}, false
	case refresh != g.current:
		if g.used[refresh] {
			g.revoked, g.access = true, map[string]bool{}
		}
		return oauthError{Error: "invalid_grant", ErrorDescription: "refresh token reused or unknown"}, false
	}
	g.issued++
	n := strconv.Itoa(g.issued)
	g.used[refresh], g.current = true, "refresh-"+n
	g.access["access-"+n] = true
	return tokenResponse{AccessToken: "access-" + n, ExpiresIn: 3600, RefreshToken: g.current, TokenType: "Bearer"}, true
}

// oauthError is a token endpoint's refusal (RFC 6749, section 5.2).
type oauthError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
}
