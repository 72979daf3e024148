package journal

import (
	"context"
	"time"
)

// The read barrier: a read through Journal.Store sees every call that has
// returned so far, in this process and, with a shared store, in its
// replicas.

// readBarrier makes what every call that has returned so far wrote visible
// in the store: this process's spool is applied, then, with replicas, each
// live replica is asked to apply its own and awaited.
func (j *Journal) readBarrier(ctx context.Context) error {
	if err := j.Flush(ctx); err != nil {
		return err
	}
	if j.replicas == nil {
		return nil
	}
	return j.awaitReplicas(ctx)
}

// joinReplicas registers this process among the replicas of a shared
// store and starts answering their flush requests: apply the spool, then
// acknowledge the request.
func (j *Journal) joinReplicas(ctx context.Context, rp Replicas) error {
	if err := rp.Join(ctx, j.opts.InstanceID); err != nil {
		return err
	}
	j.replicas = rp
	lctx, cancel := context.WithCancel(context.Background())
	j.listen = cancel
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		rp.ListenFlush(lctx, func(request int64) {
			fctx, cancel := context.WithTimeout(lctx, 30*time.Second)
			defer cancel()
			if err := j.Flush(fctx); err != nil {
				j.opts.Logger.Warn("journal: a replica asked for this spool, which the store did not take", "request", request, "err", err)
				return
			}
			if err := rp.Ack(fctx, j.opts.InstanceID, request); err != nil && lctx.Err() == nil {
				j.opts.Logger.Warn("journal: acknowledging a flush request", "request", request, "err", err)
			}
		}, func(err error) {
			j.opts.Logger.Warn("journal: the flush listener lost its connection; reconnecting", "err", err)
		})
	}()
	return nil
}

// awaitReplicas asks every replica to apply its spool and waits until the
// live ones have, up to BarrierTimeout. A replica that is gone is left out
// (and forgotten): what it spooled reaches the store when it starts again.
func (j *Journal) awaitReplicas(ctx context.Context) error {
	rp := j.replicas
	request, err := rp.RequestFlush(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	pause := time.Millisecond
	probed := false
	for {
		lag, err := rp.Lagging(ctx, j.opts.InstanceID, request)
		if err != nil {
			return err
		}
		if len(lag) == 0 {
			return nil
		}
		if !probed && time.Since(start) > 100*time.Millisecond {
			probed = true
			for _, id := range lag {
				if alive, err := j.store.Alive(ctx, id); err == nil && !alive {
					_ = rp.Leave(ctx, id)
				}
			}
			continue
		}
		if time.Since(start) > j.opts.BarrierTimeout {
			j.opts.Logger.Warn("journal: replicas did not apply their spools for a read in time; reading without their latest calls",
				"replicas", lag, "waited", time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// flushedStore is the store as Journal.Store hands it out: reads first
// apply what this process has spooled.
type flushedStore struct {
	Store
	j *Journal
}

func (f flushedStore) List(ctx context.Context, q Query) ([]Record, int, error) {
	if err := f.j.readBarrier(ctx); err != nil {
		return nil, 0, err
	}
	return f.Store.List(ctx, q)
}

func (f flushedStore) Get(ctx context.Context, accountID, id string) (Record, error) {
	if err := f.j.readBarrier(ctx); err != nil {
		return Record{}, err
	}
	return f.Store.Get(ctx, accountID, id)
}

func (f flushedStore) Events(ctx context.Context, accountID, id string) ([]Event, error) {
	if err := f.j.readBarrier(ctx); err != nil {
		return nil, err
	}
	return f.Store.Events(ctx, accountID, id)
}

func (f flushedStore) Opened(ctx context.Context) ([]Record, error) {
	if err := f.j.readBarrier(ctx); err != nil {
		return nil, err
	}
	return f.Store.Opened(ctx)
}

func (f flushedStore) LastEvent(ctx context.Context, id string) (Event, error) {
	if err := f.j.readBarrier(ctx); err != nil {
		return Event{}, err
	}
	return f.Store.LastEvent(ctx, id)
}
