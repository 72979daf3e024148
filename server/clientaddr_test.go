package server

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// X-Forwarded-For names the client only when the peer is a trusted proxy,
// and then only as far back as the proxies are trusted: a client cannot
// choose the address its limits count on.
func TestClientAddrBelievesTrustedProxiesOnly(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "127.0.0.1", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy", "203.0.113.7:5000", nil, "203.0.113.7"},
		{"an untrusted peer's header is ignored", "203.0.113.7:5000", []string{"1.2.3.4"}, "203.0.113.7"},
		{"a trusted proxy names the client", "127.0.0.1:5000", []string{"1.2.3.4"}, "1.2.3.4"},
		{"through two trusted proxies", "10.0.0.1:5000", []string{"1.2.3.4, 10.0.0.2"}, "1.2.3.4"},
		{"a spoofed start is not believed", "10.0.0.1:5000", []string{"6.6.6.6, 1.2.3.4"}, "1.2.3.4"},
		{"several headers are one list", "10.0.0.1:5000", []string{"6.6.6.6", "1.2.3.4"}, "1.2.3.4"},
		{"garbage ends the walk at the last trusted hop", "10.0.0.1:5000", []string{"1.2.3.4, not-an-ip"}, "10.0.0.1"},
		{"garbage before the client is never reached", "10.0.0.1:5000", []string{"<script>, 1.2.3.4"}, "1.2.3.4"},
		{"a mapped IPv4 address is IPv4", "127.0.0.1:5000", []string{"::ffff:1.2.3.4"}, "1.2.3.4"},
		{"IPv6 through a trusted IPv6 proxy", "[fd00::1]:5000", []string{"2001:db8::7"}, "2001:db8::7"},
		{"a zone is dropped", "127.0.0.1:5000", []string{"fe80::1%eth0"}, "fe80::1"},
		{"only trusted hops: the first of them", "10.0.0.1:5000", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"a huge header walks 32 hops at most", "10.0.0.1:5000", []string{"1.2.3.4, " + strings.Repeat("10.0.0.9, ", 5000) + "10.0.0.2"}, "10.0.0.9"},
		{"unicode digits are no address", "127.0.0.1:5000", []string{"１.２.３.４"}, "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.peer
			for _, h := range c.xff {
				r.Header.Add("X-Forwarded-For", h)
			}
			var got string
			withClientAddr(trusted, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = ClientAddr(r).String() })).
				ServeHTTP(httptest.NewRecorder(), r)
			if got != c.want {
				t.Fatalf("client = %s, want %s", got, c.want)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "", strings.Repeat("1", 100)} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil || len(err.Error()) > 200 {
			t.Errorf("%.20q: %v", bad, err)
		}
	}
}

// A trusted proxy carries many clients over its connections: the
// per-address cap does not apply to it, and still applies to anyone else.
func TestTrustedProxiesAreNotCappedPerAddress(t *testing.T) {
	trusted, _ := ParseTrustedProxies([]string{"127.0.9.1"})
	addr := serveForTest(t, Limits{MaxConnsPerIP: 2, TrustedProxies: trusted}, nil)
	open := func(src string) int {
		c, err := dialFrom(src, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 5 {
		if code := open("127.0.9.1"); code != 200 {
			t.Fatalf("the proxy's connection %d: %d", i, code)
		}
	}
	codes := []int{open("127.0.9.2"), open("127.0.9.2"), open("127.0.9.2")}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != http.StatusServiceUnavailable {
		t.Fatalf("another address's three connections: %v, want the third refused", codes)
	}
}
