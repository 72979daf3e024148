package sandbox

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// warmEngine is what the engines of both languages share: their runtime
// file and their pool of warm instances.
type warmEngine[T any] struct {
	file runtimeFile
	pool *pool[T]
}

// available waits for the runtime file to be loaded and compiled.
func (e *warmEngine[T]) available(ctx context.Context, progress func(string)) error {
	return e.file.available(ctx, progress)
}

// waitReady waits for the runtime file and then for a full pool.
func (e *warmEngine[T]) waitReady(ctx context.Context) error {
	if err := e.file.available(ctx, func(string) {}); err != nil {
		return err
	}
	return e.pool.waitFull(ctx)
}

// startPool keeps the pool filled, in a goroutine the sandbox waits for,
// once the runtime is compiled.
func (e *warmEngine[T]) startPool(s *Sandbox) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		e.pool.run(s.ctx, s, s.poolBudgetKiB())
	}()
}

// runtimeFile is a language runtime, loaded and compiled in the background
// on first need (a run, Ready, or Preload), never before: a process that
// runs no code pays nothing for it. available reports the outcome to runs.
type runtimeFile struct {
	lang    Language
	path    string
	s       *Sandbox
	compile func(ctx context.Context, wasm []byte) error
	once    sync.Once
	started atomic.Bool
	done    chan struct{}
	err     error
}

func (r *runtimeFile) load(s *Sandbox, compile func(ctx context.Context, wasm []byte) error) {
	r.s, r.compile, r.done = s, compile, make(chan struct{})
}

// ensure starts loading the runtime if nothing has yet.
func (r *runtimeFile) ensure() {
	r.once.Do(func() {
		s := r.s
		r.started.Store(true)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(r.done)
			if s.ctx.Err() != nil {
				r.err = ErrClosed
				return
			}
			wasm, err := os.ReadFile(r.path)
			if err != nil {
				r.err = s.missingRuntime(r.lang, r.path, err)
				s.log.Warn("sandbox runtime missing", "language", r.lang, "path", r.path, "err", err)
				return
			}
			start := time.Now()
			if err := r.compile(s.ctx, wasm); err != nil {
				if s.ctx.Err() != nil {
					r.err = ErrClosed // closed while compiling: nothing is broken
					return
				}
				r.err = fmt.Errorf("%w: the %s runtime %s does not compile: %v", ErrUnavailable, r.lang, r.path, err)
				s.log.Error("sandbox runtime broken", "language", r.lang, "path", r.path, "err", err)
				return
			}
			s.log.Info("sandbox runtime ready", "language", r.lang, "load_ms", time.Since(start).Milliseconds())
		}()
	})
}

// available loads the runtime if needed and waits for it; progress hears
// about the wait twice a second (compiling CPython without the disk cache
// takes seconds, and a client should hear at least every second, jitter
// included).
func (r *runtimeFile) available(ctx context.Context, progress func(string)) error {
	r.ensure()
	select {
	case <-r.done:
		return r.err
	default:
	}
	msg := fmt.Sprintf("loading the %s runtime (the first start after an upgrade compiles it, which takes seconds)", r.lang)
	progress(msg)
	start := time.Now()
	tick := time.NewTicker(progressEvery / 2)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			return r.err
		case <-ctx.Done():
			return &LoadingError{Language: r.lang, Waited: time.Since(start), Err: ctx.Err()}
		case <-tick.C:
			progress(msg)
		}
	}
}

// LoadingError is a run's context ending while its language's runtime was
// still being read and compiled: the run never waited for a slot, and the
// load goes on for the runs after it (unless the sandbox closes). Err is
// the context's error (errors.Is(err, context.DeadlineExceeded) holds).
type LoadingError struct {
	Language Language
	Waited   time.Duration // how long the run waited for the load
	Err      error
}

func (e *LoadingError) Error() string {
	return fmt.Sprintf("sandbox: the %s runtime was still loading after %s: %v", e.Language, e.Waited.Round(time.Millisecond), e.Err)
}

func (e *LoadingError) Unwrap() error { return e.Err }

