package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	cases := []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"64:ff9b::808:808", true}, // NAT64 of a public address
		{"2002:808:808::1", true},  // 6to4 of a public address
		{"::ffff:8.8.8.8", true},   // mapped public
		{"127.0.0.1", false},       // loopback
		{"10.1.2.3", false},        // RFC 1918
		{"172.31.255.255", false},  // RFC 1918
		{"192.168.0.1", false},     // RFC 1918
		{"169.254.169.254", false}, // metadata
		{"100.127.255.254", false}, // CGNAT
		{"0.1.2.3", false},         // this network
		{"192.0.0.8", false},       // IETF
		{"192.0.2.1", false},       // TEST-NET-1
		{"198.51.100.1", false},    // TEST-NET-2
		{"203.0.113.1", false},     // TEST-NET-3
		{"239.255.255.250", false}, // multicast
		{"255.255.255.255", false}, // broadcast
		{"::1", false},             // loopback
		{"::", false},              // unspecified
		{"::ffff:10.0.0.1", false}, // mapped private
		{"::10.0.0.1", false},      // IPv4-compatible
		{"64:ff9b::c0a8:1", false}, // NAT64 of 192.168.0.1
		{"64:ff9b:1::1", false},    // local-use NAT64
		{"2002:a00:1::", false},    // 6to4 of 10.0.0.1
		{"2001:db8::1", false},     // documentation
		{"2001::1", false},         // Teredo
		{"fd12:3456::1", false},    // ULA
		{"fe80::1", false},         // link-local
		{"ff05::2", false},         // multicast
		{"100::1", false},          // discard
	}
	for _, c := range cases {
		if got := publicAddr(netip.MustParseAddr(c.addr)); got != c.public {
			t.Errorf("publicAddr(%s) = %v, want %v", c.addr, got, c.public)
		}
	}
}

func TestParseHostAddrNumericForms(t *testing.T) {
	cases := []struct {
		host string
		want string // "" = not an address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1"},
		{"0177.0.0.01", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"10.0x10.1", "10.16.0.1"},
		{"3232235777", "192.168.1.1"},
		{"[::1]", "::1"},
		{"[fe80::1%lo]", "fe80::1"},
		{"1.2.3.4.", "1.2.3.4"},
		{"256.1.1.1", ""},
		{"1.2.3.4.5", ""},
		{"4294967296", ""},
		{"08.1.1.1", ""}, // 8 is not an octal digit
		{"example.com", ""},
		{"0x", "0.0.0.0"},
		{"", ""},
	}
	for _, c := range cases {
		a, ok := parseHostAddr(c.host)
		got := ""
		if ok {
			got = a.String()
		}
		if got != c.want {
			t.Errorf("parseHostAddr(%q) = %q, want %q", c.host, got, c.want)
		}
	}
}

// Only 2000::/3 is public IPv6.
func TestOnlyGlobalUnicastIPv6IsPublic(t *testing.T) {
	for a, want := range map[string]bool{
		"2606:4700:4700::1111": true,
		"::ffff:0:7f00:1":      false, // IPv4-translated 127.0.0.1 (RFC 2765)
		"::ffff:0:808:808":     false,
		"4000::1":              false,
		"64:ff9b::808:808":     true, // NAT64 of a public IPv4 address
		"64:ff9b::7f00:1":      false,
		"::ffff:8.8.8.8":       true,
	} {
		if got := publicAddr(netip.MustParseAddr(a)); got != want {
			t.Errorf("publicAddr(%s) = %v, want %v", a, got, want)
		}
	}
}

func TestNewPolicyRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "http://x/", "a b"} {
		if _, err := NewPolicy([]string{bad}); err == nil {
			t.Errorf("allow-list entry %q accepted", bad)
		}
	}
	if _, err := NewPolicy([]string{"10.0.0.0/8", "::1", "intranet.example", " ", ""}); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyAllowsAndExempts(t *testing.T) {
	p, err := NewPolicy([]string{"10.0.0.0/8", "::1", "Intranet.Example."})
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{
		"10.1.2.3":        true, // in an allowed range
		"::ffff:10.1.2.3": true, // its mapped form
		"::1":             true, // an allowed address
		"127.0.0.1":       false,
		"192.168.0.1":     false,
		"8.8.8.8":         true, // public
	} {
		if got := p.Allows(netip.MustParseAddr(a)); got != want {
			t.Errorf("Allows(%s) = %v, want %v", a, got, want)
		}
	}
	for host, want := range map[string]bool{
		"intranet.example":      true,
		"INTRANET.example.":     true,
		"wiki.intranet.example": true, // a subdomain
		"evilintranet.example":  false,
		"example":               false,
	} {
		if got := p.Exempts(host); got != want {
			t.Errorf("Exempts(%q) = %v, want %v", host, got, want)
		}
	}
	var zero Policy
	if !zero.Allows(netip.MustParseAddr("8.8.8.8")) || zero.Allows(netip.MustParseAddr("127.0.0.1")) || zero.Exempts("localhost") {
		t.Error("the zero Policy is not public-only")
	}
}

// fakeDNS answers from a table; other names do not resolve.
type fakeDNS map[string][]string

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	as, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(as))
	for i, a := range as {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

func TestPolicyCheck(t *testing.T) {
	p, err := NewPolicy([]string{"intranet.test", "10.9.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	dns := fakeDNS{
		"public.test":   {"93.184.216.34"},
		"rebind.test":   {"127.0.0.1"},
		"mixed.test":    {"93.184.216.34", "10.0.0.5"},
		"intranet.test": {"127.0.0.1"},
		"lan.test":      {"10.9.1.1"},
	}
	tests := []struct {
		host         string
		blocked      bool // by name or by address
		lookupFailed bool
	}{
		{"public.test", false, false},
		{"rebind.test", true, false},
		{"mixed.test", true, false},
		{"intranet.test", false, false}, // exempt by name
		{"lan.test", false, false},      // its address is allowed
		{"localhost", true, false},
		{"a.b.localhost.", true, false},
		{"127.0.0.1", true, false},
		{"2130706433", true, false},
		{"[::ffff:127.0.0.1]", true, false},
		{"10.9.0.1", false, false},
		{"8.8.8.8", false, false},
		{"nowhere.test", false, true},
	}
	for _, tt := range tests {
		err := p.Check(context.Background(), dns, tt.host)
		var dnsErr *net.DNSError
		if errors.Is(err, ErrBlockedAddress) != tt.blocked || errors.As(err, &dnsErr) != tt.lookupFailed {
			t.Errorf("Check(%q) = %v, want blocked %v, lookup failed %v", tt.host, err, tt.blocked, tt.lookupFailed)
		}
		byName := p.CheckName(tt.host)
		if byName != nil && !tt.blocked {
			t.Errorf("CheckName(%q) = %v, but Check lets it through", tt.host, byName)
		}
	}
}

// CheckHost refuses by name and by literal ahead of any connection (a
// name that does not resolve passes: Policy.Check's "nowhere.test").
func TestCheckHost(t *testing.T) {
	for host, blocked := range map[string]bool{
		"localhost":       true,
		"foo.localhost":   true,
		"127.0.0.1":       true,
		"0x7f.1":          true,
		"[fd00:ec2::254]": true,
		"169.254.169.254": true,
		"8.8.8.8":         false,
	} {
		if err := CheckHost(context.Background(), nil, host); errors.Is(err, ErrBlockedAddress) != blocked || (err != nil && !blocked) {
			t.Errorf("CheckHost(%q) = %v, want blocked %v", host, err, blocked)
		}
	}
	if err := CheckHost(context.Background(), []string{"127.0.0.0/8"}, "127.0.0.1"); err != nil {
		t.Errorf("an allowed literal: %v", err)
	}
	if err := CheckHost(context.Background(), []string{"10.0.0.0/33"}, "8.8.8.8"); err == nil || errors.Is(err, ErrBlockedAddress) {
		t.Errorf("a bad allow-list: %v", err)
	}
}
