package fetchpage

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config/duration"
	"github.com/toolhost/toolhost/tools"
)

// The domain lists see the name the transport dials: Unicode spellings of
// a blocked host (fullwidth letters, the ideographic full stop, a trailing
// dot) are refused, and a host that does not normalise is invalid.
func TestDomainListsSeeTheIDNAForm(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true})
	f.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "secret")
	})
	for _, host := range []string{"ＦＩＸＴＵＲＥ.test", "fixture。test", "fixture.test.", "FIXTURE.TEST", "fixture．ｔｅｓｔ"} {
		out := f.call(map[string]any{"url": "http://" + host + ":" + f.port + "/", "blocked_domains": []string{"fixture.test"}})
		if out.Code != CodeDomainNotAllowed {
			t.Errorf("%s: %s %s", host, out.Code, out.Message)
		}
		out = f.call(map[string]any{"url": "http://" + host + ":" + f.port + "/", "blocked_domains": []string{"ＦＩＸＴＵＲＥ。test"}})
		if out.Code != CodeDomainNotAllowed {
			t.Errorf("%s with a Unicode list entry: %s %s", host, out.Code, out.Message)
		}
	}
	out := f.call(map[string]any{"url": "http://a\u00a0b.test:" + f.port + "/"})
	if out.Code != CodeInvalidURL {
		t.Errorf("a host that fails IDNA: %s %s", out.Code, out.Message)
	}
	if n := f.hits.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

// localhost and names under it are refused by name before any lookup,
// robots.txt included (it used to fail as fetch_failed from the robots
// fetch).
func TestLocalhostNamesAreRefusedByName(t *testing.T) {
	f := newFixture(t, Config{})
	f.dns.set("localhost", "127.0.0.1")
	f.dns.set("foo.localhost", "127.0.0.1")
	for _, host := range []string{"localhost.", "localhost", "foo.localhost", "LOCALHOST", "a.b.localhost."} {
		out := f.call(map[string]any{"url": "http://" + host + ":" + f.port + "/"})
		if out.Code != CodeAddressNotAllowed {
			t.Errorf("%s: %s %s", host, out.Code, out.Message)
		}
	}
	if n := f.hits.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

// Every spelling and name of one machine shares one per-host limit.
func TestPerHostLimitKeysOnTheResolvedAddress(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true})
	f.dns.set("other.test", "127.0.0.1")
	keys := map[string]bool{}
	for _, raw := range []string{"http://127.0.0.1:1/", "http://127.0.0.1.:2/", "http://2130706433/", "http://fixture.test/", "http://other.test/", "http://[::ffff:127.0.0.1]/"} {
		u, _ := url.Parse(raw)
		keys[f.tool.hostKey(context.Background(), u)] = true
	}
	if len(keys) != 1 {
		t.Fatalf("keys %v, want one", keys)
	}
}

// The fetches in flight and the body bytes they hold are bounded whatever
// the concurrency: past the budget a fetch waits, then answers busy.
func TestFetchBudgetBoundsBodiesInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"body bytes", Config{BodyBudgetBytes: 3 << 20}},
		{"fetches in flight", Config{MaxInFlight: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.IgnoreRobots, cfg.CacheTTL, cfg.QueueTimeout, cfg.PerHostConcurrency = true, duration.Duration(-1), duration.Duration(300*time.Millisecond), 8
			f := newFixture(t, cfg)
			release := make(chan struct{})
			f.mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Length", fmt.Sprint(2<<20))
				w.WriteHeader(200)
				w.(http.Flusher).Flush()
				<-release
				w.Write([]byte(strings.Repeat("z", 2<<20)))
			})
			var wg sync.WaitGroup
			codes := make(chan string, 2)
			for i := range 2 {
				wg.Go(func() {
					out := f.call(map[string]any{"url": f.url(fmt.Sprintf("/big?i=%d", i))})
					codes <- out.Code
					if out.Code == CodeBusy && out.RetryAfter <= 0 {
						t.Errorf("busy without retry_after")
					}
				})
			}
			first := <-codes
			close(release)
			wg.Wait()
			second := <-codes
			if first != CodeBusy || second != "" {
				t.Fatalf("codes %q then %q, want busy then success", first, second)
			}
		})
	}
}

type leakyDNS struct{}

func (leakyDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.255.255.53:53", IsNotFound: true}
}

// Messages say what kind of failure it was, never the resolver's or the
// dialled address (they stay in the server log).
func TestFailuresDoNotLeakInternalAddresses(t *testing.T) {
	f := newFixture(t, Config{IgnoreRobots: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closedPort, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	out := f.call(map[string]any{"url": "http://" + fixtureHost + ":" + closedPort + "/"})
	if out.Code != CodeFetchFailed || strings.Contains(out.Message, "127.0.0.1") || !strings.Contains(out.Message, "connection refused") {
		t.Errorf("refused: %s %s", out.Code, out.Message)
	}
	tool, err := New(Config{IgnoreRobots: true}, WithResolver(leakyDNS{}))
	if err != nil {
		t.Fatal(err)
	}
	defer tool.Close()
	ex, err := tools.NewExecutor(tools.Options{}, tool)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ex.Execute(context.Background(), tools.Proposal{Tool: "fetch_page", Args: json.RawMessage(`{"url":"http://nowhere.example/"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != CodeFetchFailed || strings.Contains(res.Text, "10.255") || strings.Contains(res.Text, ":53") {
		t.Errorf("dns: %s %s", res.Code, res.Text)
	}
}
