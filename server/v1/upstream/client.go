// Package upstream is the transport the model clients share: one POST of a
// JSON body to a model API, its answer read whole or as server-sent events,
// with every size bounded and every error wrapped once, naming the route.
//
// The protocol clients live below it (server/v1/upstream/openai speaks Chat
// Completions, server/v1/upstream/anthropic Messages,
// server/v1/upstream/responses the Responses API); each translates
// the canonical conversation of package loop into its wire format and
// supplies a Decoder for its stream. This package knows neither format.
//
// Limits: a whole answer is read up to MaxBodyBytes and refused beyond
// (ErrTooLarge); an error answer keeps its first MaxErrorBodyBytes; one
// line of an event stream, and the data of one event, may not pass
// MaxEventBytes (ErrTooLarge). A stream silent for Timeouts.Idle is
// cancelled with ErrIdle; a whole call is bounded by Timeouts.Total.
//
// Errors: a non-2xx answer is a *loop.UpstreamError (server/v1 relays 4xx
// to the caller); transport, read and decode failures are wrapped as
// "upstream ROUTE: ..." with %w, the context's cause included; an error
// returned by the caller's onDelta is returned as it is, unwrapped, so the
// caller recognises its own error.
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// Size limits of what an upstream may send.
const (
	MaxBodyBytes      = 32 << 20
	MaxErrorBodyBytes = 64 << 10
	MaxEventBytes     = 8 << 20
)

var (
	// ErrIdle is the cause when a stream stays silent longer than
	// Timeouts.Idle.
	ErrIdle = errors.New("upstream stream idle timeout")
	// ErrTooLarge is an answer, a stream line or an event over its limit.
	ErrTooLarge = errors.New("upstream answer over the size limit")
)

// Timeouts bound an upstream client.
type Timeouts struct {
	// Header: from sending the request to the response headers.
	Header time.Duration
	// Idle: the longest gap between two stream chunks.
	Idle time.Duration
	// Total: one whole upstream call.
	Total time.Duration
}

// WithDefaults fills the zero fields: 60 s for headers, 120 s idle, 10 min
// in all.
func (t Timeouts) WithDefaults() Timeouts {
	if t.Header <= 0 {
		t.Header = 60 * time.Second
	}
	if t.Idle <= 0 {
		t.Idle = 120 * time.Second
	}
	if t.Total <= 0 {
		t.Total = 10 * time.Minute
	}
	return t
}

// Config configures a Client.
type Config struct {
	// Name is the route name, for errors and logs.
	Name string
	// BaseURL is the API root the paths of Call and Post are appended to.
	BaseURL string
	// Dialect tags the *loop.UpstreamError of a non-2xx answer.
	Dialect loop.Dialect
	// Header is sent with every request (the API key, a version).
	Header   http.Header
	Timeouts Timeouts
	// Transport overrides the HTTP transport (tests).
	Transport http.RoundTripper
	// Propagator writes the call's trace context (traceparent,
	// tracestate) into each request, so the model's side can join the
	// caller's trace; nil sends none.
	Propagator propagation.TextMapPropagator
}

// Client posts to one upstream.
type Client struct {
	name     string
	baseURL  string
	dialect  loop.Dialect
	header   http.Header
	timeouts Timeouts
	http     *http.Client
	prop     propagation.TextMapPropagator
}

// New returns a client; without a Transport it dials with keep-alive and
// waits at most Timeouts.Header for the response headers.
func New(cfg Config) *Client {
	t := cfg.Timeouts.WithDefaults()
	tr := cfg.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: t.Header,
		}
	}
	return &Client{
		name:     cfg.Name,
		baseURL:  strings.TrimRight(cfg.BaseURL, "/"),
		dialect:  cfg.Dialect,
		header:   cfg.Header.Clone(),
		timeouts: t,
		http:     &http.Client{Transport: tr},
		prop:     cfg.Propagator,
	}
}

// Name is the route name.
func (c *Client) Name() string { return c.name }

// Decoder assembles one protocol's stream events into deltas and, at the
// end, the whole response.
type Decoder interface {
	Add(data []byte) ([]loop.Delta, error)
	Finish() (*loop.UpstreamResponse, error)
}

