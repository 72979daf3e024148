package oauth

import (
	"net/http"
	"strings"
	"testing"
)

func TestRedirectKind(t *testing.T) {
	tests := []struct {
		uri, kind string
	}{
		{"https://app.example/cb", "https"},
		{"http://127.0.0.1/cb", "loopback"},
		{"http://127.0.0.1:33418/cb", "loopback"},
		{"http://[::1]:4000/cb", "loopback"},
		{"http://localhost:4000/cb", "loopback"},
		{"com.example.app:/oauth", "private-use"},
		{"http://evil.example/cb", ""},
		{"http://127.0.0.1.evil.example/cb", ""},
		{"https://app.example/cb#frag", ""},
		{"https://user:pw@app.example/cb", ""},
		{"javascript:alert(1)", ""},
		{"data:text/html,hi", ""},
		{"file:///etc/passwd", ""},
		{"myapp:/cb", ""},
		{"/relative", ""},
		{"https:///nohost", ""},
		{"https://app.example/" + strings.Repeat("a", 2100), ""},
	}
	for _, tt := range tests {
		kind, refusal := redirectKind(tt.uri)
		if kind != tt.kind || (tt.kind == "") == (refusal == "") {
			t.Errorf("redirectKind(%.60q) = %q, %q; want %q", tt.uri, kind, refusal, tt.kind)
		}
	}
}

func TestRedirectHostShowsPunycode(t *testing.T) {
	for in, want := range map[string]string{
		"https://аpple.example/cb":    "xn--pple-43d.example", // Cyrillic а
		"http://127.0.0.1:8123/cb":    "127.0.0.1:8123",
		"com.example.app:/oauth":      "com.example.app:",
		"https://app.example:8443/cb": "app.example:8443",
	} {
		if got := redirectHost(in); got != want {
			t.Errorf("redirectHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRedirectKind(f *testing.F) {
	for _, s := range []string{"https://a.example/cb", "http://127.0.0.1:1/x", "com.x.y:/z", "javascript:x", "http://[::1]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kind, refusal := redirectKind(s)
		if (kind == "") == (refusal == "") {
			t.Fatalf("redirectKind(%q) = %q, %q: exactly one must be set", s, kind, refusal)
		}
		if kind != "" && strings.Contains(s, "#") {
			t.Fatalf("accepted a fragment: %q", s)
		}
	})
}

// The registration limit counts an IPv6 host by its /64 (one host can use
// every address in it) and an IPv4-mapped address as the IPv4 one.
func TestRegistrationAddress(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"192.0.2.7:4000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:4000", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:4000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:1", "2001:db8:1:3::/64"},
		{"[fe80::1%eth0]:1", "fe80::/64"},
		{"not an address", "not an address"},
	}
	for _, tt := range tests {
		r := &http.Request{RemoteAddr: tt.remote}
		if got := addressOf(r); got != tt.want {
			t.Errorf("addressOf(%q) = %q, want %q", tt.remote, got, tt.want)
		}
	}
}
