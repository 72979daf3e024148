package journal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The spool is the journal's write-ahead log on local disk. With it, a
// call's opened record is durable once appended to a file (one write
// system call for all the calls that arrive together) and the call's tool
// may run at once; the record reaches the store later. A read-only call
// does not even wait for that: its opened record is appended merged with
// its outcome, one frame, unless the call runs longer than
// ReadOnlyOpenDelay (readonly.go). When the call ends, its outcome is
// appended and applied to the store, merged with its opened record when
// that is still in the spool: a short call costs the store one insert, not
// an insert and an update. Opened records of calls that run longer reach
// the store after ApplyInterval, so the store shows calls in flight too.
//
// Guarantees: a spooled write survives the death of the process (it is in
// the file before anything acts on it; with SpoolSync it is also flushed to
// the disk); the next process that starts on the same spool directory
// applies whatever the dead one had not, before it reconciles open calls.
// Applying is idempotent (Store.Apply), so a write applied just before a
// crash and applied again after it changes nothing.

// spooled is one write in the spool and, when a caller waits for the store,
// the channel that tells it the write was applied.
type spooled struct {
	seq   uint64
	w     Write
	at    time.Time
	done  chan error
	fails int // times it failed on its own while the store answered
}

// round is a group of writes appended to the spool file together.
type round struct {
	frames []byte
	ents   []*spooled
	last   uint64
	done   chan struct{}
	err    error
}

type spool struct {
	files    *spoolFiles
	j        *Journal
	interval time.Duration
	max      int // most pending writes before appends wait

	amu     sync.Mutex // append side
	next    uint64
	cur     *round
	writing bool
	closed  bool
	// enqueued is the last sequence number handed to the apply side.
	enqueued atomic.Uint64

	pmu       sync.Mutex // apply side
	pending   []*spooled // in sequence order
	applying  bool
	roundDone chan struct{}
	space     chan struct{} // closed and replaced when pending shrinks
	failing   bool          // the last apply failed: the ticker retries

	stop chan struct{}
	// wake tells the ticker that pending is no longer empty: with nothing
	// pending and the store answering, it sleeps until then, so an idle
	// server is not woken ten times a second.
	wake chan struct{}
	wg   sync.WaitGroup
}

// Pending is how many spooled writes wait for the store (0 without a
// spool): the depth the telemetry reports.
func (j *Journal) Pending() int {
	sp := j.spool.Load()
	if sp == nil {
		return 0
	}
	sp.pmu.Lock()
	defer sp.pmu.Unlock()
	return len(sp.pending)
}

func newSpool(j *Journal, files *spoolFiles) *spool {
	s := &spool{files: files, j: j, interval: j.opts.ApplyInterval, max: j.opts.MaxPending,
		next: 1, roundDone: make(chan struct{}), space: make(chan struct{}), stop: make(chan struct{}), wake: make(chan struct{}, 1)}
	s.wg.Add(1)
	go s.ticker()
	return s
}

// append makes w durable in the spool file, once there is room for it
// (room). With wait, the returned entry's done channel reports when w is
// in the store.
func (s *spool) append(ctx context.Context, w Write, wait bool) (*spooled, error) {
	if err := s.room(ctx); err != nil {
		return nil, err
	}
	return s.put(w, wait)
}

