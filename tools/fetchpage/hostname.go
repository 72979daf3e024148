package fetchpage

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// errHostName: the host does not normalise to a valid DNS name.
var errHostName = errors.New("host name does not normalise")

// normalizeHost returns the name the HTTP transport will really dial, so
// every check sees that name and not a Unicode spelling of it: IP literals
// in their canonical form, names through IDNA (UTS #46, lookup profile:
// "ＢＬＯＣＫＥＤ.test" and "blocked。test" are "blocked.test"), lower
// case, without a trailing dot. A name that fails IDNA is refused.
func normalizeHost(host string) (string, error) {
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

// blockedName reports names that reach the local machine whatever DNS
// says: localhost and every name under it (RFC 6761 §6.3). They are
// refused by name, before any lookup (robots.txt included).
func blockedName(host string) bool {
	if _, ok := parseHostAddr(host); ok {
		return false
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain"
}

// publicIPv6 is the only IPv6 space treated as public: global unicast
// 2000::/3. Everything else (IPv4-translated ::ffff:0:a.b.c.d of RFC 2765,
// the deprecated and reserved forms) is refused, whatever it embeds.
var publicIPv6 = netip.MustParsePrefix("2000::/3")
