package fetchpage

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools"
)

// TestFetchRefusesSSRFPayloads is the SSRF battery: every payload must end in
// address_not_allowed, and the canary server (the "internal" service the
// payloads aim at) must see no connection at all.
func TestFetchRefusesSSRFPayloads(t *testing.T) {
	f := newFixture(t, Config{})
	c := newCanary(t)
	p := c.port
	// Names an attacker controls that resolve to internal addresses.
	f.dns.set("localhost", "127.0.0.1", "::1")
	f.dns.set("rebind.test", "127.0.0.1")
	f.dns.set("private-v6.test", "::1")
	f.dns.set("mixed.test", "10.0.0.5", "127.0.0.1")
	f.dns.set("mapped.test", "::ffff:127.0.0.1")
	f.dns.set("lan.test", "192.168.0.10")
	f.dns.set("metadata.google.internal", "169.254.169.254")
	f.dns.set("fixture.test.evil.test", "127.0.0.1")
	f.dns.set("evilfixture.test", "127.0.0.1")
	f.dns.set("nat64.test", "64:ff9b::7f00:1")
	f.dns.set("zero.test", "0.0.0.0")
	f.mux.HandleFunc("/redir", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	f.mux.HandleFunc("/redir307", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusTemporaryRedirect)
	})
	redir := func(to string) string { return f.url("/redir?to=" + url.QueryEscape(to)) }

	payloads := []string{
		// loopback and its numeric spellings
		"http://127.0.0.1:" + p + "/",
		"http://127.1:" + p + "/",
		"http://127.0.1:" + p + "/",
		"http://2130706433:" + p + "/",
		"http://0x7f000001:" + p + "/",
		"http://0177.0.0.1:" + p + "/",
		"http://0x7f.0.0.1:" + p + "/",
		"http://0x7f.1:" + p + "/",
		"http://017700000001:" + p + "/",
		"http://127.000.000.001:" + p + "/",
		"http://127.0.0.1.:" + p + "/",
		"http://0.0.0.0:" + p + "/",
		"http://0:" + p + "/",
		// IPv6 forms of loopback / unspecified
		"http://[::1]:" + p + "/",
		"http://[::]:" + p + "/",
		"http://[::ffff:127.0.0.1]:" + p + "/",
		"http://[::ffff:7f00:1]:" + p + "/",
		"http://[0:0:0:0:0:ffff:127.0.0.1]:" + p + "/",
		"http://[::127.0.0.1]:" + p + "/",
		"http://[64:ff9b::127.0.0.1]:" + p + "/",
		"http://[64:ff9b::a00:1]:" + p + "/",
		"http://[2002:7f00:1::]:" + p + "/",
		// private, metadata, CGNAT, multicast, broadcast, reserved
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://10.0.0.1:" + p + "/",
		"http://172.16.0.1:" + p + "/",
		"http://192.168.1.1:" + p + "/",
		"http://100.64.0.1:" + p + "/",
		"http://224.0.0.1:" + p + "/",
		"http://255.255.255.255:" + p + "/",
		"http://240.0.0.1:" + p + "/",
		"http://198.18.0.1:" + p + "/",
		"http://[fc00::1]:" + p + "/",
		"http://[fe80::1%25lo]:" + p + "/",
		"http://[ff02::1]:" + p + "/",
		"http://[fec0::1]:" + p + "/",
		// names that resolve to internal addresses (checked at dial time)
		"http://localhost:" + p + "/",
		"http://LOCALHOST.:" + p + "/",
		"http://rebind.test:" + p + "/",
		"http://private-v6.test:" + p + "/",
		"http://mixed.test:" + p + "/",
		"http://mapped.test:" + p + "/",
		"http://lan.test:" + p + "/",
		"http://metadata.google.internal/computeMetadata/v1/",
		"http://fixture.test.evil.test:" + p + "/",
		"http://evilfixture.test:" + p + "/",
		"http://nat64.test:" + p + "/",
		"http://zero.test:" + p + "/",
		// redirects from an allowed site to internal addresses
		redir("http://127.0.0.1:" + p + "/"),
		redir("http://rebind.test:" + p + "/"),
		redir("http://2130706433:" + p + "/"),
		redir("http://[::ffff:127.0.0.1]:" + p + "/"),
		redir("http://169.254.169.254/latest/meta-data/"),
		redir(redir("http://localhost:" + p + "/")),
		f.url("/redir307?to=" + url.QueryEscape("http://0x7f.1:"+p+"/")),
	}
	if len(payloads) < 40 {
		t.Fatalf("battery has %d payloads, want at least 40", len(payloads))
	}
	for _, payload := range payloads {
		t.Run(payload, func(t *testing.T) {
			for _, lang := range []catalog.Lang{catalog.English, catalog.Chinese} {
				out := f.callWith(tools.Proposal{Lang: lang}, map[string]any{"url": payload})
				if !out.IsError || out.Code != CodeAddressNotAllowed {
					t.Fatalf("%s: want %s, got error=%v code=%q msg=%q", lang, CodeAddressNotAllowed, out.IsError, out.Code, out.Message)
				}
				want := "address not allowed"
				if lang == catalog.Chinese {
					want = "不允许的地址"
				}
				if !strings.Contains(out.Message, want) {
					t.Fatalf("%s: message %q lacks %q", lang, out.Message, want)
				}
			}
		})
	}
	if n := c.conns.Load(); n != 0 {
		t.Fatalf("the canary server received %d connections", n)
	}
	// Positive control: the allow-listed fixture itself is fetched, so the
	// refusals above are the guard's doing, not a broken client.
	f.mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("fine"))
	})
	if o := f.ok(f.call(map[string]any{"url": f.url("/ok")})); o.Content != "fine" {
		t.Fatalf("control fetch: content %q", o.Content)
	}
}

