package sandbox

import (
	"context"
	"fmt"
	"os"
	"time"
)

// runtimeFile is a language runtime being loaded and compiled in the
// background; available reports the outcome to runs.
type runtimeFile struct {
	lang Language
	path string
	done chan struct{}
	err  error
}

func (r *runtimeFile) load(s *Sandbox, compile func(ctx context.Context, wasm []byte) error) {
	r.done = make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(r.done)
		wasm, err := os.ReadFile(r.path)
		if err != nil {
			r.err = s.missingRuntime(r.lang, r.path, err)
			s.log.Warn("sandbox runtime missing", "language", r.lang, "path", r.path, "err", err)
			return
		}
		start := time.Now()
		if err := compile(s.ctx, wasm); err != nil {
			if s.ctx.Err() != nil {
				r.err = ErrClosed // closed while compiling: nothing is broken
				return
			}
			r.err = fmt.Errorf("%w: the %s runtime %s does not compile: %v", ErrUnavailable, r.lang, r.path, err)
			s.log.Error("sandbox runtime broken", "language", r.lang, "path", r.path, "err", err)
			return
		}
		s.log.Info("sandbox runtime ready", "language", r.lang, "compile_ms", time.Since(start).Milliseconds())
	}()
}

func (r *runtimeFile) available(ctx context.Context) error {
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pool keeps up to size pre-started instances. One goroutine refills it, one
// instance at a time, so warming never takes more than one CPU.
type pool[T any] struct {
	size    int
	items   chan T
	kick    chan struct{}
	start   func(ctx context.Context) (T, error)
	discard func(T)
}

func newPool[T any](size int, start func(context.Context) (T, error), discard func(T)) *pool[T] {
	if size < 0 {
		size = 0
	}
	return &pool[T]{size: size, items: make(chan T, size), kick: make(chan struct{}, 1), start: start, discard: discard}
}

// run refills the pool until ctx ends, then discards what is left.
func (p *pool[T]) run(ctx context.Context, s *Sandbox, name string) {
	defer func() {
		for {
			select {
			case it := <-p.items:
				p.discard(it)
			default:
				return
			}
		}
	}()
	if p.size == 0 {
		return
	}
	backoff := 100 * time.Millisecond
	for {
		for len(p.items) < p.size {
			it, err := p.start(ctx)
			if ctx.Err() != nil {
				if err == nil {
					p.discard(it)
				}
				return
			}
			if err != nil {
				s.log.Error("sandbox pool: start failed", "language", name, "err", err)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return
				}
				backoff = min(2*backoff, 10*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			p.items <- it
		}
		select {
		case <-p.kick:
		case <-ctx.Done():
			return
		}
	}
}

// take returns a pre-started instance if one is ready.
func (p *pool[T]) take() (T, bool) {
	var zero T
	select {
	case it := <-p.items:
		select {
		case p.kick <- struct{}{}:
		default:
		}
		return it, true
	default:
		return zero, false
	}
}

// waitFull waits until the pool holds size instances.
func (p *pool[T]) waitFull(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for len(p.items) < p.size {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// state says where the runtime is without waiting: "loading" while it is
// read and compiled, "ready", or "unavailable" with the reason.
func (r *runtimeFile) state() (string, error) {
	select {
	case <-r.done:
		if r.err != nil {
			return "unavailable", r.err
		}
		return "ready", nil
	default:
		return "loading", nil
	}
}

// warm is how many pre-started instances are waiting.
func (p *pool[T]) warm() int { return len(p.items) }
