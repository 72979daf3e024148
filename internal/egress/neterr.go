package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
)

// Describe returns what went wrong in err, without addresses or URLs:
// "the host name does not resolve", "connection refused", "timed out", ...
func Describe(err error) string {
	var dns *net.DNSError
	var cert x509.CertificateInvalidError
	var host x509.HostnameError
	var unknown x509.UnknownAuthorityError
	var rec tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case err == nil:
		return "no error"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "the host name does not resolve"
	case errors.As(err, &dns) && dns.IsTimeout:
		return "the name lookup timed out"
	case errors.As(err, &dns):
		return "the name lookup failed"
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the peer"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host is unreachable"
	case errors.As(err, &host):
		return "the TLS certificate is not valid for this host"
	case errors.As(err, &unknown):
		return "the TLS certificate is signed by an unknown authority"
	case errors.As(err, &cert):
		return "the TLS certificate is not valid"
	case errors.As(err, &rec), errors.As(err, &alert):
		return "the TLS handshake failed"
	case errors.Is(err, net.ErrClosed), errors.Is(err, errors.ErrUnsupported):
		return "the connection was closed"
	}
	return "the connection failed"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