// pool keeps pre-started instances ready. How many it keeps follows demand
// and is bounded by memory:
//
//   - limit: how many the pool may hold at all, the language's share of
//     Config.PoolMemoryMiB divided by what one waiting instance was measured
//     to cost (calibrate), and never more than Config's per-language count
//     when one is set;
//   - target: how many it tries to hold now, enough for pooledWindow of the
//     current demand (an exponentially decaying rate of takes, so a burst
//     raises it at once and it settles over rateTau), and never fewer than
//     minWarm, the number of run slots, so a burst of every slot at once
//     finds instances waiting.
//
// One goroutine refills it, one instance at a time, so warming never takes
// more than one CPU; it starts the next instance as soon as the pool is
// below target, ahead of the runs that will take them. When demand falls,
// instances above the target are let go.
type pool[T any] struct {
	name    string
	cap     int // configured most (0: memory decides); <0 off
	minWarm int
	items   chan T
	kick    chan struct{}
	start   func(ctx context.Context) (T, error)
	discard func(T)
	// refillDelay: how long a take's refill waits for its run to end.
	refillDelay time.Duration
	// now is the clock the demand rate is measured on.
	now func() time.Time

	limit       atomic.Int64 // most instances by memory and config
	instanceKiB atomic.Int64 // measured memory of one waiting instance
	misses      atomic.Int64 // takes that found the pool empty
	takes       atomic.Int64
	started     atomic.Int64 // instances the pool started

	mu       sync.Mutex
	rate     float64 // takes per second, decayed
	rateAt   time.Time
	startDur time.Duration // how long the last start took
}

const (
	poolHardMax  = 256                    // no pool holds more, whatever the memory
	pooledWindow = 250 * time.Millisecond // the pool covers this much demand
	rateTau      = 2 * time.Second        // demand estimate's memory
)

func newPool[T any](name string, count, minWarm int, start func(context.Context) (T, error), discard func(T)) *pool[T] {
	size := poolHardMax
	if count > 0 {
		size = min(count, poolHardMax)
	}
	if count < 0 {
		size = 0
	}
	return &pool[T]{name: name, cap: count, minWarm: max(1, minWarm), items: make(chan T, size),
		kick: make(chan struct{}, 1), start: start, discard: discard, refillDelay: refillDelay, now: time.Now}
}

// size is the largest number of instances the pool may hold, 0 when off.
func (p *pool[T]) size() int { return int(p.limit.Load()) }

// demand is the decayed take rate, per second.
func (p *pool[T]) demand(now time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.decayed(now)
}

func (p *pool[T]) decayed(now time.Time) float64 {
	if p.rateAt.IsZero() {
		return 0
	}
	return p.rate * math.Exp(-now.Sub(p.rateAt).Seconds()/rateTau.Seconds())
}

// target is how many instances the pool tries to hold now.
func (p *pool[T]) target() int {
	limit := p.size()
	if limit == 0 {
		return 0
	}
	want := int(math.Ceil(p.demand(p.now()) * pooledWindow.Seconds()))
	return min(max(want, p.minWarm), limit)
}

// calibrate measures what one waiting instance costs in memory and sets the
// pool's limit from the budget. Calibrations of the two languages do not
// overlap, so neither counts the other's instances.
func (p *pool[T]) calibrate(ctx context.Context, s *Sandbox, budgetKiB int64) {
	if p.cap < 0 {
		return
	}
	calibrating.Lock()
	const n = 4
	var made []T
	before, ok := residentKiB()
	for range n {
		it, err := p.start(ctx)
		if err != nil {
			break
		}
		made = append(made, it)
	}
	after, ok2 := residentKiB()
	calibrating.Unlock()
	per := int64(defaultInstanceKiB)
	if ok && ok2 && len(made) > 0 {
		per = max((after-before)/int64(len(made)), 64)
	}
	p.instanceKiB.Store(per)
	limit := int(min(int64(poolHardMax), budgetKiB/per))
	if p.cap > 0 {
		limit = min(limit, p.cap)
	}
	limit = max(limit, 1)
	p.limit.Store(int64(limit))
	s.log.Info("sandbox pool sized", "language", p.name, "instance_kib", per, "most", limit)
	for _, it := range made { // the first waiting instances
		select {
		case p.items <- it:
		default:
			p.discard(it)
		}
	}
}

