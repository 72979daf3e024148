package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/wire"
)

// Limits bound what MCP clients can make the server hold: request bodies,
// the clientInfo an initialize carries (kept for the session's life) and
// the number of sessions per API key and in all. Zero values take the
// defaults below.
type Limits struct {
	// MaxBodyBytes caps one POST body (4 MiB, the go-sdk's default).
	MaxBodyBytes int64
	// MaxClientInfoBytes caps the clientInfo of initialize (8 KiB).
	MaxClientInfoBytes int
	// SessionsPerKey and Sessions cap open sessions per API key (256) and
	// in all (4096). At a cap, the key's (or the server's) session idle the
	// longest is closed to make room; when every one is busy the new
	// session is refused with 429 too_many_sessions.
	SessionsPerKey int
	Sessions       int
}

// Defaults of Limits.
const (
	DefaultMaxBodyBytes       = 4 << 20
	DefaultMaxClientInfoBytes = 8 << 10
	DefaultSessionsPerKey     = 256
	DefaultSessions           = 4096
	// DefaultSessionTimeout is the idle time after which a session closes.
	DefaultSessionTimeout = 30 * time.Minute
	// maxToolNameRunes is MCP's limit on a tool name.
	maxToolNameRunes = 128
)

func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxClientInfoBytes <= 0 {
		l.MaxClientInfoBytes = DefaultMaxClientInfoBytes
	}
	if l.SessionsPerKey <= 0 {
		l.SessionsPerKey = DefaultSessionsPerKey
	}
	if l.Sessions <= 0 {
		l.Sessions = DefaultSessions
	}
	return l
}

// JSON-RPC error codes of the guard's refusals.
const (
	codeParseError    = -32700
	codeInvalidParams = -32602
)

// guard sits in front of the go-sdk handler. It refuses what the SDK would
// read leniently (trailing data, duplicate keys in the envelope or params:
// encoding/json keeps the last, so `"name":"roll_dice","name":"get_time"`
// would run get_time), caps initialize's clientInfo, and keeps the session
// caps.
type guard struct {
	next  http.Handler
	srv   func() iter.Seq[*sdk.ServerSession]
	lim   Limits
	keyOf func(*http.Request) string

	mu       sync.Mutex
	sessions map[string]*session
	uses     uint64 // counts the requests on sessions: their order of use
}

// session is a session in the table; last is the guard's use count at its
// latest request, so the smallest is the session idle the longest.
type session struct {
	key      string
	last     uint64
	inflight int
}

func newGuard(next http.Handler, srv func() iter.Seq[*sdk.ServerSession], lim Limits, keyOf func(*http.Request) string) *guard {
	if keyOf == nil {
		keyOf = func(*http.Request) string { return "" }
	}
	return &guard{next: next, srv: srv, lim: lim.withDefaults(), keyOf: keyOf, sessions: map[string]*session{}}
}

// envelope is the part of a JSON-RPC message the guard looks at.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name       json.RawMessage `json:"name"`
		ClientInfo json.RawMessage `json:"clientInfo"`
	} `json:"params"`
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost {
		g.track(w, r, sid, false)
		return
	}
	body, err := g.readBody(w, r, sid)
	if errors.Is(err, errInitializeTooLarge) {
		rpcError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidParams, fmt.Sprintf("an initialize request is larger than %d bytes (clientInfo may have at most %d)", g.initializeCap(), g.lim.MaxClientInfoBytes))
		return
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			rpcError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidParams, fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit))
			return
		}
		rpcError(w, http.StatusBadRequest, nil, codeParseError, "reading the request body: "+clip.Echo(err.Error()))
		return
	}
	msgs, err := envelopes(body)
	if err != nil {
		rpcError(w, http.StatusBadRequest, nil, codeParseError, "parse error: "+strings.TrimPrefix(err.Error(), wire.ErrNotStrict.Error()+": "))
		return
	}
	initialize := false
	for _, m := range msgs {
		switch m.Method {
		case "initialize":
			initialize = true
			if n := len(m.Params.ClientInfo); n > g.lim.MaxClientInfoBytes {
				rpcError(w, http.StatusBadRequest, m.ID, codeInvalidParams, fmt.Sprintf("clientInfo is %d bytes; at most %d are accepted", n, g.lim.MaxClientInfoBytes))
				return
			}
		case "tools/call":
			var name string
			// A name of n bytes written holds at most n-2 characters.
			if len(m.Params.Name)-2 > maxToolNameRunes && json.Unmarshal(m.Params.Name, &name) == nil && len([]rune(name)) > maxToolNameRunes {
				rpcError(w, http.StatusBadRequest, m.ID, codeInvalidParams, fmt.Sprintf("tool name %q is longer than %d characters", clip.Echo(name), maxToolNameRunes))
				return
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.track(w, r, sid, initialize && sid == "")
}

// initializeSlack is what an initialize body may hold besides clientInfo
// (the envelope, protocolVersion, capabilities).
const initializeSlack = 16 << 10

// errInitializeTooLarge: an initialize body over initializeCap.
var errInitializeTooLarge = errors.New("initialize request too large")

func (g *guard) initializeCap() int64 { return int64(g.lim.MaxClientInfoBytes) + initializeSlack }

// readBody reads a POST body under MaxBodyBytes. A POST without a session
// may be an initialize, whose body is small: it is read up to
// initializeCap first (only its first KiB when it announces more), and
// when there is more and the method read from that start is initialize,
// the rest is never read. Thousands of initialize calls with a 60 KB
// clientInfo otherwise cost reading and checking every byte before the
// clientInfo cap refused them.
func (g *guard) readBody(w http.ResponseWriter, r *http.Request, sid string) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, g.lim.MaxBodyBytes)
	if sid != "" {
		return io.ReadAll(body)
	}
	peek := g.initializeCap()
	if r.ContentLength > peek {
		peek = 1 << 10
	}
	head, err := io.ReadAll(io.LimitReader(body, peek+1))
	if err != nil || int64(len(head)) <= peek {
		return head, err
	}
	// Larger than an initialize may be.
	if leadingMethod(head) == "initialize" {
		return nil, errInitializeTooLarge
	}
	rest, err := io.ReadAll(body)
	return append(head, rest...), err
}