// put makes w durable in the spool file without waiting for room: the
// caller has waited (room), or w is the opened record of a running
// read-only call (readonly.go), which never waits.
func (s *spool) put(w Write, wait bool) (*spooled, error) {
	payload := appendWrite(nil, w)
	if len(payload) > maxFrameBody {
		return nil, fmt.Errorf("journal spool: a write of %d bytes is larger than the %d allowed", len(payload), maxFrameBody)
	}
	e := &spooled{w: w, at: time.Now()}
	if wait {
		e.done = make(chan error, 1)
	}
	s.amu.Lock()
	if s.closed {
		s.amu.Unlock()
		return nil, ErrClosed
	}
	e.seq = s.next
	s.next++
	if s.cur == nil {
		s.cur = &round{done: make(chan struct{})}
	}
	mine := s.cur
	mine.frames = appendFrame(mine.frames, e.seq, payload)
	mine.ents = append(mine.ents, e)
	mine.last = e.seq
	if s.writing {
		s.amu.Unlock()
		<-mine.done
		return e, mine.err
	}
	// Lead: write rounds until none is waiting. Only one goroutine writes
	// at a time, so rounds reach the file and the apply side in order.
	s.writing = true
	for s.cur != nil {
		r := s.cur
		s.cur = nil
		s.amu.Unlock()
		r.err = s.files.write(r.frames, r.last)
		if r.err == nil {
			s.enqueue(r.ents)
		}
		s.enqueued.Store(r.last)
		close(r.done)
		s.amu.Lock()
	}
	s.writing = false
	s.amu.Unlock()
	return e, mine.err
}

// room waits while too many writes are waiting for the store (it is down
// or slow): the spool holds them, but memory is bounded. The wait ends
// with ctx, or with ErrClosed when the spool closes (nothing would make
// room any more).
func (s *spool) room(ctx context.Context) error {
	for {
		s.pmu.Lock()
		if len(s.pending) < s.max {
			s.pmu.Unlock()
			return nil
		}
		ch := s.space
		s.pmu.Unlock()
		select {
		case <-ch:
		case <-s.stop:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("journal: %d writes are waiting for the store, which does not take them: %w", s.max, ctx.Err())
		}
	}
}

func (s *spool) enqueue(ents []*spooled) {
	s.pmu.Lock()
	s.pending = append(s.pending, ents...)
	s.pmu.Unlock()
	s.kick()
}

