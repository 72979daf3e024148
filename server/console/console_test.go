package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/server/console"
	"github.com/toolhost/toolhost/server/oauth"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// deleteTool is irreversible: its calls wait for an approval by default.
type deleteTool struct{ runs atomic.Int64 }

func (d *deleteTool) Spec() catalog.Spec {
	return catalog.Spec{Name: "delete_note", Version: "1.0.0",
		Title:       catalog.Text{ZH: "删除笔记", EN: "Delete note"},
		Description: catalog.Text{ZH: "删除一条笔记", EN: "Deletes a note for good"},
		Input:       json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		SideEffect:  catalog.SideEffectIrreversible}
}

func (d *deleteTool) Call(context.Context, *tools.Invocation) (*tools.Result, error) {
	d.runs.Add(1)
	return &tools.Result{Structured: map[string]any{"deleted": true}}, nil
}

// echoTool is read-only and takes one field of every kind the
// playground's form makes.
type echoTool struct{}

func (echoTool) Spec() catalog.Spec {
	return catalog.Spec{Name: "echo_args", Version: "1.0.0",
		Title:       catalog.Text{ZH: "回显", EN: "Echo"},
		Description: catalog.Text{ZH: "回显参数", EN: "Echoes its arguments"},
		Input: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer","maximum":10},` +
			`"x":{"type":"number"},"flag":{"type":"boolean"},"mode":{"enum":["a","b"]},"list":{"type":"array","items":{"type":"string"}}},` +
			`"required":["text"],"additionalProperties":false}`),
		SideEffect: catalog.SideEffectNone, Annotations: catalog.Annotations{ReadOnly: true}}
}

func (echoTool) Call(_ context.Context, inv *tools.Invocation) (*tools.Result, error) {
	var v map[string]any
	_ = json.Unmarshal(inv.Args, &v)
	return &tools.Result{Structured: v}, nil
}

// fixture is the console over the real key service (SQLite), the real
// executor and journal, and the REST routes behind server.Auth, as serve
// mounts them.
type fixture struct {
	srv       *httptest.Server
	keys      *keys.Service
	exec      *tools.Executor
	secret    map[string]string // admin, acme, globex
	keyID     map[string]string
	approvals approval.Store
}

func newFixture(t *testing.T, o console.Options) *fixture {
	t.Helper()
	return newFixtureScripts(t, o, false)
}

// newFixtureScripts is newFixture with ENABLE_UNSAFE_SCRIPT_HANDLER as
// scripts says, for the definitions routes and the executor alike.
func newFixtureScripts(t *testing.T, o console.Options, scripts bool) *fixture {
	t.Helper()
	return newFixtureFull(t, o, scripts, nil, nil)
}

// newFixtureWith is newFixtureScripts with more REST routes, mounted with
// the tools scope (the job route's, as serve mounts it).
func newFixtureWith(t *testing.T, o console.Options, scripts bool, extra map[string]http.Handler) *fixture {
	t.Helper()
	return newFixtureFull(t, o, scripts, nil, extra)
}

