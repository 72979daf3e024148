package sandbox

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunQueuesThenRefusesWhenTheQueueIsFull(t *testing.T) {
	s := newTestSandbox(t, Config{Concurrency: 1, QueueLength: 1, PythonPool: -1, JavaScriptPool: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spin := Request{Language: JavaScript, Code: "for (;;) {}", Timeout: time.Minute}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var mu sync.Mutex
	var queuedMsgs []string
	// The first "queued" report is the event: it is sent once a run has
	// found the one slot held (by the other) and counted itself waiting.
	queued := make(chan struct{})
	var queuedOnce sync.Once
	for i := range 2 {
		req := spin
		req.Progress = func(_ time.Duration, msg string) {
			mu.Lock()
			defer mu.Unlock()
			queuedMsgs = append(queuedMsgs, msg)
			if strings.HasPrefix(msg, "queued") {
				queuedOnce.Do(func() { close(queued) })
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Run(ctx, req)
		}()
	}
	<-queued
	if _, err := s.Run(ctx, Request{Language: JavaScript, Code: "1"}); !errors.Is(err, ErrBusy) {
		t.Errorf("third run: %v, want ErrBusy", err)
	}
	cancel()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("run %d: %v, want context.Canceled", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queuedMsgs) == 0 || !strings.HasPrefix(queuedMsgs[0], "queued") {
		t.Errorf("progress while queued: %q", queuedMsgs)
	}
	// The slot and the queue are free again.
	res, err := s.Run(context.Background(), Request{Language: JavaScript, Code: "40+2"})
	if err != nil || string(res.Value) != "42" {
		t.Fatalf("after: %v %+v", err, res)
	}
}

func TestCancellationStopsTheProgram(t *testing.T) {
	s := sharedSandbox(t)
	for _, lang := range []Language{Python, JavaScript} {
		code := map[Language]string{Python: "while True:\n    pass", JavaScript: "for (;;) {}"}[lang]
		t.Run(string(lang), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			_, err := s.Run(ctx, Request{Language: lang, Code: code, Timeout: time.Minute, Progress: func(_ time.Duration, msg string) {
				if strings.HasPrefix(msg, "running") {
					once.Do(cancel)
				}
			}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
		})
	}
}

func TestProgressReportsElapsedTimeWhileRunning(t *testing.T) {
	s := sharedSandbox(t)
	var mu sync.Mutex
	var msgs []string
	var last time.Duration
	res, err := s.Run(context.Background(), Request{Language: JavaScript, Code: "await new Promise(r => setTimeout(r, 2500)); 'done'", Timeout: time.Minute, Progress: func(d time.Duration, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if d < last {
			t.Errorf("elapsed went back: %v after %v", d, last)
		}
		last = d
		msgs = append(msgs, msg)
	}})
	if err != nil || string(res.Value) != `"done"` {
		t.Fatalf("%v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0], "running for") {
		t.Errorf("progress %q, want at least two 'running for' messages", msgs)
	}
}

func TestMissingRuntimeIsUnavailable(t *testing.T) {
	s, err := New(context.Background(), Options{RuntimesDir: t.TempDir(), CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, lang := range []Language{Python, JavaScript} {
		_, err := s.Run(context.Background(), Request{Language: lang, Code: "1"})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "make runtimes") {
			t.Errorf("%s: %v, want ErrUnavailable naming `make runtimes`", lang, err)
		}
	}
}

// procStatus reads a field (in KiB) of /proc/self/status.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("read /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestRSSStaysBoundedDuringConcurrentMemoryBombs runs 8 memory bombs at once
// (4 Python, 4 JavaScript) under a 64 MiB cap and samples the process's RSS:
// with linear memories in their own mappings the growth stays near 8 × the
// cap; wazero's default growth by copying would reach several times that.
func TestRSSStaysBoundedDuringConcurrentMemoryBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("eight concurrent memory bombs, a load test; runs in make test")
	}
	const capMiB = 64
	s := newTestSandbox(t, Config{MemoryLimitMiB: capMiB, Concurrency: 8, PythonPool: 4, JavaScriptPool: 4})
	base := procStatus(t, "VmRSS")
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := procStatus(t, "VmRSS"); r > peak {
				peak = r
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	bombs := []Request{
		{Language: Python, Code: "l = []\nwhile True:\n    l.append(bytearray(4 << 20))"},
		{Language: Python, Code: "x = bytearray(1 << 30)"},
		{Language: Python, Code: "s = 'x'\nwhile True:\n    s += s"},
		{Language: Python, Code: "l = []\nwhile True:\n    l.append('y' * (1 << 20))"},
		{Language: JavaScript, Code: "const a = []; for (;;) a.push(new ArrayBuffer(4 << 20))"},
		{Language: JavaScript, Code: "const a = []; for (;;) a.push(new Array(1 << 16).fill(1.5))"},
		{Language: JavaScript, Code: "let s = 'x'; for (;;) s += s"},
		{Language: JavaScript, Code: "const a = []; for (;;) a.push(new Uint8Array(1 << 20))"},
	}
	var wg sync.WaitGroup
	results := make([]*Result, len(bombs))
	errs := make([]error, len(bombs))
	for i, b := range bombs {
		b.Timeout = time.Minute
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Run(context.Background(), b)
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i, r := range results {
		if errs[i] != nil {
			t.Errorf("bomb %d: %v", i, errs[i])
			continue
		}
		if r.TimedOut || r.ExitCode == 0 {
			t.Errorf("bomb %d (%s): exit %d timed out %v stderr %.200s", i, r.Language, r.ExitCode, r.TimedOut, r.Stderr)
		}
	}
	growth := peak - base
	bound := int64(8*capMiB+256) << 20
	t.Logf("RSS before %d MiB, peak %d MiB, growth %d MiB (bound %d MiB); VmHWM %d MiB", base>>20, peak>>20, growth>>20, bound>>20, procStatus(t, "VmHWM")>>20)
	if growth > bound {
		t.Errorf("RSS grew by %d MiB during 8 bombs capped at %d MiB each, more than %d MiB", growth>>20, capMiB, bound>>20)
	}
	// And the sandbox still serves.
	res, err := s.Run(context.Background(), Request{Language: Python, Code: "print(6*7)", Timeout: time.Minute})
	if err != nil || string(res.Stdout) != "42\n" {
		t.Fatalf("after the bombs: %v %+v", err, res)
	}
}

func TestStatusReportsRuntimesAndWarmPools(t *testing.T) {
	missing, err := New(context.Background(), Options{RuntimesDir: t.TempDir(), CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()
	for _, lang := range []Language{Python, JavaScript} {
		// Wait for the load to end; a missing file ends it at once.
		_ = missing.Ready(context.Background(), lang)
		st := missing.Status()[lang]
		if st.State != "unavailable" || !strings.Contains(st.Error, "make runtimes") || st.Warm != 0 {
			t.Errorf("%s without its runtime: %+v, want unavailable naming `make runtimes`, nothing warm", lang, st)
		}
	}

	s := sharedSandbox(t)
	cfg := s.Config()
	for _, lang := range []Language{Python, JavaScript} {
		// Ready returns once the runtime is compiled and the pool holds its target.
		if err := s.Ready(t.Context(), lang); err != nil {
			t.Fatal(err)
		}
		st := s.Status()[lang]
		budget := int64(cfg.PoolMemoryMiB) << 10 / 2
		if st.State != "ready" || st.Error != "" || st.InstanceKiB <= 0 || st.Most < 1 || int64(st.Most)*st.InstanceKiB > max(budget, st.InstanceKiB) {
			t.Errorf("%s: %+v, want ready with a pool bounded by %d KiB", lang, st, budget)
		}
		if st.Target < cfg.Concurrency && st.Most >= cfg.Concurrency {
			t.Errorf("%s: target %d below the %d run slots", lang, st.Target, cfg.Concurrency)
		}
	}
	if st := s.Status()[Python]; st.Snapshot != "restored" || st.SnapshotMiB <= 0 {
		t.Errorf("python: %+v, want instances restored from a snapshot", st)
	}
	// A run takes a pre-started instance: the pool is short of one until
	// the refill catches up, and Status says so.
	before := s.Status()[JavaScript]
	if _, err := s.Run(context.Background(), Request{Language: JavaScript, Code: "1"}); err != nil {
		t.Fatal(err)
	}
	after := s.Status()[JavaScript]
	if after.Takes != before.Takes+1 || after.DemandPerSec <= 0 {
		t.Errorf("after a run: %+v (before %+v), want one more run and some demand", after, before)
	}
	if err := s.Ready(t.Context(), JavaScript); err != nil { // the pool holds its target again
		t.Fatalf("javascript pool not refilled: %v", err)
	}
}

// TestPoolFollowsDemandWithinItsMemory: back-to-back runs raise the pool's
// target above the idle level, never past what its memory allows, and the
// pool starts instances ahead of them.
//
// The demand is on the pool's clock, which moves 25 ms a run: 40 runs a
// second, whatever this machine makes of them (on the wall clock, a loaded
// machine ran fewer than the 8 a second that raise the target).
func TestPoolFollowsDemandWithinItsMemory(t *testing.T) {
	var elapsed atomic.Int64
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return epoch.Add(time.Duration(elapsed.Load())) }
	s, err := New(context.Background(), Options{Config: Config{PoolMemoryMiB: 16, JavaScriptPool: -1},
		RuntimesDir: runtimesDir(t), CacheDir: testCacheDir, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ready(t, s)
	idle := s.Status()[Python]
	// About 20 runs at 40 a second raise the demand past 8 a second; 200
	// that do not mean the target does not follow it.
	for i := 0; i < 200 && s.Status()[Python].Target <= idle.Target; i++ {
		elapsed.Add(int64(25 * time.Millisecond))
		runPy(t, s, "pass")
	}
	st := s.Status()[Python]
	if st.Target <= idle.Target {
		t.Fatalf("target stayed at %d under back-to-back runs: %+v", idle.Target, st)
	}
	if int64(st.Most)*st.InstanceKiB > 8<<10 && st.Most > 1 {
		t.Errorf("pool may hold %d instances of %d KiB, over its 8 MiB share", st.Most, st.InstanceKiB)
	}
	// How many runs find an instance waiting depends on the machine's
	// speed (a benchmark's business); that the pool refilled ahead of
	// them does not.
	if st.Started == 0 || st.Misses >= st.Takes {
		t.Errorf("the pool started %d instances; %d of %d runs found none waiting", st.Started, st.Misses, st.Takes)
	}
}
