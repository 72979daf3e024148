package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Journal.
type Options struct {
	// InstanceID names this process in the records it opens. Required.
	InstanceID string
	// MaxBatch caps the writes grouped into one transaction. Default 256.
	MaxBatch int
	// IdempotencyRetention is how long an idempotency key is remembered.
	// Default 24 h.
	IdempotencyRetention time.Duration
	// CommitDelay is how long the writer waits for more writes before
	// committing a batch while other calls are in flight. Default 0 (no
	// wait); serve sets journal.commit_delay.
	CommitDelay time.Duration
	// PollInterval is how often a duplicate call polls the store for the
	// end of a call that another process runs. Default 100 ms.
	PollInterval time.Duration
	// SpoolDir, when set, is the directory of the journal's write-ahead
	// spool (spool.go): opened records of calls with side effects are
	// durable there before their tool runs, those of read-only calls join
	// their outcome (ReadOnlyOpenDelay), and outcomes are durable there
	// before their call returns. Empty: every write waits for the store
	// itself.
	SpoolDir string
	// ReadOnlyOpenDelay is how long the opened record of a read-only call
	// (side effect level none) may stay out of the spool while its tool
	// runs. A call that ends sooner appends its opened record and its
	// outcome in one write; one still running then appends its opened
	// record at that moment. A crash loses the opened records of read-only
	// calls younger than this, and nothing else: such a call changed
	// nothing outside. Default DefaultReadOnlyOpenDelay; negative: every
	// opened record is durable before its tool runs (serve's
	// journal.read_only_open_delay "0s").
	ReadOnlyOpenDelay time.Duration
	// SpoolSync flushes the spool file to the disk at every write, so that
	// a power cut loses nothing either (not only a crash of the process).
	SpoolSync bool
	// ApplyInterval is how long an opened record may stay in the spool
	// before it is written to the store while its call still runs. Default
	// 200 ms.
	ApplyInterval time.Duration
	// MaxPending bounds the spooled writes waiting for the store (it is
	// down or slow); beyond it new writes wait. Default 10000.
	MaxPending int
	// WaitForStore makes a finished call, with a spool, wait until its
	// record is in the store itself, not only in the spool (a commit on
	// every call's path). Without it, spooled writes reach the store within
	// ApplyInterval in large batches, and reads through Store first apply
	// this process's spool and, when the store is shared by replicas
	// (Replicas), ask every replica to apply its own: a reader sees every
	// call that has returned, wherever it ran.
	WaitForStore bool
	// BarrierTimeout bounds how long a read waits for other replicas to
	// apply their spools before it reads without the ones that did not
	// answer. Default 5 s.
	BarrierTimeout time.Duration
	Clock          func() time.Time
	Logger         *slog.Logger
	// OnApply, when set, is told of each batch of spooled writes applied
	// to the store: how many, how long the store took, and its error (the
	// telemetry's apply latency). It must not block.
	OnApply func(writes int, took time.Duration, err error)
}

// Journal records calls through a Store with group commit.
type Journal struct {
	store Store
	opts  Options

	queue chan *pending
	stop  chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	running map[string]*run // open records of this process
	closed  bool
	spills  sync.WaitGroup // armed read-only timers and their spills (readonly.go)

	spool    atomic.Pointer[spool] // set by Start when Options.SpoolDir is
	replicas Replicas              // set by Start when the store is shared
	listen   context.CancelFunc    // stops the flush listener
}

type pending struct {
	w    Write
	done chan error
}