// Exchange is one model call: the body to post and how to read the answer.
type Exchange struct {
	Path string
	Body []byte
	// Stream asks for an event stream, read with Decoder; otherwise the
	// whole answer is read with Decode.
	Stream  bool
	Decode  func([]byte) (*loop.UpstreamResponse, error)
	Decoder Decoder
	// OnDelta receives each delta of a stream; its error ends the call and
	// is returned unwrapped.
	OnDelta func(loop.Delta) error
}

// Call makes one model call within Timeouts.Total.
func (c *Client) Call(ctx context.Context, x Exchange) (*loop.UpstreamResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeouts.Total)
	defer cancel()
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	resp, err := c.post(ctx, x.Path, x.Body, x.Stream)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if !x.Stream {
		b, err := c.readAll(ctx, resp.Body, MaxBodyBytes)
		if err != nil {
			return nil, err
		}
		out, err := x.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w: %w", c.name, loop.ErrBadAnswer, err)
		}
		return out, nil
	}
	return c.readStream(ctx, resp.Body, cancelCause, x.Decoder, x.OnDelta)
}

// Post posts body to path within Timeouts.Total and returns the whole
// answer, of at most limit bytes (for small JSON answers such as a token
// count).
func (c *Client) Post(ctx context.Context, path string, body []byte, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeouts.Total)
	defer cancel()
	resp, err := c.post(ctx, path, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return c.readAll(ctx, resp.Body, limit)
}

func (c *Client) post(ctx context.Context, path string, body []byte, stream bool) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.name, err)
	}
	for k, v := range c.header {
		hr.Header[k] = v
	}
	hr.Header.Set("Content-Type", "application/json")
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	if c.prop != nil {
		c.prop.Inject(ctx, propagation.HeaderCarrier(hr.Header))
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", c.name, causeOr(ctx, err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		// The error answer is what the caller is told; a short read still
		// says something, so its own error is not the story.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBodyBytes))
		return nil, &loop.UpstreamError{Route: c.name, Status: resp.StatusCode, Body: b, Dialect: c.dialect}
	}
	return resp, nil
}

// readAll reads a whole answer, refusing one over limit.
func (c *Client) readAll(ctx context.Context, body io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("upstream %s: read body: %w", c.name, causeOr(ctx, err))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("upstream %s: %w: %w: the answer passes %d bytes", c.name, loop.ErrBadAnswer, ErrTooLarge, limit)
	}
	return b, nil
}

// deltaError carries an error of the caller's onDelta through ReadSSE, so
// it can be told from the stream's and the decoder's own.
type deltaError struct{ err error }

func (e deltaError) Error() string { return e.err.Error() }
func (e deltaError) Unwrap() error { return e.err }

// readStream reads an event stream through dec, passing each delta to
// onDelta. The idle timer cancels the call (cause ErrIdle) when no event
// arrives within Timeouts.Idle.
func (c *Client) readStream(ctx context.Context, body io.Reader, cancelCause context.CancelCauseFunc,
	dec Decoder, onDelta func(loop.Delta) error) (*loop.UpstreamResponse, error) {
	idle := c.timeouts.Idle
	timer := time.AfterFunc(idle, func() { cancelCause(ErrIdle) })
	defer timer.Stop()
	err := ReadSSE(body, func(data []byte) error {
		timer.Reset(idle)
		deltas, err := dec.Add(data)
		if err != nil {
			return fmt.Errorf("%w: %w", loop.ErrBadAnswer, err)
		}
		if onDelta == nil {
			return nil
		}
		for _, d := range deltas {
			if err := onDelta(d); err != nil {
				return deltaError{err}
			}
		}
		return nil
	})
	if err != nil {
		var de deltaError
		if errors.As(err, &de) {
			return nil, de.err
		}
		if errors.Is(err, ErrTooLarge) {
			err = fmt.Errorf("%w: %w", loop.ErrBadAnswer, err)
		}
		return nil, fmt.Errorf("upstream %s: stream: %w", c.name, causeOr(ctx, err))
	}
	out, err := dec.Finish()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w: %w", c.name, loop.ErrBadAnswer, err)
	}
	return out, nil
}

// causeOr adds the context's cause (ErrIdle, a deadline) to err when err
// does not already carry it.
func causeOr(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(err, c) {
		return fmt.Errorf("%w (%w)", c, err)
	}
	return err
}

// Marshal encodes v as JSON without HTML escaping (the upstream reads
// "<" as it was written) and without a trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