// kick wakes the ticker if it sleeps (it never blocks).
func (s *spool) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wait blocks until e is in the store. It leads an apply round itself when
// none is running, so a lone call never hands over to another goroutine.
func (s *spool) wait(ctx context.Context, e *spooled) error {
	for {
		select {
		case err := <-e.done:
			return err
		default:
		}
		ch, led := s.lead(false)
		if led {
			continue
		}
		select {
		case err := <-e.done:
			return err
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// flush applies everything spooled so far, opened records included.
func (s *spool) flush(ctx context.Context) error {
	target := s.enqueued.Load()
	for {
		s.pmu.Lock()
		if s.applying {
			// The running round may hold writes up to target.
			ch := s.roundDone
			s.pmu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := len(s.pending) == 0 || s.pending[0].seq > target
		s.pmu.Unlock()
		if done {
			return nil
		}
		if _, led := s.lead(true); led {
			s.pmu.Lock()
			failing := s.failing
			s.pmu.Unlock()
			if failing {
				return fmt.Errorf("%w: the store does not take the spooled writes (see the log)", ErrUnavailable)
			}
		}
	}
}

// lead runs one apply round when none is running and reports true; else it
// returns the channel closed when the running round ends.
func (s *spool) lead(all bool) (<-chan struct{}, bool) {
	s.pmu.Lock()
	if s.applying {
		ch := s.roundDone
		s.pmu.Unlock()
		return ch, false
	}
	s.applying = true
	batch := s.pending
	s.pending = nil
	s.pmu.Unlock()

	back, failed := s.apply(batch, all)

	s.pmu.Lock()
	s.pending = append(back, s.pending...)
	s.failing = failed
	s.applying = false
	close(s.roundDone)
	s.roundDone = make(chan struct{})
	close(s.space)
	s.space = make(chan struct{})
	first := s.enqueued.Load() + 1
	left := len(s.pending) > 0
	if left {
		first = s.pending[0].seq
	}
	s.pmu.Unlock()
	if left {
		s.kick() // what stays (opened records, a failed round) is the ticker's
	}
	s.files.release(first)
	return nil, true
}

// apply writes a round to the store and returns what stays in the spool:
// opened records that may wait (unless all), and everything when the store
// failed. Callers waiting on applied writes are told.
func (s *spool) apply(batch []*spooled, all bool) (back []*spooled, failed bool) {
	if len(batch) == 0 {
		return nil, false
	}
	// A round takes the writes someone waits for, with the earlier writes
	// of the same records, and every write that has waited ApplyInterval;
	// the rest may wait for their record's next write and be merged.
	now := time.Now()
	due := map[string]bool{}
	for _, e := range batch {
		if all || e.done != nil || now.Sub(e.at) >= s.interval {
			due[e.w.Record.ID] = true
		}
	}
	var take []*spooled
	for _, e := range batch {
		if due[e.w.Record.ID] {
			take = append(take, e)
		} else {
			back = append(back, e)
		}
	}
	if len(take) == 0 {
		return back, false
	}
	groups := mergeSpooled(take)
	t0 := time.Now()
	stored, err := s.store(groups)
	if f := s.j.opts.OnApply; f != nil {
		f(len(groups), time.Since(t0), err)
	}
	for _, g := range groups[:stored] {
		g.tell(nil)
	}
	if err == nil {
		return back, false
	}
	rest := groups[stored:] // the batch that failed and those after it
	if len(rest) == 1 && !s.storeAnswers() {
		rest[0].tell(err)
		return sortSpooled(append(back, entsOf(rest)...)), true
	}
	// Find the writes the store refuses on their own: one bad write must
	// not keep the others of its batch out. If every one fails, the store
	// is down (or full, or read-only): keep them for the next round, but
	// for those it refuses for what they hold (ErrRefused), which would
	// hold the spool, and every read, until other writes came.
	var bad []*mergedWrite
	for _, g := range rest {
		if _, gerr := s.store([]*mergedWrite{g}); gerr != nil {
			g.err = gerr
			bad = append(bad, g)
			continue
		}
		g.tell(nil)
	}
	down := len(bad) == len(rest) && len(rest) > 1
	for _, g := range bad {
		if down && !errors.Is(g.err, ErrRefused) {
			g.tell(err)
			back = append(back, g.ents...)
			continue
		}
		g.tell(g.err)
		g.fails++
		if g.fails >= 3 {
			s.setAside(g)
			continue
		}
		for _, e := range g.ents {
			e.fails = g.fails
		}
		back = append(back, g.ents...)
	}
	return sortSpooled(back), len(bad) > 0
}

// entsOf is the spooled writes gs were made of.
func entsOf(gs []*mergedWrite) []*spooled {
	var out []*spooled
	for _, g := range gs {
		out = append(out, g.ents...)
	}
	return out
}

// mergedWrite is one store write made of one or more spooled writes of the
// same record.
type mergedWrite struct {
	w     Write
	ents  []*spooled
	fails int
	err   error
}

// frames is the spool encoding of the writes g was made of.
func (g *mergedWrite) frames() []byte {
	var b []byte
	for _, e := range g.ents {
		b = appendFrame(b, e.seq, appendWrite(nil, e.w))
	}
	return b
}

func (g *mergedWrite) tell(err error) {
	for _, e := range g.ents {
		if e.done != nil {
			select {
			case e.done <- err:
			default:
			}
		}
	}
}

// mergeSpooled turns writes in order into one write per record: an
// outcome whose opened record is among them becomes part of its insert,
// two outcomes of one record become one.
func mergeSpooled(ents []*spooled) []*mergedWrite {
	at := map[string]*mergedWrite{}
	var out []*mergedWrite
	for _, e := range ents {
		id := e.w.Record.ID
		g, ok := at[id]
		if !ok || e.w.Insert {
			g = &mergedWrite{w: e.w, ents: []*spooled{e}, fails: e.fails}
			g.w.Events = append([]Event(nil), e.w.Events...)
			at[id] = g
			out = append(out, g)
			continue
		}
		g.w.Record.takeOutcome(e.w.Record)
		g.w.Events = append(g.w.Events, e.w.Events...)
		g.ents = append(g.ents, e)
		g.fails = max(g.fails, e.fails)
	}
	return out
}

// store applies gs in batches of MaxBatch, in order, and returns how many
// were applied: those before the batch that failed.
func (s *spool) store(gs []*mergedWrite) (int, error) {
	for lo := 0; lo < len(gs); lo += s.j.opts.MaxBatch {
		hi := min(lo+s.j.opts.MaxBatch, len(gs))
		ws := make([]Write, hi-lo)
		for i, g := range gs[lo:hi] {
			ws[i] = g.w
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		unchanged, err := s.j.store.Apply(ctx, ws)
		cancel()
		if err != nil {
			return lo, err
		}
		for _, id := range unchanged {
			s.j.opts.Logger.Warn("journal: a spooled write found its record already finished or missing; the stored record is kept",
				"execution_id", id, "instance_id", s.j.opts.InstanceID)
		}
	}
	return len(gs), nil
}

// storeAnswers tells a store that is down from a write it refuses.
func (s *spool) storeAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.j.store.Alive(ctx, s.j.opts.InstanceID)
	return err == nil
}

// setAside moves writes the store keeps refusing out of the way, into
// INSTANCE.rejected beside the spool (same frames), so that they neither
// block the writes behind them nor get lost.
func (s *spool) setAside(g *mergedWrite) {
	err := appendRejected(s.files.dir, s.files.instance, g.frames())
	s.j.opts.Logger.Error("journal: the store keeps refusing a write; it was set aside",
		"execution_id", g.w.Record.ID, "tool", g.w.Record.ToolName, "err", g.err,
		"file", rejectedPath(s.files.dir, s.files.instance), "write_err", err)
}

// ticker applies opened records that have waited ApplyInterval, and
// retries after the store failed, backing off up to 5 s. With nothing
// pending it sleeps until enqueue or lead kicks it.
func (s *spool) ticker() {
	defer s.wg.Done()
	tick := s.interval / 2
	backoff := tick
	for {
		select {
		case <-s.stop:
			return
		case <-time.After(backoff):
		}
		s.pmu.Lock()
		n := len(s.pending)
		big := n >= s.max/4 // apply early rather than let appends wait
		due := n > 0 && (s.failing || big || time.Since(s.pending[0].at) >= s.interval)
		idle := n == 0 && !s.failing
		s.pmu.Unlock()
		if !due {
			backoff = tick
			if idle {
				// Nothing to apply: sleep until something is enqueued.
				select {
				case <-s.stop:
					return
				case <-s.wake:
				}
			}
			continue
		}
		s.lead(big)
		s.pmu.Lock()
		failing := s.failing
		s.pmu.Unlock()
		if failing {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		} else {
			backoff = tick
		}
	}
}

// close applies what is left (within ctx) and closes the files, deleting
// them when everything reached the store.
func (s *spool) close(ctx context.Context) error {
	s.amu.Lock()
	s.closed = true
	s.amu.Unlock()
	close(s.stop)
	s.wg.Wait()
	err := s.flush(ctx)
	s.pmu.Lock()
	applied := err == nil && len(s.pending) == 0
	s.pmu.Unlock()
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("journal: writes left in the spool for the next start: %w", err))
	}
	errs = append(errs, s.files.close(applied))
	return errors.Join(errs...)
}

// abandon stops the ticker and lets go of the files, deleting nothing.
func (s *spool) abandon() {
	s.amu.Lock()
	s.closed = true
	s.amu.Unlock()
	close(s.stop)
	s.wg.Wait()
	s.files.mu.Lock()
	if s.files.f != nil {
		s.files.f.Close()
		s.files.f = nil
	}
	s.files.lock.Close()
	s.files.mu.Unlock()
}

// sortSpooled puts writes back in spool order.
func sortSpooled(es []*spooled) []*spooled {
	slices.SortFunc(es, func(a, b *spooled) int { return cmp.Compare(a.seq, b.seq) })
	return es
}
