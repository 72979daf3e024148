package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// streamDecoder assembles one upstream protocol's SSE events into deltas
// and, at the end, the whole response.
type streamDecoder interface {
	add(data []byte) ([]Delta, error)
	finish() (*UpstreamResponse, error)
}

// readUpstreamStream reads an upstream's event stream through dec, passing
// each delta to onDelta. The idle timer cancels the call (cause errIdle) when
// no event arrives within idle; an error from onDelta ends the read and is
// returned as it is.
func readUpstreamStream(ctx context.Context, name string, body io.Reader, idle time.Duration,
	cancelCause context.CancelCauseFunc, dec streamDecoder, onDelta func(Delta) error) (*UpstreamResponse, error) {
	timer := time.AfterFunc(idle, func() { cancelCause(errIdle) })
	defer timer.Stop()
	err := readSSE(body, func(data []byte) error {
		timer.Reset(idle)
		deltas, err := dec.add(data)
		if err != nil {
			return err
		}
		if onDelta != nil {
			for _, d := range deltas {
				if err := onDelta(d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		var de deltaError
		if errors.As(err, &de) {
			return nil, de.err
		}
		return nil, fmt.Errorf("upstream %s: stream: %w", name, causeOr(ctx, err))
	}
	out, err := dec.finish()
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", name, err)
	}
	return out, nil
}

// readUpstreamBody reads a whole (non-streaming) upstream answer of at most
// 32 MiB and decodes it.
func readUpstreamBody(ctx context.Context, name string, body io.Reader, decode func([]byte) (*UpstreamResponse, error)) (*UpstreamResponse, error) {
	b, err := io.ReadAll(io.LimitReader(body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("upstream %s: read body: %w", name, causeOr(ctx, err))
	}
	out, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", name, err)
	}
	return out, nil
}
