package journal

import (
	"context"
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

// run is a call of this process whose record is open.
type run struct {
	done chan struct{} // closed when the call ends

	// A read-only call's opened record while it waits to be spooled
	// (Options.ReadOnlyOpenDelay): open is set until the write that
	// carries it is in the spool; mu is held across that write, so the
	// opened record always precedes the outcome in the spool.
	mu    sync.Mutex
	open  *Write
	timer *time.Timer
}

// spill appends the opened record of a read-only call that is still
// running to the spool, unless its outcome took it along already. A write
// that fails leaves it to the outcome, which carries it then.
func (j *Journal) spill(rn *run) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.open == nil {
		return
	}
	sp := j.spool.Load()
	if _, err := sp.append(context.Background(), *rn.open, false); err != nil {
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
		rn.timer.Stop()
		j.spill(rn)
	}
}
