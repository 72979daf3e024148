package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/internal/wire"
)

// Options configure the HTTP server.
type Options struct {
	Addr    string
	Version string
	// MCP is the streamable-HTTP MCP handler mounted on /mcp.
	MCP http.Handler
	// Extra routes mounted as given ("GET /tool-executions" → handler).
	Routes map[string]http.Handler
	// Health, when set, adds fields to the /healthz answer (the state of
	// the sandbox runtimes and their warm pools, say): the members of the
	// value it returns, a struct or anything else that encodes as a JSON
	// object. It must not block.
	Health func() any
	// ShutdownTimeout is how long in-flight requests may take to finish
	// after a shutdown signal before their contexts are cancelled.
	ShutdownTimeout time.Duration
	// Limits bound connections, idle time, headers and request bodies.
	Limits Limits
	Logger *slog.Logger
	// Telemetry, when set, gives every request a server span and records
	// the HTTP server metrics (telemetry.go); nil records nothing.
	Telemetry *Telemetry
}

// Server is the HTTP face.
type Server struct {
	opts    Options
	handler http.Handler
}

// DefaultShutdownTimeout is Options.ShutdownTimeout's default (and the
// config file's shutdown_timeout).
const DefaultShutdownTimeout = 10 * time.Second

// New builds the route table and middleware chain.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, opts)
	})
	if opts.MCP != nil {
		// Browsers must not be able to drive the MCP endpoint from another
		// site: cross-origin POSTs are refused before the SDK sees them (the
		// SDK itself refuses non-local Host headers on loopback).
		cop := http.NewCrossOriginProtection()
		cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			WriteError(w, http.StatusForbidden, "origin_not_allowed", "cross-origin requests to /mcp are not allowed")
		}))
		mux.Handle("/mcp", cop.Handler(opts.MCP))
	}
	for pattern, h := range opts.Routes {
		mux.Handle(pattern, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	})
	opts.Limits = opts.Limits.withDefaults()
	var h http.Handler = mux
	if opts.Telemetry != nil {
		h = traced(opts.Telemetry, h)
	}
	return &Server{opts: opts, handler: bodyDeadline(opts.Limits.BodyTimeout, RequestID(withClientAddr(opts.Limits.TrustedProxies, h)))}
}

// Handler returns the whole chain, for tests that use httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve listens on ln until ctx ends, then shuts down gracefully: new
// connections stop, in-flight requests get ShutdownTimeout to finish, after
// which their contexts are cancelled and the listener is closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	lim := s.opts.Limits
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
	}
	cl := limitConns(ln, lim.MaxConns, lim.MaxConnsPerIP, lim.TrustedProxies)
	hs.ConnState = cl.connState
	ln = cl
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.opts.Logger.Info("shutting down", "grace", s.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Long calls and open SSE streams: cancel them and close.
		cancelBase()
		err = hs.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

type ctxKey int

const (
	requestIDKey ctxKey = iota
	clientRequestIDKey
)

// RequestID gives every request an id of ours, stores it in the context and
// answers it in X-Request-Id. It becomes the /v1 request_id and the journal
// floor id, so it is never taken from the caller: two accounts could send
// the same one, and a caller could write what log lines say. A caller's
// own X-Request-Id (at most 128 printable characters) is kept beside it
// (ClientRequestIDFrom) and echoed as X-Client-Request-Id. An id already in
// the context (WithRequestID, set by an outer layer) is kept.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := RequestIDFrom(ctx)
		if id == "" {
			id = uuid.NewString()
			ctx = WithRequestID(ctx, id)
		}
		w.Header().Set("X-Request-Id", id)
		if cid := r.Header.Get("X-Request-Id"); cid != "" && len(cid) <= 128 && printable(cid) {
			w.Header().Set("X-Client-Request-Id", cid)
			ctx = context.WithValue(ctx, clientRequestIDKey, cid)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func printable(s string) bool {
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// WithRequestID returns ctx carrying id as the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestIDFrom returns the request id stored by RequestID.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// ClientRequestIDFrom returns the caller's own X-Request-Id, if it sent one.
func ClientRequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(clientRequestIDKey).(string)
	return id
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError writes the error body every REST route uses:
// {"error":{"code":..., "message":...}}.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	WriteErrorObject(w, status, wire.ErrorObject{Code: code, Message: message})
}

// WriteErrorObject writes the error body with an error object that
// carries more than a code and a message (the field a validation error is
// about, say).
func WriteErrorObject(w http.ResponseWriter, status int, e wire.ErrorObject) {
	WriteJSON(w, status, wire.ErrorBody{Error: e})
}
