package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxies are the load balancers and reverse proxies whose
// X-Forwarded-For toolhost believes (server.trusted_proxies): a request
// that arrives from one of them is counted against the address it says
// the client has; from anyone else the header is ignored, so a client
// cannot pick the address its limits are counted on.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies reads addresses ("10.0.0.5") and ranges
// ("10.0.0.0/8", "fd00::/8").
func ParseTrustedProxies(list []string) (TrustedProxies, error) {
	out := make(TrustedProxies, 0, len(list))
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("trusted proxy %q: want an IP address or a CIDR range", clipText(s))
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func clipText(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}

func (t TrustedProxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientOf is the client's address: the connection's peer, or, when the
// peer is a trusted proxy, the nearest address of X-Forwarded-For that is
// not one (read from the right: the proxies each append the address they
// saw). An entry that is no address ends the walk at the hop before it.
func (t TrustedProxies) clientOf(r *http.Request) netip.Addr {
	peer := remoteAddr(r.RemoteAddr)
	if !peer.IsValid() || !t.trusts(peer) {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0 && i >= len(hops)-32; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = a.Unmap().WithZone("")
		if !t.trusts(client) {
			break
		}
	}
	return client
}

func remoteAddr(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}

type clientAddrKey struct{}

// withClientAddr stores each request's client address (ClientAddr).
func withClientAddr(t TrustedProxies, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientAddrKey{}, t.clientOf(r))))
	})
}

// ClientAddr is the address of the client that sent r: its peer, or what a
// trusted proxy says (TrustedProxies). Outside the server's chain, the peer.
func ClientAddr(r *http.Request) netip.Addr {
	if a, ok := r.Context().Value(clientAddrKey{}).(netip.Addr); ok {
		return a
	}
	return remoteAddr(r.RemoteAddr)
}
