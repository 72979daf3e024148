package egress

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A refused connection and an unknown name are worded without the address,
// URL or resolver the Go error names.
func TestDescribeHidesAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = http.Get("http://" + addr + "/v1/chat/completions")
	if got := Describe(err); got != "connection refused" {
		t.Errorf("refused: %q (from %v)", got, err)
	}
	dnsErr := &net.DNSError{Err: "no such host", Name: "x.invalid", Server: "10.255.255.53:53", IsNotFound: true}
	if got := Describe(&net.OpError{Op: "dial", Err: dnsErr}); got != "the host name does not resolve" {
		t.Errorf("dns: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://10.1.2.3/", nil)
	_, err = http.DefaultClient.Do(req)
	if got := Describe(err); got != "timed out" {
		t.Errorf("timeout: %q (from %v)", got, err)
	}
	for _, s := range []string{Describe(err), Describe(dnsErr)} {
		if strings.ContainsAny(s, ":/") {
			t.Errorf("%q holds an address", s)
		}
	}
}
