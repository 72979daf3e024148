package mcpremote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxAuthResponseBytes caps one response toolhost reads from an
// authorization server or from a server's OAuth metadata: protected
// resource metadata, authorization server metadata, a client
// registration, a token. Real ones are a few KiB.
const MaxAuthResponseBytes = 256 << 10

// Errors of an authorization server (or metadata endpoint) that answers
// with more than toolhost reads, or not in time. Nothing is stored when
// either happens.
var (
	ErrAuthResponseTooLarge = fmt.Errorf("the authorization server (or the MCP server's OAuth metadata) answered with more than %d KiB", MaxAuthResponseBytes>>10)
	ErrAuthServerTimeout    = errors.New("the authorization server (or the MCP server's OAuth metadata) did not answer in time")
)

// authGuard is the transport of every request toolhost makes to an
// authorization server, itself or through the go-sdk and x/oauth2: each
// response is read whole within timeout and at most MaxAuthResponseBytes
// (the libraries' own limits are 1 MiB cut silently, and the SDK's
// discovery client drops the http.Client's Timeout). The body is buffered
// in RoundTrip, so the error reaches the caller through http.Client.Do
// with its chain (x/oauth2 flattens body read errors to text).
//
// sticky (one authorization flow) makes the first violation final: every
// later request fails with it, so the SDK cannot fall back from refused
// metadata to guessed endpoints and hand the user a URL anyway.
type authGuard struct {
	base    http.RoundTripper
	timeout time.Duration
	sticky  bool
	// resource, when set, is added to refresh requests.
	resource string

	mu  sync.Mutex
	err error
}

func newAuthClient(base http.RoundTripper, timeout time.Duration, sticky bool) (*http.Client, *authGuard) {
	g := &authGuard{base: base, timeout: timeout, sticky: sticky}
	return &http.Client{Transport: g}, g
}

// failure is the first violation of a sticky guard.
func (a *authGuard) failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *authGuard) fail(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sticky && a.err == nil {
		a.err = err
	}
	return err
}

func (a *authGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := a.failure(); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req, err := withResource(req, a.resource)
	if err != nil {
		return nil, err
	}
	parent := req.Context()
	ctx, cancel := context.WithTimeout(parent, a.timeout)
	defer cancel()
	slow := func(err error) error {
		if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return a.fail(fmt.Errorf("%w (%s, %s)", ErrAuthServerTimeout, req.URL.Redacted(), a.timeout))
		}
		return err
	}
	resp, err := a.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, slow(err)
	}
	defer resp.Body.Close()
	tooLarge := func() error {
		return a.fail(fmt.Errorf("%w (%s)", ErrAuthResponseTooLarge, req.URL.Redacted()))
	}
	if resp.ContentLength > MaxAuthResponseBytes {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAuthResponseBytes+1))
	if err != nil {
		return nil, slow(err)
	}
	if len(body) > MaxAuthResponseBytes {
		return nil, tooLarge()
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp, nil
}

// authFailure is the guard's violation in err's chain, else err itself:
// the libraries keep the chain of some failures and not of others.
func authFailure(g *authGuard, err error) error {
	if g == nil || err == nil {
		return err
	}
	if f := g.failure(); f != nil && !errors.Is(err, f) {
		return fmt.Errorf("%w (then: %v)", f, err)
	}
	return err
}

// Codes of ErrAuthResponseTooLarge and ErrAuthServerTimeout, in tool
// errors and in the REST answers of an authorization.
const (
	CodeAuthResponseTooLarge = "auth_server_response_too_large"
	CodeAuthServerTimeout    = "auth_server_timeout"
)

// AuthFailure is the code and the sentinel of an authorization server's
// answer toolhost refused (too large, too slow, a token for another
// resource), "" and nil for any other error. The SDK words transport
// errors with %v, so the sentinel's text counts too.
func AuthFailure(err error) (code string, cause error) {
	if err == nil {
		return "", nil
	}
	for _, c := range []struct {
		err  error
		code string
	}{
		{ErrAuthResponseTooLarge, CodeAuthResponseTooLarge},
		{ErrAuthServerTimeout, CodeAuthServerTimeout},
		{ErrTokenForAnotherResource, CodeTokenForAnotherResource},
	} {
		if errors.Is(err, c.err) || strings.Contains(err.Error(), c.err.Error()) {
			return c.code, c.err
		}
	}
	return "", nil
}

// AuthFailureCode is AuthFailure's code.
func AuthFailureCode(err error) string {
	code, _ := AuthFailure(err)
	return code
}