var calibrating sync.Mutex

// defaultInstanceKiB is assumed where resident memory cannot be read.
const defaultInstanceKiB = 2048

// run refills the pool until ctx ends, then discards what is left.
func (p *pool[T]) run(ctx context.Context, s *Sandbox, budgetKiB int64) {
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
	p.calibrate(ctx, s, budgetKiB)
	if p.size() == 0 {
		return
	}
	backoff := 100 * time.Millisecond
	tick := time.NewTicker(pooledWindow)
	defer tick.Stop()
	for {
		for len(p.items) < p.target() {
			t0 := time.Now()
			it, err := p.start(ctx)
			if ctx.Err() != nil {
				if err == nil {
					p.discard(it)
				}
				return
			}
			if err != nil {
				s.log.Error("sandbox pool: start failed", "language", p.name, "err", err)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
					return
				}
				backoff = min(2*backoff, 10*time.Second)
				continue
			}
			p.started.Add(1)
			p.mu.Lock()
			p.startDur = time.Since(t0)
			p.mu.Unlock()
			backoff = 100 * time.Millisecond
			select {
			case p.items <- it:
			default:
				p.discard(it)
			}
		}
		// The tick only matters while the pool holds more than its floor:
		// then falling demand may let one go. At the floor it waits for a
		// kick alone, so an idle server is not woken four times a second
		// (a nil channel is never ready; an unread ticker does not fire).
		var shrink <-chan time.Time
		if len(p.items) > p.minWarm {
			shrink = tick.C
		}
		select {
		case <-p.kick:
		case <-shrink:
			// Demand fell: let one instance above the target go per tick.
			if len(p.items) > p.target() {
				select {
				case it := <-p.items:
					p.discard(it)
				default:
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// take returns a pre-started instance if one is ready, and counts the
// demand either way. The refill it calls for starts when the caller calls
// refill (its run ended) or after p.refillDelay, whichever comes first:
// starting an instance takes a core for a millisecond or more, which on
// two cores slowed the very run that had taken one, while a run that lasts
// still gets its replacement started beside it.
func (p *pool[T]) take() (it T, warm bool, refill func()) {
	now := p.now()
	p.mu.Lock()
	p.rate = p.decayed(now) + 1/rateTau.Seconds()
	p.rateAt = now
	p.mu.Unlock()
	p.takes.Add(1)
	t := time.AfterFunc(p.refillDelay, p.refill)
	refill = func() {
		if t.Stop() {
			p.refill()
		}
	}
	select {
	case it = <-p.items:
		return it, true, refill
	default:
		p.misses.Add(1)
		return it, false, refill
	}
}

// refillDelay bounds how long a take's refill waits for its run to end:
// a trivial JavaScript run takes about a millisecond, a Python one a few.
const refillDelay = 10 * time.Millisecond

// refill wakes the goroutine that refills the pool.
func (p *pool[T]) refill() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// waitFull waits until the pool holds its target.
func (p *pool[T]) waitFull(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for p.cap >= 0 && (p.size() == 0 || len(p.items) < p.target()) {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stats is the pool as Status reports it.
func (p *pool[T]) stats() PoolStatus {
	p.mu.Lock()
	startDur := p.startDur
	p.mu.Unlock()
	return PoolStatus{
		Warm: len(p.items), Target: p.target(), Most: p.size(),
		InstanceKiB: p.instanceKiB.Load(), DemandPerSec: math.Round(p.demand(p.now())*10) / 10,
		StartMs: float64(startDur.Microseconds()) / 1000,
		Takes:   p.takes.Load(), Misses: p.misses.Load(), Started: p.started.Load(),
	}
}

// state says where the runtime is without waiting: "idle" until something
// needs it, "loading" while it is read and compiled, "ready", or
// "unavailable" with the reason.
func (r *runtimeFile) state() (string, error) {
	if !r.started.Load() {
		return "idle", nil
	}
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
