package fetchpage

import (
	"context"
	"net"
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
