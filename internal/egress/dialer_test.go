package egress

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// canary is the "internal" service SSRF payloads aim at: it counts the
// connections it accepts and tells each on accepted.
type canary struct {
	port     string
	conns    atomic.Int32
	accepted chan struct{}
}

func newCanary(t *testing.T) *canary {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{accepted: make(chan struct{}, 100)}
	_, c.port, _ = net.SplitHostPort(ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			conn.Close()
			c.accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return c
}

// TestDialerRefusesSSRFPayloads: every payload is refused with
// ErrBlockedAddress, and the canary sees no connection.
func TestDialerRefusesSSRFPayloads(t *testing.T) {
	c := newCanary(t)
	d := &Dialer{Policy: &Policy{}, Timeout: time.Second, Resolver: fakeDNS{
		"localhost":                {"127.0.0.1", "::1"},
		"rebind.test":              {"127.0.0.1"},
		"private-v6.test":          {"::1"},
		"mixed.test":               {"10.0.0.5", "127.0.0.1"},
		"mapped.test":              {"::ffff:127.0.0.1"},
		"metadata.google.internal": {"169.254.169.254"},
		"nat64.test":               {"64:ff9b::7f00:1"},
		"zero.test":                {"0.0.0.0"},
	}}
	for _, host := range []string{
		"127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.0.0.1.", "0.0.0.0", "0",
		"::1", "::", "::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::127.0.0.1", "2002:7f00:1::", "fe80::1%lo",
		"169.254.169.254", "10.0.0.1", "192.168.1.1", "100.64.0.1", "224.0.0.1", "255.255.255.255", "fc00::1",
		"localhost", "LOCALHOST.", "foo.localhost", "rebind.test", "private-v6.test", "mixed.test", "mapped.test",
		"metadata.google.internal", "nat64.test", "zero.test",
	} {
		conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(host, c.port))
		if err == nil {
			conn.Close()
		}
		if !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s: %v, want ErrBlockedAddress", host, err)
		}
	}
	if n := c.conns.Load(); n != 0 {
		t.Fatalf("the canary received %d connections", n)
	}
}

// TestDialerReachesWhatThePolicyAllows proves the canary would notice a
// connection, and that the allow-list, by range or by name, and the
// proxy's exemption open the way.
func TestDialerReachesWhatThePolicyAllows(t *testing.T) {
	c := newCanary(t)
	byRange, err := NewPolicy([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	byName, err := NewPolicy([]string{"intranet.test"})
	if err != nil {
		t.Fatal(err)
	}
	dns := fakeDNS{"intranet.test": {"127.0.0.1"}, "proxy.test": {"127.0.0.1"}}
	tests := []struct {
		name string
		d    *Dialer
		host string
	}{
		{"an allowed range, in a numeric spelling", &Dialer{Policy: byRange, Resolver: dns}, "2130706433"},
		{"an allowed name", &Dialer{Policy: byName, Resolver: dns}, "intranet.test"},
		{"a subdomain of an allowed name", &Dialer{Policy: byName, Resolver: fakeDNS{"wiki.intranet.test": {"127.0.0.1"}}}, "wiki.intranet.test"},
		{"the proxy", &Dialer{Resolver: dns, Proxy: "proxy.test:" + c.port}, "proxy.test"},
	}
	for _, tt := range tests {
		conn, err := tt.d.DialContext(context.Background(), "tcp", net.JoinHostPort(tt.host, c.port))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		conn.Close()
		<-c.accepted
	}
	// The proxy's exemption is for its exact host:port, not its host.
	d := &Dialer{Resolver: dns, Proxy: "proxy.test:1"}
	if _, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("proxy.test", c.port)); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("the proxy's host on another port: %v", err)
	}
}
