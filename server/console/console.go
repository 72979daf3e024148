package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
)

// Prefix is where the console is served.
const Prefix = "/console"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options are what the console reads and acts through.
type Options struct {
	// Keys authenticates the key a session holds, at every request.
	Keys server.Authenticator
	// API is the REST routes, each behind the authentication and scope it
	// is mounted with: the pages that read or change approvals, keys and
	// usage call it in process with the session's key as the bearer.
	API http.Handler
	// Journal is the execution journal's store; Slots the caller slots its
	// caller_slot filter takes (nil: the default ones).
	Journal journal.Store
	Slots   []string
	// Secret derives the session and CSRF keys; replicas given the same
	// one share sessions. Empty: a random key (sessions end with the
	// process).
	Secret []byte
	// Lifetime of a session from sign-in (DefaultLifetime when 0).
	Lifetime time.Duration
	// TraceURL, when set, links an execution's trace id: "{trace_id}" in
	// it is replaced by the id (for example a Jaeger or Tempo URL).
	TraceURL string
	// Secure reports whether a request reached toolhost over TLS (directly
	// or through a trusted proxy): the session cookie is then Secure. Nil:
	// only a direct TLS connection.
	Secure func(*http.Request) bool
	// RunCode reports run_code's pools for the overview (nil: not shown);
	// its value is shown as JSON.
	RunCode func() any
	// Pipeline runs the playground's calls (nil: no playground).
	Pipeline Pipeline
	// OAuth, when set, offers sign-in through the embedded authorization
	// server beside the API key (oauth.go).
	OAuth *OAuth
	// Pages are more pages, shown in the navigation after the built-in
	// ones (the job queue's, once it exists).
	Pages []Page
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Page is one more console page: Path is below Prefix ("/jobs"), Title
// its navigation label. Render returns the page's body for the signed-in
// viewer; the console escapes nothing in it, so build it with html/template.
type Page struct {
	Path, Title string
	Render      func(ctx context.Context, v Viewer) (template.HTML, error)
	// Post, when set, takes the page's forms (POST Prefix+Path) once the
	// session, the cross-origin check and the CSRF token have passed: it
	// acts through v.API and returns the notice to show above the page,
	// or an error message with the status to answer.
	Post func(ctx context.Context, v Viewer, form url.Values) (notice, errMsg string, status int)
	// Overview, when set, is a fragment of the overview page (built with
	// html/template too): the page's figures beside the calls'.
	Overview func(ctx context.Context, v Viewer) (template.HTML, error)
}

// Viewer is who is signed in: the key's account and whether it holds the
// admin scope.
type Viewer struct {
	AccountID string
	KeyID     string
	Scopes    []string
	Admin     bool
	// Account is the account a Page shows and acts on: AccountID, or for
	// an admin the one the Account selector names. The console refuses
	// any other key naming an account not its own before a Page sees it;
	// a Page acting through API names Account to the route (?account=),
	// which checks the key's scope again.
	Account string
	// CSRF is the token the forms of a Page carry in a field named csrf.
	CSRF string
	// API calls a REST route in process with the session's key as the
	// bearer, as the console's own pages do: the route's status, and its
	// error code and message when it refused (err: it could not be called).
	API func(ctx context.Context, method, path string, body, out any) (status int, msg string, err error)
}

// Console serves the pages.
type Console struct {
	o     Options
	seal  *sealer
	pages map[string]*template.Template
	cop   *http.CrossOriginProtection
}

// New builds the console.
func New(o Options) (*Console, error) {
	if o.Keys == nil || o.API == nil || o.Journal == nil {
		return nil, errors.New("console: Keys, API and Journal are required")
	}
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Secure == nil {
		o.Secure = func(r *http.Request) bool { return r.TLS != nil }
	}
	s, err := newSealer(o.Secret)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{o: o, seal: s, pages: pages, cop: http.NewCrossOriginProtection()}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.refuse(w, http.StatusForbidden, "cross_site_request", "cross-site requests to the console are refused")
	}))
	return c, nil
}