// New starts a journal over s. Close stops it (it does not close s).
func New(s Store, opts Options) *Journal {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.IdempotencyRetention <= 0 {
		opts.IdempotencyRetention = 24 * time.Hour
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.ReadOnlyOpenDelay == 0 {
		opts.ReadOnlyOpenDelay = DefaultReadOnlyOpenDelay
	}
	if opts.ApplyInterval <= 0 {
		opts.ApplyInterval = 200 * time.Millisecond
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 10000
	}
	if opts.BarrierTimeout <= 0 {
		opts.BarrierTimeout = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Journal{
		store:   s,
		opts:    opts,
		queue:   make(chan *pending, opts.MaxBatch),
		stop:    make(chan struct{}),
		running: map[string]*run{},
	}
	j.wg.Add(1)
	go j.writer()
	return j
}

// Abandon stops the journal as if its process had been killed: nothing
// more is written or applied, the spool files stay for the next process,
// and the journal must not be used again. For crash tests.
func (j *Journal) Abandon() {
	j.mu.Lock()
	j.closed = true
	for _, rn := range j.running {
		if rn.timer != nil {
			j.disarm(rn) // a dead process spools nothing more
		}
	}
	j.mu.Unlock()
	if j.listen != nil {
		j.listen()
	}
	if sp := j.spool.Load(); sp != nil {
		sp.abandon()
	}
	j.spills.Wait() // a spill that had begun finds the spool closed
	close(j.stop)
	j.wg.Wait()
}

// Store returns the store for queries. With a spool, every read first
// applies what this process has spooled, so a reader sees every call that
// has started here, opened or finished.
func (j *Journal) Store() Store { return flushedStore{Store: j.store, j: j} }

// Flush applies everything spooled so far to the store, with the opened
// records of the read-only calls running now.
func (j *Journal) Flush(ctx context.Context) error {
	if sp := j.spool.Load(); sp != nil {
		j.spoolOpened()
		return sp.flush(ctx)
	}
	return nil
}

// InstanceID is the id this process writes into the records it opens.
func (j *Journal) InstanceID() string { return j.opts.InstanceID }

// Retention is the idempotency retention window.
func (j *Journal) Retention() time.Duration { return j.opts.IdempotencyRetention }

// Close stops the writer after the queued writes are done, and applies
// and removes the spool; what the store does not take within 30 s stays in
// the spool for the next start. The opened records of read-only calls
// still running are spooled first, over a full spool if need be; a write
// still waiting for room in the spool then fails with ErrClosed.
func (j *Journal) Close() {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return
	}
	j.closed = true
	j.mu.Unlock()
	if j.listen != nil {
		j.listen()
	}
	if sp := j.spool.Load(); sp != nil {
		j.spoolOpened() // calls still running stay visible to the next start
		j.spills.Wait() // and no timer's spill outlives Close
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := sp.close(ctx); err != nil {
			j.opts.Logger.Error("journal: closing the spool", "err", err)
		}
		if j.replicas != nil {
			if err := j.replicas.Leave(ctx, j.opts.InstanceID); err != nil {
				j.opts.Logger.Warn("journal: leaving the replicas", "err", err)
			}
		}
		cancel()
	}
	close(j.stop)
	j.wg.Wait()
}

// writer is the group-commit loop: it takes whatever writes are queued
// (waiting only for the first) and commits them in one transaction. While a
// transaction runs, the next batch queues up, so the number of commits adapts
// to the load without a timer.
func (j *Journal) writer() {
	defer j.wg.Done()
	batch := make([]*pending, 0, j.opts.MaxBatch)
	ws := make([]Write, 0, j.opts.MaxBatch)
	for {
		var first *pending
		select {
		case first = <-j.queue:
		case <-j.stop:
			// Drain what is already queued so no accepted write is lost.
			for {
				select {
				case p := <-j.queue:
					j.commit([]*pending{p}, []Write{p.w})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
		// Let the goroutines that are ready to write get into this batch:
		// a yield costs far less than the transaction it may save.
		runtime.Gosched()
	fill:
		for len(batch) < j.opts.MaxBatch {
			select {
			case p := <-j.queue:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		// When other calls of this process are running, their writes are
		// coming: wait a moment for them (CommitDelay) rather than pay a
		// transaction each. A lone call never waits.
		if j.opts.CommitDelay > 0 && j.inFlight() > len(batch) {
			timer := time.NewTimer(j.opts.CommitDelay)
		wait:
			for len(batch) < j.opts.MaxBatch {
				select {
				case p := <-j.queue:
					batch = append(batch, p)
				case <-timer.C:
					break wait
				}
			}
			timer.Stop()
		}
		ws = ws[:0]
		for _, p := range batch {
			ws = append(ws, p.w)
		}
		j.commit(batch, ws)
	}
}

func (j *Journal) commit(batch []*pending, ws []Write) {
	// A store call has its own deadline: the writer must not hang on a dead
	// database while callers wait.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := j.store.Write(ctx, ws)
	cancel()
	if err != nil && len(batch) > 1 {
		// One bad write must not fail its neighbours: retry them alone.
		for _, p := range batch {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			p.done <- j.store.Write(ctx, []Write{p.w})
			cancel()
		}
		return
	}
	for _, p := range batch {
		p.done <- err
	}
}

// ErrClosed is returned for writes after Close.
var ErrClosed = errors.New("journal: closed")

// ErrUnavailable is returned by reads through Store while the store does
// not take what the spool holds: the journal cannot show every call.
var ErrUnavailable = errors.New("journal: store unavailable")

// write queues w and waits until it is durable.
func (j *Journal) write(ctx context.Context, w Write) error {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return ErrClosed
	}
	p := &pending{w: w, done: make(chan error, 1)}
	select {
	case j.queue <- p:
	case <-ctx.Done():
		return fmt.Errorf("journal write of %s: %w", w.Record.ID, ctx.Err())
	}
	// Once queued the write will happen; wait for it regardless of ctx so
	// the caller never acts on a record it believes was not written.
	if err := <-p.done; err != nil {
		return fmt.Errorf("journal write of %s: %w", w.Record.ID, err)
	}
	return nil
}

// Open makes a new opened record durable, with its events so far: in the
// spool when there is one, except for a tool whose effects are
// irreversible, whose record must be in the store itself before it runs.
// With a spool, a read-only call's opened record is not written yet: it
// goes to the spool with the call's outcome (Finish), or on its own once
// the call has run ReadOnlyOpenDelay, or when a reader flushes the spool.
func (j *Journal) Open(ctx context.Context, r Record, evs []Event) error {
	r.InstanceID = j.opts.InstanceID
	w := Write{Insert: true, Record: r, Events: evs}
	rn := &run{done: make(chan struct{})}
	sp := j.spool.Load()
	if sp != nil && r.SideEffectLevel == sideEffectNone && j.opts.ReadOnlyOpenDelay > 0 {
		if !j.deferOpen(r.ID, rn, &w) {
			return fmt.Errorf("journal write of %s: %w", r.ID, ErrClosed)
		}
		return nil
	}
	j.track(r.ID, rn)
	var err error
	switch {
	case sp == nil:
		err = j.write(ctx, w)
	case r.SideEffectLevel == sideEffectIrreversible:
		err = j.writeNow(ctx, w)
	default:
		_, err = sp.append(ctx, w, false)
		if err != nil {
			err = fmt.Errorf("journal write of %s: %w", r.ID, err)
		}
	}
	if err != nil {
		j.untrack(r.ID)
		return err
	}
	return nil
}

// Side effect levels (catalog.SideEffect*): none is a read-only tool,
// irreversible one that may change the outside world for good.
const (
	sideEffectNone         = "none"
	sideEffectIrreversible = "irreversible"
)

// Finish makes the outcome of an opened record durable; a read-only call
// whose opened record is not in the spool yet writes both at once, merged
// into one insert of the finished record.
func (j *Journal) Finish(ctx context.Context, r Record, evs []Event) error {
	defer j.untrack(r.ID)
	j.mu.Lock()
	rn := j.running[r.ID]
	j.mu.Unlock()
	if rn != nil && rn.timer == nil {
		rn = nil // its opened record is durable already
	}
	return j.finished(ctx, rn, Write{Record: r, Events: evs})
}

// Add makes a record that is already finished durable (a rejected or a
// deduplicated call).
func (j *Journal) Add(ctx context.Context, r Record, evs []Event) error {
	r.InstanceID = j.opts.InstanceID
	return j.finished(ctx, nil, Write{Insert: true, Record: r, Events: evs})
}

// finished writes a finished call, merged with its opened record when rn
// (only with a spool) still holds it: durable once spooled; with
// WaitForStore, also in the store before the call returns. A store that
// fails then does not fail the call: the spool keeps the write and applies
// it when the store answers again.
func (j *Journal) finished(ctx context.Context, rn *run, w Write) error {
	sp := j.spool.Load()
	if sp == nil {
		return j.write(ctx, w)
	}
	// Room first, a read-only call's timer still armed: while the outcome
	// waits for the store, its opened record is spilled at the delay as
	// ever, and nothing waits for rn.mu meanwhile (readonly.go).
	if err := sp.room(ctx); err != nil {
		if rn != nil {
			j.disarm(rn)
			j.spill(rn) // the call stays in the journal, as opened
		}
		return fmt.Errorf("journal write of %s: %w", w.Record.ID, err)
	}
	var open *Write
	if rn != nil {
		j.disarm(rn)
		// Held across the write: a spill that has begun ends first, and a
		// reader's flush waits for this write.
		rn.mu.Lock()
		open, rn.open = rn.open, nil
	}
	ew := w
	if open != nil {
		// One insert of the finished record, as the apply side would
		// merge the two writes: one frame, one write call.
		ew = *open
		ew.Record.takeOutcome(w.Record)
		ew.Events = append(ew.Events[:len(ew.Events):len(ew.Events)], w.Events...)
	}
	e, err := sp.put(ew, j.opts.WaitForStore)
	if rn != nil {
		if err != nil {
			rn.open = open
		}
		rn.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("journal write of %s: %w", w.Record.ID, err)
	}
	if !j.opts.WaitForStore {
		return nil
	}
	if err := sp.wait(ctx, e); err != nil {
		j.opts.Logger.Warn("journal: a finished call is in the spool but not yet in the store; it is applied when the store answers",
			"execution_id", w.Record.ID, "err", err)
	}
	return nil
}

// writeNow writes w to the store at once, outside group commit.
func (j *Journal) writeNow(ctx context.Context, w Write) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := j.store.Write(ctx, []Write{w}); err != nil {
		return fmt.Errorf("journal write of %s: %w", w.Record.ID, err)
	}
	return nil
}

// Claim takes the idempotency key k for the opened record r, writing r in
// the same transaction when the key is free. The key's expiry is now +
// retention.
func (j *Journal) Claim(ctx context.Context, k, digest string, r Record, evs []Event) (ClaimResult, error) {
	r.InstanceID = j.opts.InstanceID
	now := j.opts.Clock()
	j.track(r.ID, &run{done: make(chan struct{})})
	res, err := j.store.Claim(ctx, Claim{
		AccountID: r.AccountID, Key: k, Digest: digest, Tool: r.ToolName, Version: r.ToolVersion,
		Now: now, ExpiresAt: now.Add(j.opts.IdempotencyRetention),
		Open: Write{Insert: true, Record: r, Events: evs},
	})
	if err != nil || !res.Claimed {
		j.untrack(r.ID)
	}
	if err != nil {
		return res, fmt.Errorf("idempotency claim: %w", err)
	}
	return res, nil
}

// inFlight is the number of calls of this process with an open record.
func (j *Journal) inFlight() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.running)
}

func (j *Journal) track(id string, rn *run) {
	j.mu.Lock()
	j.running[id] = rn
	j.mu.Unlock()
}

func (j *Journal) untrack(id string) {
	j.mu.Lock()
	if rn, ok := j.running[id]; ok {
		close(rn.done)
		delete(j.running, id)
	}
	j.mu.Unlock()
}

// Start marks this instance alive in the store, reconciles what dead
// instances left open and purges expired idempotency claims. Call it once
// before the first call.
func (j *Journal) Start(ctx context.Context) (int, error) {
	if err := j.store.Hold(ctx, j.opts.InstanceID); err != nil {
		return 0, fmt.Errorf("journal: mark instance alive: %w", err)
	}
	if j.opts.SpoolDir != "" && j.spool.Load() == nil {
		files, err := openSpoolFiles(j.opts.SpoolDir, j.opts.InstanceID, j.opts.SpoolSync)
		if err != nil {
			return 0, err
		}
		// What dead processes spooled reaches the store before their open
		// calls are reconciled.
		if _, err := j.replayDead(ctx); err != nil {
			files.close(true)
			return 0, err
		}
		j.spool.Store(newSpool(j, files))
		if rp, ok := j.store.(Replicas); ok && rp.Shared() && !j.opts.WaitForStore {
			if err := j.joinReplicas(ctx, rp); err != nil {
				return 0, err
			}
		}
	}
	n, err := j.Reconcile(ctx)
	if err != nil {
		return n, err
	}
	if _, err := j.store.PurgeIdempotency(ctx, j.opts.Clock()); err != nil {
		return n, fmt.Errorf("journal: purge expired idempotency keys: %w", err)
	}
	return n, nil
}

// Await makes a new opened record durable in the store itself, not in the
// spool: a call that waits for its user's approval
// (StateAwaitingApproval) is visible while it waits, whatever its
// side-effect level.
func (j *Journal) Await(ctx context.Context, r Record, evs []Event) error {
	r.InstanceID = j.opts.InstanceID
	j.track(r.ID, &run{done: make(chan struct{})})
	if err := j.durable(ctx, Write{Insert: true, Record: r, Events: evs}); err != nil {
		j.untrack(r.ID)
		return err
	}
	return nil
}

// Progress makes durable the events of an opened record (Await) that goes
// on running, before it runs: in the store itself, as Await wrote it.
func (j *Journal) Progress(ctx context.Context, r Record, evs []Event) error {
	r.InstanceID = j.opts.InstanceID
	return j.durable(ctx, Write{Record: r, Events: evs})
}

// Advance makes durable a change of an opened record of this process
// whose call goes on (Open wrote it): its status while it waits for a run
// slot. The change follows the opened record wherever that is — still in
// the call's run (a read-only call's, readonly.go), in the spool, or in
// the store — so it is never applied before the record it changes, nor
// undone by an opened record applied after it.
func (j *Journal) Advance(ctx context.Context, r Record, evs []Event) error {
	w := Write{Record: r, Events: evs}
	sp := j.spool.Load()
	if sp == nil {
		return j.write(ctx, w)
	}
	j.mu.Lock()
	rn := j.running[r.ID]
	j.mu.Unlock()
	if rn != nil && rn.timer != nil {
		rn.mu.Lock()
		if open := rn.open; open != nil {
			open.Record.takeOutcome(r)
			open.Events = append(open.Events, evs...)
			rn.mu.Unlock()
			return nil
		}
		rn.mu.Unlock()
	}
	if _, err := sp.append(ctx, w, false); err != nil {
		return fmt.Errorf("journal write of %s: %w", r.ID, err)
	}
	return nil
}

// durable writes w to the store now: through group commit without a
// spool, at once beside it with one.
func (j *Journal) durable(ctx context.Context, w Write) error {
	if j.spool.Load() == nil {
		return j.write(ctx, w)
	}
	return j.writeNow(ctx, w)
}