// leadingMethod is the "method" of the JSON-RPC object that starts with
// head, when it comes before anything head cuts short ("" otherwise, and
// for a batch). Clients write the method before the params.
func leadingMethod(head []byte) string {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		if key, _ := t.(string); key == "method" {
			v, err := dec.Token()
			if err != nil {
				return ""
			}
			m, _ := v.(string)
			return m
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// track serves the request and keeps the session table: a request on a
// session marks it busy while it runs (an open GET stream too); a new
// session first makes room under the caps.
func (g *guard) track(w http.ResponseWriter, r *http.Request, sid string, opens bool) {
	key := g.keyOf(r)
	if opens {
		if !g.makeRoom(key) {
			rpcError(w, http.StatusTooManyRequests, nil, -32000, fmt.Sprintf("too_many_sessions: every one of the %d sessions allowed (%d per API key) is busy; close one (HTTP DELETE) or retry later", g.lim.Sessions, g.lim.SessionsPerKey))
			return
		}
		sw := &sessionWriter{ResponseWriter: w}
		g.next.ServeHTTP(sw, r)
		if id := sw.Header().Get("Mcp-Session-Id"); id != "" && sw.status < 300 {
			g.mu.Lock()
			if _, known := g.sessions[id]; !known {
				g.uses++
				g.sessions[id] = &session{key: key, last: g.uses}
			}
			g.mu.Unlock()
		}
		return
	}
	if sid == "" {
		g.next.ServeHTTP(w, r)
		return
	}
	g.mu.Lock()
	s := g.sessions[sid]
	if s != nil {
		s.inflight++
		g.uses++
		s.last = g.uses
	}
	g.mu.Unlock()
	defer func() {
		if s == nil {
			return
		}
		g.mu.Lock()
		s.inflight--
		g.uses++
		s.last = g.uses
		if r.Method == http.MethodDelete {
			delete(g.sessions, sid)
		}
		g.mu.Unlock()
	}()
	g.next.ServeHTTP(w, r)
}

// makeRoom reports whether a new session of key fits under the caps,
// closing the longest-idle session of the key (or of anyone, for the total
// cap) when it is needed.
func (g *guard) makeRoom(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	pruned := false
	for {
		perKey := 0
		for _, s := range g.sessions {
			if s.key == key {
				perKey++
			}
		}
		if perKey < g.lim.SessionsPerKey && len(g.sessions) < g.lim.Sessions {
			return true
		}
		if !pruned {
			// Sessions the SDK closed by itself (idle timeout, shutdown)
			// leave our table here.
			g.prune()
			pruned = true
			continue
		}
		victim := ""
		var oldest uint64
		for id, s := range g.sessions {
			if s.inflight > 0 || (perKey >= g.lim.SessionsPerKey && s.key != key) {
				continue
			}
			if victim == "" || s.last < oldest {
				victim, oldest = id, s.last
			}
		}
		if victim == "" {
			return false
		}
		delete(g.sessions, victim)
		for ss := range g.srv() {
			if ss.ID() == victim {
				_ = ss.Close()
				break
			}
		}
	}
}

func (g *guard) prune() {
	live := make(map[string]bool, len(g.sessions))
	for ss := range g.srv() {
		live[ss.ID()] = true
	}
	for id := range g.sessions {
		if !live[id] {
			delete(g.sessions, id)
		}
	}
}

// sessionWriter notes the status of the response that creates a session.
type sessionWriter struct {
	http.ResponseWriter
	status int
}

func (w *sessionWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func rpcError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rpcErrorResponse{Error: rpcErrorObject{Code: code, Message: msg}, ID: id, JSONRPC: "2.0"})
}

// rpcErrorResponse is a JSON-RPC error response, its fields in sorted
// order of their names: the bytes of the map it replaced.
type rpcErrorResponse struct {
	Error   rpcErrorObject  `json:"error"`
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
}

type rpcErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