// TestCanaryCountsConnectionsWhenAllowed proves the canary would notice a
// connection: with its address on the allow-list the same URL reaches it.
func TestCanaryCountsConnectionsWhenAllowed(t *testing.T) {
	c := newCanary(t)
	f := newFixture(t, Config{AllowPrivate: []string{"127.0.0.0/8"}})
	out := f.call(map[string]any{"url": "http://2130706433:" + c.port + "/", "format": "text"})
	if o := f.ok(out); !strings.Contains(o.Content, "internal secret") {
		t.Fatalf("content %q", o.Content)
	}
	if c.conns.Load() == 0 {
		t.Fatal("canary saw no connection")
	}
}

func TestAllowPrivateRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "http://x/", "a b"} {
		if _, err := New(Config{AllowPrivate: []string{bad}}); err == nil {
			t.Errorf("allow_private %q accepted", bad)
		}
	}
	if _, err := New(Config{AllowPrivate: []string{"10.0.0.0/8", "::1", "intranet.example"}}); err != nil {
		t.Fatal(err)
	}
}

// TestExplicitProxyKeepsTheGuard: with fetch.proxy set the dialer only sees
// the proxy, so the target's addresses are checked before the request; a
// name that resolves to a private address never reaches the proxy.
func TestExplicitProxyKeepsTheGuard(t *testing.T) {
	var proxied []string
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.URL.String())
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("via proxy"))
	}))
	defer proxy.Close()
	f := newFixture(t, Config{Proxy: proxy.URL})
	f.dns.set("rebind.test", "127.0.0.1")
	if o := f.ok(f.call(map[string]any{"url": f.url("/p")})); o.Content != "via proxy" {
		t.Fatalf("content %q", o.Content)
	}
	mu.Lock()
	n := len(proxied)
	mu.Unlock()
	for _, bad := range []string{"http://rebind.test/", "http://127.0.0.1/", "http://[::1]/"} {
		if out := f.call(map[string]any{"url": bad}); out.Code != CodeAddressNotAllowed {
			t.Errorf("%s via proxy: %s %s", bad, out.Code, out.Message)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(proxied) != n {
		t.Fatalf("the proxy was asked for %v", proxied[n:])
	}
}
