package oauth_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/server/oauth"
)

// clock is a settable time for the limiter's window.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}

// openStore is a real SQLite store in the test's folder.
func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "th.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// provider serves the embedded authorization server on 127.0.0.1.
func provider(t *testing.T, opts oauth.Options, out ...**oauth.Provider) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	opts.Issuer, opts.Resource = base, base+"/mcp"
	p, err := oauth.NewProvider(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close) // before the store closes: cleanups run last first
	for _, o := range out {
		*o = p
	}
	mux := http.NewServeMux()
	for pattern, h := range p.Routes() {
		mux.Handle(pattern, h)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return base
}

// from is an HTTP client whose connections leave from the loopback
// address src (127.0.0.0/8 is all this host's).
func from(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

type regAnswer struct {
	status     int
	retryAfter string
	Error      string `json:"error"`
	ClientID   string `json:"client_id"`
}

func register(t *testing.T, c *http.Client, base, name string) regAnswer {
	t.Helper()
	body := `{"client_name":"` + name + `","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
	resp, err := c.Post(base+"/oauth/register", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return regAnswer{}
	}
	defer resp.Body.Close()
	var a regAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Error(err)
	}
	a.status, a.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	return a
}

// A burst of registrations from one address gets exactly the per-address
// limit through, the rest 429 with the RFC 7591 error object and
// Retry-After; another address gets what is left of the global limit;
// the clients stored meanwhile stay, and the window passing admits again.
func TestRegistrationBurstIsLimited(t *testing.T) {
	db := openStore(t)
	clk := newClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	base := provider(t, oauth.Options{Store: db, Now: clk.now, RegistrationsPerMinute: 5, RegistrationsPerMinuteTotal: 8})

	burst := func(src string, n int) (ok []string, refused []regAnswer) {
		c := from(src)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := register(t, c, base, src+" client "+strconv.Itoa(i))
				mu.Lock()
				defer mu.Unlock()
				if a.status == http.StatusCreated {
					ok = append(ok, a.ClientID)
				} else {
					refused = append(refused, a)
				}
			}()
		}
		wg.Wait()
		return ok, refused
	}
	checkRefused := func(t *testing.T, refused []regAnswer) {
		t.Helper()
		for _, a := range refused {
			if secs, err := strconv.Atoi(a.retryAfter); a.status != http.StatusTooManyRequests || a.Error != "temporarily_unavailable" || err != nil || secs < 1 || secs > 60 {
				t.Fatalf("refused registration: %+v", a)
			}
		}
	}

	tests := []struct {
		src          string
		n, admitted  int
		advanceFirst time.Duration
	}{
		{"127.0.0.1", 40, 5, 0},           // the per-address limit
		{"127.0.0.2", 10, 3, 0},           // what the global limit leaves
		{"127.0.0.3", 3, 0, 0},            // the global limit reached
		{"127.0.0.1", 10, 5, time.Minute}, // a minute later
	}
	var stored []string
	for _, tt := range tests {
		clk.add(tt.advanceFirst)
		ok, refused := burst(tt.src, tt.n)
		if len(ok) != tt.admitted || len(refused) != tt.n-tt.admitted {
			t.Fatalf("%s: %d admitted, %d refused; want %d admitted", tt.src, len(ok), len(refused), tt.admitted)
		}
		checkRefused(t, refused)
		stored = append(stored, ok...)
	}
	var n int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM oauth_clients`).Scan(&n); err != nil || n != len(stored) {
		t.Fatalf("%d clients stored (%v), want the %d admitted", n, err, len(stored))
	}
	for _, id := range stored {
		if c, err := db.Client(context.Background(), id); err != nil || c.ID != id {
			t.Fatalf("client %s after the burst: %v", id, err)
		}
	}
}
