package websearch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// One search is bounded by an overall deadline (Config.Deadline, 10 s by
// default) instead of the sum of the providers' timeouts, and hedged: the
// providers are asked in order, the next one as soon as the current one
// fails or has not answered within its hedge delay (Config.HedgeDelay,
// 1.5 s by default, or the provider's own recent p90 once it has answered
// minLatencySamples times). The first good answer wins; every other request
// still in flight is cancelled, and only the answer is billed.

const (
	latencyWindow     = 32 // recent answer times kept per provider
	minLatencySamples = 8  // answers needed before the p90 replaces the default
	minHedgeDelay     = 50 * time.Millisecond
)

// latencies are a provider's recent answer times.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.samples) == latencyWindow {
		copy(l.samples, l.samples[1:])
		l.samples = l.samples[:latencyWindow-1]
	}
	l.samples = append(l.samples, d)
}

// p90 is the 90th percentile of the recent answer times, ok false when
// there are too few.
func (l *latencies) p90() (time.Duration, bool) {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.mu.Unlock()
	if len(s) < minLatencySamples {
		return 0, false
	}
	slices.Sort(s)
	return s[(len(s)*9+9)/10-1], true
}

// hedgeDelay is how long s may take before the next provider is asked too;
// 0 means never (hedging off).
func (t *Tool) hedgeDelay(s *slot) time.Duration {
	if t.hedge < 0 {
		return 0
	}
	d := t.hedge
	if p, ok := s.lat.p90(); ok {
		d = max(p, minHedgeDelay)
	}
	return d
}

// answer is what one provider returned.
type answer struct {
	slot *slot
	hits []hit
	ms   int64
}

type providerResult struct {
	slot *slot
	hits []hit
	err  error
	took time.Duration
}

// race asks the providers in order, hedged, within ctx (which carries the
// overall deadline). It returns the first good answer, or why each provider
// failed; a provider still in flight when the deadline passes is reported
// as timed out.
func (t *Tool) race(ctx context.Context, q query, order []*slot, progress func(i int, name string)) (*answer, []attempt, error) {
	if len(order) == 0 {
		return nil, nil, nil // every provider is rate limited
	}
	ctx, cancelAll := context.WithCancel(ctx)
	results := make(chan providerResult, len(order))
	var wg sync.WaitGroup
	// The losers are cancelled, then waited for: no request outlives the
	// call.
	defer func() { cancelAll(); wg.Wait() }()
	inFlight := map[*slot]bool{}
	next := 0
	launch := func() {
		s := order[next]
		progress(next, s.name)
		next++
		inFlight[s] = true
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			pctx, span := t.tel.startRequest(pctx, s.name)
			start := time.Now()
			hits, err := s.p.search(pctx, q)
			took := time.Since(start)
			t.tel.endRequest(pctx, span, s.name, took, err)
			results <- providerResult{slot: s, hits: hits, err: err, took: took}
		})
	}
	var reasons []attempt
	var hedge *time.Timer
	var hedgeC <-chan time.Time
	armHedge := func(s *slot) {
		if hedge != nil {
			hedge.Stop()
			hedgeC = nil
		}
		if d := t.hedgeDelay(s); d > 0 && next < len(order) {
			hedge = time.NewTimer(d)
			hedgeC = hedge.C
		}
	}
	defer func() {
		if hedge != nil {
			hedge.Stop()
		}
	}()
	launch()
	armHedge(order[0])
	for {
		select {
		case r := <-results:
			delete(inFlight, r.slot)
			if r.err == nil {
				r.slot.succeeded()
				r.slot.lat.add(r.took)
				return &answer{slot: r.slot, hits: r.hits, ms: r.took.Milliseconds()}, reasons, nil
			}
			if ctx.Err() != nil {
				// The deadline (or the caller) ended the search; the
				// provider is not to blame.
				reasons = append(reasons, attempt{name: r.slot.name, f: failf(failTimeout, "no answer before the search deadline")})
				break
			}
			var f *failure
			if !errors.As(r.err, &f) {
				f = failf(failNetwork, "%v", r.err)
			}
			wait := r.slot.failed(f, t.now())
			reasons = append(reasons, attempt{name: r.slot.name, f: f, wait: wait})
			t.logger.WarnContext(ctx, "web_search provider failed", "provider", r.slot.name, "reason", f.Msg, "cause", f.Cause, "status", f.Status, "ms", r.took.Milliseconds(), "backoff_ms", wait.Milliseconds())
			if next < len(order) {
				t.tel.failover(ctx, "failure")
				launch()
				armHedge(order[next-1])
			}
		case <-hedgeC:
			hedgeC = nil
			if next < len(order) {
				t.logger.InfoContext(ctx, "web_search hedging", "provider", order[next].name)
				t.tel.failover(ctx, "hedge")
				launch()
				armHedge(order[next-1])
			}
		case <-ctx.Done():
			for _, s := range order[:next] {
				if inFlight[s] {
					reasons = append(reasons, attempt{name: s.name, f: failf(failTimeout, "no answer before the search deadline")})
				}
			}
			return nil, reasons, ctx.Err()
		}
		if len(inFlight) == 0 && next >= len(order) {
			return nil, reasons, nil
		}
	}
}