// newFixtureFull is newFixtureScripts with, when oa is set, the embedded
// authorization server in the same process, its tokens taken by the REST
// routes and its grants routes mounted, and the console's OAuth sign-in;
// extra routes are mounted with the tools scope.
func newFixtureFull(t *testing.T, o console.Options, scripts bool, oa *oauth.Options, extra map[string]http.Handler) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{srv: httptest.NewUnstartedServer(nil)}
	base := "http://" + f.srv.Listener.Addr().String()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolhost.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f.keys, f.secret, f.keyID, f.approvals = keys.New(keys.Options{Store: db}), map[string]string{}, map[string]string{}, approval.NewMemory()
	t.Cleanup(f.keys.Close)
	for _, k := range []struct {
		account string
		scopes  []string
	}{{"admin", keys.AllScopes}, {"acme", []string{keys.ScopeMCP, keys.ScopeTools}}, {"globex", []string{keys.ScopeMCP, keys.ScopeTools}}} {
		key, secret, err := f.keys.CreateKey(ctx, k.account, k.account+"-key", k.scopes, keys.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f.secret[k.account], f.keyID[k.account] = secret, key.ID
	}
	defs, sessions := tooldef.NewMemStore(), session.NewMemStore()
	f.exec, err = tools.NewExecutor(tools.Options{Approvals: f.approvals, Journal: journal.New(journal.NewMemStore(), journal.Options{}),
		Sessions: sessions, Definitions: defs, ScriptsEnabled: scripts, Authorizer: tools.KeysAuthorizer(f.keys)}, &deleteTool{}, &echoTool{})
	if err != nil {
		t.Fatal(err)
	}
	var authn server.Authenticator = f.keys
	authServer := http.NewServeMux()
	if oa != nil {
		oa.Issuer, oa.Resource, oa.Store, oa.Keys, oa.KeyStore = base, base+"/mcp", db, f.keys, db
		p, err := oauth.NewProvider(ctx, *oa)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		for pattern, h := range p.Routes() {
			authServer.Handle(pattern, h)
		}
		authn = &oauth.Resource{URL: oa.Resource, AuthorizationServer: base, Verifier: p, Keys: f.keys}
		o.OAuth = &console.OAuth{Client: p.ConsoleClient, Server: authServer, Resource: oa.Resource,
			Scope: oauth.ConsoleScopes(), Tokens: p, Key: db.KeyByID}
	}
	api := http.NewServeMux()
	mount := func(scope string, routes map[string]http.Handler) {
		for p, h := range routes {
			api.Handle(p, server.Auth(authn, false, scope, false)(h))
		}
	}
	mount(keys.ScopeTools, (&admin.Approvals{Store: f.approvals, Decide: f.exec.DecideApproval, Clock: f.exec.Clock()}).Routes())
	mount(keys.ScopeAdmin, (&admin.Keys{Service: f.keys}).Routes())
	mount(keys.ScopeTools, extra)
	if oa != nil {
		mount(keys.ScopeAdmin, oauth.GrantRoutes(db, oa.Now))
	}
	// The tools API as serve mounts it: reads with any key, writes with
	// the tools scope.
	toolsAPI := func(routes map[string]http.Handler) {
		for p, h := range routes {
			scope := keys.ScopeTools
			if strings.HasPrefix(p, "GET ") {
				scope = ""
			}
			api.Handle(p, server.Auth(authn, false, scope, false)(h))
		}
	}
	toolsAPI((&admin.Definitions{Store: defs, ScriptsEnabled: func() bool { return scripts },
		Rules: tooldef.Rules{Slots: session.DefaultSlots, CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) }}}).Routes())
	toolsAPI((&admin.Sessions{Store: sessions, Runtime: func(ctx context.Context, account, id, slot string) (any, error) {
		return f.exec.Runtime(ctx, account, id, slot)
	}}).Routes())
	o.Keys, o.API, o.Journal = f.keys, api, f.exec.Journal().Store()
	if o.Pipeline == nil {
		o.Pipeline = f.exec
	}
	c, err := console.New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for p, h := range c.Routes() {
		mux.Handle(p, h)
	}
	mux.Handle("/api/", http.StripPrefix("/api", api))
	mux.Handle("/oauth/", authServer)
	f.srv.Config.Handler = mux
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// call runs delete_note as account and returns the execution id and, when
// it waits for one, the approval id.
func (f *fixture) call(t *testing.T, account, path string) (execID, approvalID string) {
	t.Helper()
	out, err := f.exec.Execute(context.Background(), tools.Proposal{Tool: "delete_note", Args: json.RawMessage(`{"path":` + quote(path) + `}`),
		Caller: tools.Caller{Identity: identity.Identity{AccountID: account, KeyID: f.keyID[account]}, Face: "mcp", SessionID: "sess_1"}})
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Error struct {
			ApprovalID string `json:"approval_id"`
		} `json:"error"`
	}
	_ = json.Unmarshal(out.Structured, &b)
	return out.ExecutionID, b.Error.ApprovalID
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// browser is a signed-in cookie jar.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (f *fixture) browser(t *testing.T) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: f.srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (f *fixture) signIn(t *testing.T, account string) *browser {
	t.Helper()
	b := f.browser(t)
	_, page := b.get("/console/sign-in")
	resp := b.post("/console/sign-in", url.Values{"api_key": {f.secret[account]}, "csrf": {csrfOf(t, page)}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/overview" {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	return b
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *browser) post(path string, form url.Values, header map[string]string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return html.UnescapeString(m[1])
}
