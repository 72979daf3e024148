package sandbox

import (
	"context"
	"fmt"
	"sync"
)

// ErrAccountBusy (an ErrBusy): the account's share of run slots and queue
// places is taken, while other accounts may still run.
var ErrAccountBusy = fmt.Errorf("%w for this account", ErrBusy)

// shares keeps each account to its share of the run slots: at most per
// runs at once and queue more waiting for one. Calls over that wait on the
// account's own semaphore, never on the shared queue, so one account
// cannot take every slot and queue place and leave the others busy. It
// sits in front of the shared slots and knows nothing of how instances are
// made.
type shares struct {
	per, queue int

	mu sync.Mutex
	m  map[string]*accountSlots
}

type accountSlots struct {
	sem   chan struct{}
	users int // running or waiting for sem
}

func newShares(per, queue int) *shares {
	return &shares{per: per, queue: queue, m: map[string]*accountSlots{}}
}

// acquire takes one of account's places; "" (no account: development
// mode, the command line) is not limited. wait is called before it waits
// for one.
func (sh *shares) acquire(ctx, closed context.Context, account string, wait func()) (func(), error) {
	if account == "" {
		return func() {}, nil
	}
	sh.mu.Lock()
	a := sh.m[account]
	if a == nil {
		a = &accountSlots{sem: make(chan struct{}, sh.per)}
		sh.m[account] = a
	}
	if a.users >= sh.per+sh.queue {
		sh.mu.Unlock()
		return nil, fmt.Errorf("%w: this account already has %d runs in progress or waiting, its share of the sandbox", ErrAccountBusy, a.users)
	}
	a.users++
	sh.mu.Unlock()
	leave := func() {
		sh.mu.Lock()
		if a.users--; a.users == 0 {
			delete(sh.m, account)
		}
		sh.mu.Unlock()
	}
	select {
	case a.sem <- struct{}{}:
		return func() { <-a.sem; leave() }, nil
	default:
	}
	wait()
	select {
	case a.sem <- struct{}{}:
		return func() { <-a.sem; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	case <-closed.Done():
		leave()
		return nil, ErrClosed
	}
}
