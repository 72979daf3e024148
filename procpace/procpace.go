// Package procpace sets GOMAXPROCS from the load, so that a server that
// answers one call at a time keeps the call on one CPU, and a busy server
// (or one running untrusted code) gets every CPU.
//
// Why: a served MCP call hands its work between half a dozen goroutines
// (the HTTP connection, the SDK's session reader, the tool handler, the
// upstream client's reader...). With more than one P each hand-off can
// wake a thread on the other CPU, often one that sat idle: through
// `toolhost serve` on two CPUs a gateway call measured about 0.1 ms faster
// at GOMAXPROCS=1 (docs/performance.md). Under load one P would halve what
// the server can do, and a run_code program would share its P with every
// other call (it is preempted only where its compiled code checks for its
// deadline, so other calls waited about 16 ms each): so the pacer gives
// every CPU back as soon as either starts.
//
// Busy is decided by the process's CPU time (user and system, as the
// kernel counts it, so compiled WebAssembly counts too), read every
// Interval (every IdleInterval once the process has been idle for a
// while): more than BusyCPU of one CPU is busy; quiet again needs
// QuietFor below QuietCPU with nothing held (Hold).
package procpace

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// Options are the pacer's settings; zero values take the defaults.
type Options struct {
	// Interval is how often the CPU time is read. Default 100 ms.
	Interval time.Duration
	// BusyCPU: more than this fraction of one CPU over an interval is
	// busy. Default 0.5.
	BusyCPU float64
	// QuietCPU and QuietFor: the pacer turns quiet after QuietFor of
	// intervals each under QuietCPU, with no Hold. Defaults 0.25, 2 s.
	QuietCPU float64
	QuietFor time.Duration
	// IdleCPU and IdleInterval: once quiet and under IdleCPU for QuietFor,
	// the CPU time is read every IdleInterval instead, so that an idle
	// server is not woken ten times a second; a burst after such a pause
	// runs on one P until the next reading (Hold still switches at once).
	// Defaults 0.01 (1 % of a CPU), 1 s.
	IdleCPU      float64
	IdleInterval time.Duration
	// Changed, when set, hears every switch: the new GOMAXPROCS and the
	// last interval's CPU use (in CPUs; -1 when a Hold or the end of
	// Run made the switch).
	Changed func(procs int, cpu float64)
}

func (o *Options) defaults() {
	if o.Interval == 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.BusyCPU == 0 {
		o.BusyCPU = 0.5
	}
	if o.QuietCPU == 0 {
		o.QuietCPU = 0.25
	}
	if o.QuietFor == 0 {
		o.QuietFor = 2 * time.Second
	}
	if o.IdleCPU == 0 {
		o.IdleCPU = 0.01
	}
	if o.IdleInterval == 0 {
		o.IdleInterval = time.Second
	}
}

// Pacer switches GOMAXPROCS between 1 and the runtime's default. The zero
// value is not usable; New makes one. Its methods are safe for concurrent
// use, and a nil *Pacer's Hold does nothing.
type Pacer struct {
	o Options

	mu    sync.Mutex
	holds int
	busy  bool
	// quiet is how long the intervals have been quiet in a row.
	quiet time.Duration
	// set changes GOMAXPROCS: busy true restores the runtime's default.
	set func(busy bool)
}

// New makes a pacer; it starts busy (GOMAXPROCS as the runtime set it)
// and changes nothing until Run.
func New(o Options) *Pacer {
	o.defaults()
	return &Pacer{o: o, busy: true, set: setProcs}
}

// setProcs is the real switch.
func setProcs(busy bool) {
	if busy {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(1)
}

// Hold gives Go every CPU until release is called: for untrusted code,
// which must not share one P with every other call. Holds nest.
func (p *Pacer) Hold() (release func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	p.holds++
	p.quiet = 0
	if !p.busy {
		p.switchTo(true, -1)
	}
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.holds--
			p.mu.Unlock()
		})
	}
}

// switchTo changes the setting; p.mu is held.
func (p *Pacer) switchTo(busy bool, cpu float64) {
	p.busy = busy
	p.set(busy)
	if p.o.Changed != nil {
		procs := 1
		if busy {
			procs = runtime.GOMAXPROCS(0)
		}
		p.o.Changed(procs, cpu)
	}
}

// observe takes one interval's CPU use (in CPUs) and switches when the
// rules say so.
func (p *Pacer) observe(cpu float64, interval time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.holds > 0 || cpu > p.o.BusyCPU:
		p.quiet = 0
		if !p.busy {
			p.switchTo(true, cpu)
		}
	case cpu < p.o.QuietCPU:
		p.quiet += interval
		if p.busy && p.quiet >= p.o.QuietFor {
			p.switchTo(false, cpu)
		}
	default:
		p.quiet = 0 // between the two: keep what is set
	}
}

// Run paces until ctx ends, then gives GOMAXPROCS back to the runtime's
// default. On a machine with one CPU, or where the process's CPU time
// cannot be read, it does nothing.
func (p *Pacer) Run(ctx context.Context) {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	prev, ok := cpuTime()
	if !ok {
		return
	}
	defer func() {
		p.mu.Lock()
		if !p.busy {
			p.switchTo(true, -1)
		}
		p.mu.Unlock()
	}()
	t := time.NewTimer(p.o.Interval)
	defer t.Stop()
	last := time.Now()
	var idle time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			cur, _ := cpuTime()
			wall := now.Sub(last)
			cpu := (cur - prev).Seconds() / wall.Seconds()
			p.observe(cpu, wall)
			prev, last = cur, now
			idle = p.idleFor(idle, cpu, wall)
			next := p.o.Interval
			if idle >= p.o.QuietFor {
				next = p.o.IdleInterval
			}
			t.Reset(next)
		}
	}
}

// idleFor is how long the process has been idle (quiet, and under
// IdleCPU) after an interval of cpu.
func (p *Pacer) idleFor(idle time.Duration, cpu float64, wall time.Duration) time.Duration {
	p.mu.Lock()
	busy := p.busy
	p.mu.Unlock()
	if busy || cpu >= p.o.IdleCPU {
		return 0
	}
	return idle + wall
}
