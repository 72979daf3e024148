package fetchpage

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/toolhost/toolhost/internal/egress"
)

// errBusy: every fetch slot or the body budget stayed taken for the
// queue timeout.
var errBusy = errors.New("fetch_page is busy")

// budget bounds what fetches hold together, whatever the concurrency: a
// number of fetches in flight, and bytes of bodies being held (downloaded,
// then extracted; extraction allocates in proportion to the body). A fetch
// reserves the most its body may take as soon as the response headers say
// what it is (the announced length, else the cap for its type) and keeps
// it until its result is built. Both wait in order (FIFO) for at most
// queueTimeout, then the call is refused as busy with a retry hint.
type budget struct {
	flights      *semaphore.Weighted
	bytes        *semaphore.Weighted
	total        int64
	queueTimeout time.Duration
}

func newBudget(inFlight int, bytes int64, queueTimeout time.Duration) *budget {
	return &budget{flights: semaphore.NewWeighted(int64(inFlight)), bytes: semaphore.NewWeighted(bytes), total: bytes, queueTimeout: queueTimeout}
}

// acquire waits for n of s within the queue timeout.
func (b *budget) acquire(ctx context.Context, s *semaphore.Weighted, n int64, what string) error {
	if s.TryAcquire(n) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, b.queueTimeout)
	defer cancel()
	if err := s.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s stayed taken for %s", errBusy, what, b.queueTimeout)
	}
	return nil
}

// flight takes a fetch slot.
func (b *budget) flight(ctx context.Context) (func(), error) {
	if err := b.acquire(ctx, b.flights, 1, "every fetch slot"); err != nil {
		return nil, err
	}
	return func() { b.flights.Release(1) }, nil
}

// hold reserves n body bytes (at most the whole budget) for the fetch of
// hs; they are released with hs.release.
func (b *budget) hold(ctx context.Context, hs *hopState, n int64) error {
	n = min(max(n, 1), b.total)
	if err := b.acquire(ctx, b.bytes, n, "the memory budget for page bodies"); err != nil {
		return err
	}
	hs.held += n
	return nil
}

// release gives back what the fetch of hs holds.
func (b *budget) release(hs *hopState) {
	if hs.held > 0 {
		b.bytes.Release(hs.held)
		hs.held = 0
	}
}

// hostKey is what the per-host limit counts by: the address the host
// resolves to (the lowest, so every spelling and every name of one
// machine share a key), the canonical IP of a literal, or the normalised
// name when it does not resolve (the fetch then fails on its own).
func (t *Tool) hostKey(ctx context.Context, u *url.URL) string {
	host := u.Hostname()
	if n, err := egress.NormalizeHost(host); err == nil {
		host = n
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return host // NormalizeHost's canonical form
	}
	rctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout.D())
	defer cancel()
	addrs, err := t.resolver.LookupNetIP(rctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return host
	}
	keys := make([]string, len(addrs))
	for i, a := range addrs {
		keys[i] = a.WithZone("").Unmap().String()
	}
	sort.Strings(keys)
	return keys[0]
}
