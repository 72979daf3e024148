package fetchpage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlockedAddress is returned (wrapped) when a connection would reach an
// address the SSRF policy refuses.
var ErrBlockedAddress = errors.New("address not allowed")

// Resolver turns a host name into addresses. *net.Resolver satisfies it; tests
// inject one that answers private addresses for public-looking names to prove
// the dial-time check (DNS rebinding).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// blockedPrefixes are the ranges no fetch may connect to unless the operator
// allows them. IPv4-mapped, NAT64 and 6to4 addresses are unwrapped before the
// check (see embeddedIPv4), so the IPv4 rows cover those forms too.
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

// policy decides which addresses a fetch may connect to.
type policy struct {
	allowPrefixes []netip.Prefix
	allowHosts    map[string]bool // lower-case names, exact or as a parent domain
}

// newPolicy parses the operator's allow-list: CIDRs ("10.0.0.0/8"), single
// addresses ("127.0.0.1") or host names ("intranet.example", which also
// covers its subdomains).
func newPolicy(allow []string) (*policy, error) {
	p := &policy{allowHosts: map[string]bool{}}
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

// hostAllowed reports whether host (a name) is on the operator's allow-list.
func (p *policy) hostAllowed(host string) bool {
	if len(p.allowHosts) == 0 {
		return false
	}
	return domainMatch(strings.TrimSuffix(strings.ToLower(host), "."), p.allowHosts)
}

// addrAllowed is the verdict for one address.
func (p *policy) addrAllowed(a netip.Addr) bool {
	a = a.WithZone("")
	for _, pfx := range p.allowPrefixes {
		if pfx.Contains(a) || (a.Is4In6() && pfx.Contains(a.Unmap())) {
			return true
		}
	}
	return publicAddr(a)
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

// dialer connects only to allowed addresses. The host name is resolved here,
// every candidate is checked, and the check is repeated in Control on the
// exact address the socket connects to, so a name that resolves differently
// between check and connect (DNS rebinding) cannot slip through.
type dialer struct {
	policy   *policy
	resolver Resolver
	timeout  time.Duration
	// proxyAddr is the configured proxy's host:port, the one destination
	// exempt from the check (targets are then checked by checkProxied).
	proxyAddr string
}

func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	exempt := d.policy.hostAllowed(host) || (d.proxyAddr != "" && strings.EqualFold(address, d.proxyAddr))
	if !exempt && blockedName(host) {
		return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
	}
	var addrs []netip.Addr
	if a, ok := parseHostAddr(host); ok {
		addrs = []netip.Addr{a}
	} else {
		rctx, cancel := context.WithTimeout(ctx, d.timeout)
		addrs, err = d.resolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
	}
	nd := &net.Dialer{
		Timeout: d.timeout,
		Control: func(_, addr string, _ syscall.RawConn) error {
			if exempt {
				return nil
			}
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return fmt.Errorf("connect %s: %w", addr, ErrBlockedAddress)
			}
			if !d.policy.addrAllowed(ap.Addr()) {
				return fmt.Errorf("connect %s: %w", ap.Addr(), ErrBlockedAddress)
			}
			return nil
		},
	}
	var firstErr error
	for _, a := range addrs {
		if !exempt && !d.policy.addrAllowed(a) {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s resolves to %s: %w", host, a, ErrBlockedAddress)
			}
			continue
		}
		c, err := nd.DialContext(ctx, network, net.JoinHostPort(a.Unmap().WithZone("").String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil || errors.Is(firstErr, ErrBlockedAddress) && !errors.Is(err, ErrBlockedAddress) {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%s has no addresses", host)
	}
	return nil, firstErr
}

// parseHostAddr reads host as an IP address in every spelling a resolver or
// browser would accept: standard IPv4/IPv6, bracketed IPv6 with a zone, and
// the legacy inet_aton forms (decimal 2130706433, octal 0177.0.0.1, hex
// 0x7f.1, short 127.1). Numeric tricks therefore reach the same verdict as
// the plain address.
func parseHostAddr(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if i := strings.IndexByte(h, '%'); i >= 0 && strings.Contains(h, ":") {
		h = h[:i]
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a, true
	}
	return parseLegacyIPv4(h)
}

// parseLegacyIPv4 implements inet_aton: 1 to 4 parts, each decimal, octal
// (leading 0) or hex (0x); the last part fills the remaining bytes.
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base := 10
		digits := p
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i := 0; i < last; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		n |= vals[i] << (24 - 8*uint(i))
	}
	if vals[last] >= 1<<(8*uint(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// domainMatch reports whether host equals a listed domain or is a subdomain
// of one.
func domainMatch(host string, domains map[string]bool) bool {
	for h := host; h != ""; {
		if domains[h] {
			return true
		}
		i := strings.IndexByte(h, '.')
		if i < 0 {
			break
		}
		h = h[i+1:]
	}
	return false
}
