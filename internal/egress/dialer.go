package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Dialer connects only where its Policy allows. The host name is resolved
// here, every candidate is checked, and the check is repeated in Control on
// the exact address the socket connects to, so a name that resolves
// differently between check and connect (DNS rebinding) cannot slip
// through.
type Dialer struct {
	Policy *Policy
	// Resolver resolves host names; nil means the system's.
	Resolver Resolver
	// Timeout bounds the lookup and the connect each; 0 means 10 s.
	Timeout time.Duration
	// Proxy is the host:port of the proxy the operator chose, the one
	// destination exempt from the check (the targets behind it are then
	// the caller's to check, with Policy.Check).
	Proxy string
}

// DialContext connects to address (host:port) on network, refusing with an
// error wrapping ErrBlockedAddress what the policy does not allow.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	pol, timeout := d.Policy, d.Timeout
	if pol == nil {
		pol = &Policy{}
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	exempt := pol.Exempts(host) || (d.Proxy != "" && strings.EqualFold(address, d.Proxy))
	if !exempt && blockedName(host) {
		return nil, fmt.Errorf("%s: %w", host, ErrBlockedAddress)
	}
	addrs, err := d.resolve(ctx, host, timeout)
	if err != nil {
		return nil, err
	}
	nd := &net.Dialer{
		Timeout: timeout,
		Control: func(_, addr string, _ syscall.RawConn) error {
			if exempt {
				return nil
			}
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return fmt.Errorf("connect %s: %w", addr, ErrBlockedAddress)
			}
			if !pol.Allows(ap.Addr()) {
				return fmt.Errorf("connect %s: %w", ap.Addr(), ErrBlockedAddress)
			}
			return nil
		},
	}
	var firstErr error
	for _, a := range addrs {
		if !exempt && !pol.Allows(a) {
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

// resolve returns the addresses to try for host: itself when it is an
// address literal, else what the resolver answers within timeout.
func (d *Dialer) resolve(ctx context.Context, host string, timeout time.Duration) ([]netip.Addr, error) {
	if a, ok := parseHostAddr(host); ok {
		return []netip.Addr{a}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := r.LookupNetIP(rctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	return addrs, nil
}

// DialContext returns a dial function under the SSRF policy of allow
// (fetch.allow_private): only public addresses, checked on the exact
// address each socket connects to, unless allow exempts them. Clients
// toolhost runs toward addresses a caller chose (fetch_page, remote MCP
// servers) dial through it, so one policy governs every outbound request.
func DialContext(allow []string, timeout time.Duration) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	pol, err := NewPolicy(allow)
	if err != nil {
		return nil, err
	}
	d := &Dialer{Policy: pol, Timeout: timeout}
	return d.DialContext, nil
}

// CheckHost tells ahead of any connection whether the policy of allow
// refuses host (an error wrapping ErrBlockedAddress): a name like
// localhost, or an address or a resolved address that is not public and
// not allowed. A name that does not resolve now is not refused here; the
// dialer checks again at every connection.
func CheckHost(ctx context.Context, allow []string, host string) error {
	pol, err := NewPolicy(allow)
	if err != nil {
		return err
	}
	if err := pol.Check(ctx, nil, host); errors.Is(err, ErrBlockedAddress) {
		return err
	}
	return nil
}
