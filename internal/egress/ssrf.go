package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrBlockedAddress is returned (wrapped) when a connection would reach an
// address the SSRF policy refuses.
var ErrBlockedAddress = errors.New("address not allowed")

// Resolver turns a host name into addresses. *net.Resolver satisfies it;
// tests inject one that answers private addresses for public-looking names
// to prove the dial-time check (DNS rebinding).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// blockedPrefixes are the ranges no connection may reach unless the
// operator allows them. IPv4-mapped, NAT64 and 6to4 addresses are
// unwrapped before the check (see embeddedIPv4), so the IPv4 rows cover
// those forms too.
var blockedPrefixes = mustPrefixes(
	// IPv4
	"0.0.0.0/8",       // "this network"; 0.0.0.0 reaches the local host on Linux
	"10.0.0.0/8",      // RFC 1918
	"100.64.0.0/10",   // CGNAT (RFC 6598)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata (169.254.169.254)
	"172.16.0.0/12",   // RFC 1918
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // TEST-NET-1
	"192.88.99.0/24",  // 6to4 relay anycast
	"192.168.0.0/16",  // RFC 1918
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, includes 255.255.255.255 broadcast
	// IPv6
	"::/96",          // unspecified, loopback and IPv4-compatible (deprecated) forms
	"64:ff9b:1::/48", // local-use NAT64 (RFC 8215)
	"100::/64",       // discard-only
	"2001::/23",      // IETF protocol assignments (Teredo, ORCHID, ...)
	"2001:db8::/32",  // documentation
	"fc00::/7",       // unique local
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local (deprecated)
	"ff00::/8",       // multicast
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	// publicIPv6 is the only IPv6 space treated as public: global unicast
	// 2000::/3. Everything else (IPv4-translated ::ffff:0:a.b.c.d of RFC
	// 2765, the deprecated and reserved forms) is refused, whatever it
	// embeds.
	publicIPv6 = netip.MustParsePrefix("2000::/3")
)

// embeddedIPv4 returns the IPv4 address an IPv6 address stands for when the
// network would deliver it to that IPv4 host: IPv4-mapped (::ffff:a.b.c.d),
// NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::).
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4In6() {
		return a.Unmap(), true
	}
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64Prefix.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// publicAddr reports whether a is an address on the public internet.
func publicAddr(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.WithZone("")
	if v4, ok := embeddedIPv4(a); ok {
		if a.Is6() && !a.Is4In6() {
			// NAT64 / 6to4 of a public IPv4 address is public; of a private one
			// it reaches the private host through the translator.
			return publicAddr(v4)
		}
		a = v4
	}
	for _, pfx := range blockedPrefixes {
		if pfx.Contains(a) {
			return false
		}
	}
	if a.Is6() && !publicIPv6.Contains(a) {
		return false
	}
	return a.IsGlobalUnicast()
}

// Policy decides which hosts and addresses a connection may reach: public
// addresses, and what the operator's allow-list names. The zero value
// allows public addresses only.
type Policy struct {
	allowPrefixes []netip.Prefix
	allowHosts    Domains // lower-case names, exact or as a parent domain
}

// NewPolicy parses the operator's allow-list (fetch.allow_private): CIDRs
// ("10.0.0.0/8"), single addresses ("127.0.0.1") or host names
// ("intranet.example", which also covers its subdomains).
func NewPolicy(allow []string) (*Policy, error) {
	p := &Policy{allowHosts: Domains{}}
	for _, s := range allow {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(s); err == nil {
			p.allowPrefixes = append(p.allowPrefixes, pfx.Masked())
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil {
			p.allowPrefixes = append(p.allowPrefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if strings.ContainsAny(s, "/:[] ") {
			return nil, fmt.Errorf("fetch.allow_private: %q is neither a CIDR, an address nor a host name", s)
		}
		p.allowHosts[strings.TrimSuffix(strings.ToLower(s), ".")] = true
	}
	return p, nil
}

// Exempts reports whether host (a name) is on the allow-list, itself or
// under a listed domain: it is reached whatever it resolves to.
func (p *Policy) Exempts(host string) bool {
	if len(p.allowHosts) == 0 {
		return false
	}
	return p.allowHosts.Match(strings.TrimSuffix(strings.ToLower(host), "."))
}

// Allows reports whether a connection may reach a: a public address, or
// one in an allowed range.
func (p *Policy) Allows(a netip.Addr) bool {
	a = a.WithZone("")
	for _, pfx := range p.allowPrefixes {
		if pfx.Contains(a) || (a.Is4In6() && pfx.Contains(a.Unmap())) {
			return true
		}
	}
	return publicAddr(a)
}

// CheckName refuses, before any lookup, what the host's spelling alone
// condemns (an error wrapping ErrBlockedAddress): a name that reaches this
// machine whatever DNS says (localhost), or an address literal, in any
// spelling, that the policy does not allow. An exempt host passes.
func (p *Policy) CheckName(host string) error {
	if p.Exempts(host) {
		return nil
	}
	if blockedName(host) {
		return fmt.Errorf("%s: %w", host, ErrBlockedAddress)
	}
	if a, ok := parseHostAddr(host); ok && !p.Allows(a) {
		return fmt.Errorf("%s: %w", host, ErrBlockedAddress)
	}
	return nil
}

// Check refuses host when a connection to it would be refused: by its
// spelling (CheckName), or because an address it resolves to through r
// (nil: the system's) is not allowed. An exempt host passes. A failed
// lookup is returned wrapped, and is not ErrBlockedAddress.
func (p *Policy) Check(ctx context.Context, r Resolver, host string) error {
	if err := p.CheckName(host); err != nil || p.Exempts(host) {
		return err
	}
	if _, ok := parseHostAddr(host); ok {
		return nil // CheckName judged the literal
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range addrs {
		if !p.Allows(a) {
			return fmt.Errorf("%s resolves to %s: %w", host, a, ErrBlockedAddress)
		}
	}
	return nil
}
