// Package gcpace sets the Go collector's GOGC from the allocation rate, so
// that a server pays for garbage collection the way its load asks: a small
// heap while it is quiet, a large one while it is busy.
//
// Why both: every MCP message the SDK decodes leaves about 32 KiB of
// garbage, so a call leaves a few hundred KiB. Under load, a large GOGC
// (400) means few collections and more calls per second. When calls come
// one at a time, the same setting lets the heap grow to five times what is
// live before each collection, and every call writes its garbage into
// memory that nothing touched for a long while: through `toolhost serve`,
// an idle MCP gateway call measured about 0.1 ms slower at GOGC=400 than at
// 100 (docs/performance.md). Busy is decided by how many collections the
// quiet setting would run: more than MaxQuietCycles a second is busy.
package gcpace

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options are the pacer's settings; zero values take the defaults.
type Options struct {
	// Quiet is GOGC while the allocation rate is low. Default 100.
	Quiet int
	// Busy is GOGC under load. Default 400.
	Busy int
	// MaxQuietCycles: the pacer turns busy when, at Quiet, the collector
	// would run more than this many times a second, and quiet again below
	// half of it. Default 2.
	MaxQuietCycles float64
	// Interval is how often the rate is read. Default 1 s.
	Interval time.Duration
	// Changed, when set, hears every switch.
	Changed func(gogc int, allocPerSec, live float64)
}

func (o *Options) defaults() {
	if o.Quiet == 0 {
		o.Quiet = 100
	}
	if o.Busy == 0 {
		o.Busy = 400
	}
	if o.MaxQuietCycles == 0 {
		o.MaxQuietCycles = 2
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
}

// Next is the setting for an interval that allocated allocPerSec bytes a
// second with live bytes of live heap, when the setting now is cur.
func (o Options) Next(cur int, allocPerSec, live float64) int {
	o.defaults()
	if live <= 0 {
		return cur
	}
	cycles := allocPerSec / (live * float64(o.Quiet) / 100)
	switch {
	case cycles > o.MaxQuietCycles:
		return o.Busy
	case cycles < o.MaxQuietCycles/2:
		return o.Quiet
	}
	return cur // between the two: keep what is set (no flapping)
}

// Run sets GOGC to o.Quiet, then every o.Interval to what Next says, until
// ctx ends; it returns GOGC to what it was before.
func Run(ctx context.Context, o Options) {
	o.defaults()
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (alloc, live float64) {
		metrics.Read(samples)
		return float64(samples[0].Value.Uint64()), float64(samples[1].Value.Uint64())
	}
	cur := o.Quiet
	before := debug.SetGCPercent(cur)
	defer debug.SetGCPercent(before)
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	prev, _ := read()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			alloc, live := read()
			rate := (alloc - prev) / now.Sub(last).Seconds()
			prev, last = alloc, now
			if next := o.Next(cur, rate, live); next != cur {
				cur = next
				debug.SetGCPercent(cur)
				if o.Changed != nil {
					o.Changed(cur, rate, live)
				}
			}
		}
	}
}