// Routes are the console's routes, to be mounted without authentication:
// the console checks its own session cookie.
func (c *Console) Routes() map[string]http.Handler {
	static, _ := fs.Sub(staticFS, "static")
	routes := map[string]http.Handler{
		"GET " + Prefix + "/{$}":                        http.RedirectHandler(Prefix+"/overview", http.StatusSeeOther),
		"GET " + Prefix + "/static/":                    http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)),
		"GET " + Prefix + "/sign-in":                    http.HandlerFunc(c.signInPage),
		"POST " + Prefix + "/sign-in":                   http.HandlerFunc(c.signIn),
		"POST " + Prefix + "/oauth/start":               http.HandlerFunc(c.oauthStart),
		"GET " + Prefix + "/oauth/callback":             http.HandlerFunc(c.oauthCallback),
		"POST " + Prefix + "/sign-out":                  c.signedIn(c.signOut),
		"GET " + Prefix + "/overview":                   c.signedIn(c.overview),
		"GET " + Prefix + "/executions":                 c.signedIn(c.executions),
		"GET " + Prefix + "/executions/{id}":            c.signedIn(c.execution),
		"GET " + Prefix + "/approvals":                  c.signedIn(c.approvals),
		"POST " + Prefix + "/approvals/{id}":            c.signedIn(c.decide),
		"GET " + Prefix + "/keys":                       c.signedIn(c.keys),
		"POST " + Prefix + "/keys":                      c.signedIn(c.createKey),
		"POST " + Prefix + "/keys/{id}/revoke":          c.signedIn(c.revokeKey),
		"GET " + Prefix + "/mcp-servers":                c.signedIn(c.mcpServers),
		"POST " + Prefix + "/mcp-servers":               c.signedIn(c.registerMCPServer),
		"POST " + Prefix + "/mcp-servers/{id}":          c.signedIn(c.mcpServerAction),
		"GET " + Prefix + "/grants":                     c.signedIn(c.grants),
		"GET " + Prefix + "/tool-definitions":           c.signedIn(c.toolDefinitions),
		"POST " + Prefix + "/tool-definitions":          c.signedIn(c.createDefinition),
		"GET " + Prefix + "/tool-definitions/{id}":      c.signedIn(c.toolDefinition),
		"POST " + Prefix + "/tool-definitions/{id}":     c.signedIn(c.definitionAction),
		"GET " + Prefix + "/sessions":                   c.signedIn(c.sessions),
		"POST " + Prefix + "/sessions":                  c.signedIn(c.createSession),
		"POST " + Prefix + "/sessions/{id}/permissions": c.signedIn(c.setPermissions),
		"GET " + Prefix + "/playground":                 c.signedIn(c.playground),
		"POST " + Prefix + "/playground":                c.signedIn(c.runTool),
		"POST " + Prefix + "/grants/{id}/revoke":        c.signedIn(c.revokeGrant),
	}
	for _, p := range c.o.Pages {
		routes["GET "+Prefix+p.Path] = c.signedIn(c.extraPage(p))
		if p.Post != nil {
			routes["POST "+Prefix+p.Path] = c.signedIn(c.extraPost(p))
		}
	}
	for pattern, h := range routes {
		routes[pattern] = c.headers(h)
	}
	return routes
}

// maxFormBytes bounds a posted form: a tool definition's schema and
// script may each be 64 KiB, and playground arguments as large.
const maxFormBytes = 256 << 10

// request is one signed-in request: the viewer, the key it holds and the
// session (for the CSRF token).
type request struct {
	Viewer
	secret string
	key    *keys.Key
	sess   session
	csrf   string
}

// signedIn admits a request carrying a live session whose key still
// authenticates; an unsafe method must also pass the cross-origin check
// and carry the session's CSRF token. Without a session a GET goes to the
// sign-in page and anything else is 401.
func (c *Console) signedIn(h func(http.ResponseWriter, *http.Request, *request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq, err := c.session(r)
		if err != nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
				return
			}
			c.refuse(w, http.StatusUnauthorized, "not_signed_in", "sign in to the console first")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := c.cop.Check(r); err != nil {
				c.refuse(w, http.StatusForbidden, "cross_site_request", "cross-site requests to the console are refused")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil || !c.seal.checkCSRF(rq.sess.ID, r.PostForm.Get("csrf")) {
				c.refuse(w, http.StatusForbidden, "csrf_token_invalid", "the form's CSRF token is missing or wrong; reload the page and try again")
				return
			}
		}
		h(w, r, rq)
	})
}

// session opens the request's cookie and authenticates its key (or
// verifies its OAuth access token) again, so a revoked key or grant ends
// the session at once.
func (c *Console) session(r *http.Request) (*request, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, errBadSession
	}
	ss, err := c.seal.open(ck.Value, c.o.Now())
	if err != nil {
		return nil, err
	}
	if ss.Kind == kindOAuth {
		return c.oauthViewer(r.Context(), ss)
	}
	k, err := c.o.Keys.Authenticate(r.Context(), ss.Secret)
	if err != nil {
		return nil, fmt.Errorf("console session key: %w", err)
	}
	return &request{
		Viewer: Viewer{AccountID: k.AccountID, KeyID: k.ID, Scopes: k.Scopes, Admin: k.Has(keys.ScopeAdmin)},
		secret: ss.Secret, key: k, sess: ss, csrf: c.seal.csrf(ss.ID),
	}, nil
}

// Why request.account refuses a named account.
var (
	errAccountForbidden = errors.New("only a key with the admin scope may view another account")
	errAccountInvalid   = errors.New("validation_error: the account must be 1 to 1024 bytes of UTF-8 without control characters")
)

// account is the account a page shows: the viewer's own, or for an admin
// the one ?account= (or the form's account) names. Any other key naming
// an account not its own is refused (errAccountForbidden), and so is a
// name no store could hold (errAccountInvalid: over admin.MaxFilterBytes,
// not UTF-8, or with a control character, as the REST routes' ?account=
// is checked).
func (rq *request) account(r *http.Request) (string, error) {
	a := r.FormValue("account")
	switch {
	case a == "" || a == rq.AccountID:
		return rq.AccountID, nil
	case !rq.Admin:
		return "", errAccountForbidden
	case len(a) > admin.MaxFilterBytes || !utf8.ValidString(a) || strings.ContainsFunc(a, unicode.IsControl):
		return "", errAccountInvalid
	}
	return a, nil
}

// headers sets the security headers of every console answer.
func (c *Console) headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}
