package fetchpage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// fakeDNS answers fixed addresses per name, like a zone an attacker controls
// (public-looking names that resolve to private addresses).
type fakeDNS struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.names[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeDNS) set(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	f.names[name] = as
}

// fixture is a local site reachable only as fixture.test (allow-listed by
// name), plus the executor running a fetch_page configured for it.
type fixture struct {
	t    *testing.T
	srv  *httptest.Server
	mux  *http.ServeMux
	port string
	dns  *fakeDNS
	tool *Tool
	exec *tools.Executor
	hits atomic.Int64
}

const fixtureHost = "fixture.test"

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, mux: http.NewServeMux(), dns: &fakeDNS{names: map[string][]netip.Addr{}}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	_, f.port, _ = net.SplitHostPort(f.srv.Listener.Addr().String())
	f.dns.set(fixtureHost, "127.0.0.1")
	f.dns.set("sub."+fixtureHost, "127.0.0.1")
	cfg.AllowPrivate = append(cfg.AllowPrivate, fixtureHost)
	tool, err := New(cfg, WithResolver(f.dns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tool.Close)
	f.tool = tool
	f.exec, err = tools.NewExecutor(tools.Options{}, tool)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// url is the fixture URL of path.
func (f *fixture) url(path string) string {
	return "http://" + fixtureHost + ":" + f.port + path
}

// call runs fetch_page through the whole pipeline.
func (f *fixture) call(args map[string]any) *tools.Outcome {
	f.t.Helper()
	return f.callWith(tools.Proposal{}, args)
}

func (f *fixture) callWith(p tools.Proposal, args map[string]any) *tools.Outcome {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	p.Tool, p.Args = "fetch_page", raw
	if p.Lang == "" {
		p.Lang = catalog.English
	}
	out, err := f.exec.Execute(context.Background(), p)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// ok decodes a successful outcome's structured content.
func (f *fixture) ok(out *tools.Outcome) Output {
	f.t.Helper()
	if out.IsError {
		f.t.Fatalf("want success, got %s: %s", out.Code, out.Message)
	}
	var o Output
	if err := json.Unmarshal(out.Structured, &o); err != nil {
		f.t.Fatalf("structured content: %v", err)
	}
	return o
}

// canary is a local server that must never be reached: it counts every TCP
// connection it accepts.
type canary struct {
	srv   *httptest.Server
	conns atomic.Int64
	port  string
}

func newCanary(t *testing.T) *canary {
	t.Helper()
	c := &canary{}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "<html><body><p>internal secret</p></body></html>")
	}))
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	_, c.port, _ = net.SplitHostPort(c.srv.Listener.Addr().String())
	return c
}

// invocationFor builds an invocation the way the executor does, for calling
// the tool directly when a test needs the *tools.Error itself.
func invocationFor(t *testing.T, f *fixture, args map[string]any) *tools.Invocation {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return &tools.Invocation{Spec: f.tool.Spec(), Args: raw, Raw: raw, Ref: tools.Reference{Lang: catalog.English}}
}

func asToolErr(err error, te **tools.Error) bool { return errors.As(err, te) }
