package journal

import (
	"errors"
	"sync"
	"time"
)

// The opened records of read-only calls. A call with side effects has its
// opened record durable before its tool runs (Open), so that a crash
// leaves the call in the journal, reconciled to uncertain. A read-only
// call changes nothing outside: a crash while it runs loses nothing but
// its trace. So with a spool its opened record waits, in the call's run,
// for the outcome and both go to the spool as one insert of the finished
// record, one frame and one write (Finish), as the apply side would have
// merged them: a short call pays one spool write, not two. A call still running after
// Options.ReadOnlyOpenDelay has its opened record appended then, by a
// timer (no goroutine until it fires), and a reader's flush appends those
// of every running call first, so reads still see calls in flight.
//
// A full spool (the store down or slow, Options.MaxPending writes waiting
// for it) does not hold these appends back: an opened record goes in over
// that bound, at once. Waiting would leave a call older than the delay
// out of the spool (a crash would lose its trace, against the rule in
// doc.go) and would keep a goroutine per running read-only call parked
// until the store answers. The bound is exceeded by at most one write per
// read-only call running, a record the call holds in memory anyway. The
// call's outcome waits for room like any other write (Finish): it waits
// before it takes the run's lock, with the timer still armed, so the
// opened record is spilled at the delay meanwhile, and a spill, a
// reader's flush and Close never wait behind it. Close spills the opened
// records of the calls still running, then ends the outcomes' waits
// (ErrClosed; spool.room): such a call is in the spool as opened, and the
// next start reconciles it. Every armed timer is counted (Journal.spills),
// so Close and Abandon wait for the spills that have begun: none outlives
// them.

// run is a call of this process whose record is open.
type run struct {
	done chan struct{} // closed when the call ends

	// A read-only call's opened record while it waits to be spooled
	// (Options.ReadOnlyOpenDelay): open is set until the write that
	// carries it is in the spool; mu is held across that write (never
	// across a wait for room), so the opened record always precedes the
	// outcome in the spool.
	mu    sync.Mutex
	open  *Write
	timer *time.Timer
}

// deferOpen keeps w, the opened record of a read-only call, in rn and arms
// the timer that spills it after the delay; false once the journal is
// closed. The timer is counted in j.spills until its spill has ended or
// a stop has kept it from firing (disarm).
func (j *Journal) deferOpen(id string, rn *run, w *Write) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return false
	}
	rn.open = w
	j.spills.Add(1)
	rn.timer = time.AfterFunc(j.opts.ReadOnlyOpenDelay, func() {
		defer j.spills.Done()
		j.spill(rn)
	})
	j.running[id] = rn
	return true
}

// disarm stops rn's timer. The one stop that keeps it from firing stands
// for the spill that will not run.
func (j *Journal) disarm(rn *run) {
	if rn.timer.Stop() {
		j.spills.Done()
	}
}

// spill appends the opened record of a read-only call that is still
// running to the spool, unless its outcome took it along already. It does
// not wait for room (see above). A write that fails leaves it to the
// outcome, which carries it then.
func (j *Journal) spill(rn *run) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.open == nil {
		return
	}
	sp := j.spool.Load()
	if _, err := sp.put(*rn.open, false); err != nil {
		if !errors.Is(err, ErrClosed) {
			j.opts.Logger.Error("journal: spooling the opened record of a running read-only call", "execution_id", rn.open.Record.ID, "err", err)
		}
		return
	}
	rn.open = nil
}

// spoolOpened spills the opened records of every read-only call running
// now, so a reader sees them (Flush) and the next start does (Close).
func (j *Journal) spoolOpened() {
	var waiting []*run
	j.mu.Lock()
	for _, rn := range j.running {
		if rn.timer != nil {
			waiting = append(waiting, rn)
		}
	}
	j.mu.Unlock()
	for _, rn := range waiting {
		j.disarm(rn)
		j.spill(rn)
	}
}

// DefaultReadOnlyOpenDelay is Options.ReadOnlyOpenDelay when none is set:
// long enough for most read-only calls to end first and pay one spool
// write, short enough that a crash loses only the traces of calls that
// had just begun.
const DefaultReadOnlyOpenDelay = 5 * time.Millisecond
