package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// errHostName: the host does not normalise to a valid DNS name.
var errHostName = errors.New("host name does not normalise")

// NormalizeHost returns the name the HTTP transport will really dial, so
// every check sees that name and not a Unicode spelling of it: IP literals
// (in any spelling parseHostAddr reads) in their canonical form, names
// through IDNA (UTS #46, lookup profile: "ＢＬＯＣＫＥＤ.test" and
// "blocked。test" are "blocked.test"), lower case, without a trailing
// dot. A name that fails IDNA is an error.
func NormalizeHost(host string) (string, error) {
	if a, ok := parseHostAddr(host); ok {
		return a.WithZone("").Unmap().String(), nil
	}
	a, err := idna.Lookup.ToASCII(strings.ToLower(host))
	if err != nil {
		return "", fmt.Errorf("%w: %v", errHostName, err)
	}
	a = strings.TrimSuffix(a, ".")
	if a == "" || strings.HasSuffix(a, ".") {
		return "", fmt.Errorf("%w: empty label", errHostName)
	}
	return a, nil
}

// Domains is a set of lower-case domain names without a trailing dot, each
// covering its subdomains.
type Domains map[string]bool

// Match reports whether host (lower case, without a trailing dot) is a
// listed domain or a subdomain of one.
func (d Domains) Match(host string) bool {
	for h := host; h != ""; {
		if d[h] {
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

// blockedName reports names that reach the local machine whatever DNS
// says: localhost and every name under it (RFC 6761 §6.3). They are
// refused by name, before any lookup.
func blockedName(host string) bool {
	if _, ok := parseHostAddr(host); ok {
		return false
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain"
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
