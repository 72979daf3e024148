package fetchpage

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// DialContext returns a dial function under fetch_page's SSRF policy:
// only public addresses, checked on the exact address each socket
// connects to, unless allow (fetch.allow_private) exempts them. Other
// clients toolhost runs toward addresses a caller chose (remote MCP
// servers) dial through it so one policy governs every outbound request.
func DialContext(allow []string, timeout time.Duration) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	pol, err := newPolicy(allow)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := &dialer{policy: pol, resolver: net.DefaultResolver, timeout: timeout}
	return d.DialContext, nil
}

// CheckHost tells ahead of any connection whether the policy refuses
// host (an error wrapping ErrBlockedAddress): a name like localhost, or an
// address or a resolved address that is not public and not allowed. A
// name that does not resolve now is not refused here; the dialer checks
// again at every connection.
func CheckHost(ctx context.Context, allow []string, host string) error {
	pol, err := newPolicy(allow)
	if err != nil {
		return err
	}
	if pol.hostAllowed(host) {
		return nil
	}
	if blockedName(host) {
		return fmt.Errorf("%s: %w", host, ErrBlockedAddress)
	}
	addrs := []netip.Addr{}
	if a, ok := parseHostAddr(host); ok {
		addrs = append(addrs, a)
	} else if rs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host); err == nil {
		addrs = rs
	}
	for _, a := range addrs {
		if !pol.addrAllowed(a) {
			return fmt.Errorf("%s resolves to %s: %w", host, a, ErrBlockedAddress)
		}
	}
	return nil
}
